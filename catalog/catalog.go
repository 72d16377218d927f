// Package catalog is the metric catalog of stormwatch: the one place where metric names, help
// texts, types, label names and the closed sets of label values are written down.
//
// The collector exports exactly these metrics; the rules and dashboards generators and the
// documentation read them from here, so a query can never name a metric that is not exported.
// The package imports nothing but the standard library.
package catalog

import (
	"fmt"
	"strings"
)

// DefaultNamespace is the metric name prefix used when none is configured.
const DefaultNamespace = "resilience"

// Type is the Prometheus metric type of a catalog entry.
type Type int

// Metric types.
const (
	Counter Type = iota + 1
	Gauge
	Histogram
)

// String returns the type as written in the Prometheus exposition format.
func (t Type) String() string {
	switch t {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Primitive names the kind of resilience primitive a metric belongs to. It is the metric's
// subsystem (the middle part of its name) and the value of the overflow counter's `primitive`
// label.
type Primitive string

// The primitives.
const (
	CircuitBreaker Primitive = "circuitbreaker"
	Retry          Primitive = "retry"
	Bulkhead       Primitive = "bulkhead"
	Timeout        Primitive = "timeout"
	Fallback       Primitive = "fallback"
	Registry       Primitive = "registry"
)

// Primitives lists the primitive kinds that are handed out by name through a registry, in
// catalog order. These are the values of the overflow counter's `primitive` label.
var Primitives = []Primitive{CircuitBreaker, Retry, Bulkhead, Timeout, Fallback, Limiter, Throttle, Hedge}

// Label names.
const (
	LabelName      = "name"      // the primitive's name, usually the dependency
	LabelState     = "state"     // breaker state
	LabelFrom      = "from"      // transition source state
	LabelTo        = "to"        // transition target state
	LabelKind      = "kind"      // call outcome kind
	LabelClass     = "class"     // failure class (see ErrorClasses)
	LabelSource    = "source"    // what set a retry delay
	LabelCause     = "cause"     // why a fallback ran; why a circuit breaker tripped
	LabelPrimitive = "primitive" // primitive kind, on the overflow counter
)

// OverflowName is the `name` label value of the shared instance that a registry hands out once its
// cardinality guard refuses new names.
const OverflowName = "_overflow"

// Label describes one label of a metric. Values is the closed set of values it can take; nil
// means the set is open (the `name` label).
type Label struct {
	Name   string
	Values []string
}

// Unit says what a metric's value measures, for dashboards and docs.
type Unit string

// Units.
const (
	UnitNone      Unit = ""
	UnitSeconds   Unit = "seconds"
	UnitRatio     Unit = "ratio"     // 0..1
	UnitTimestamp Unit = "timestamp" // Unix seconds
	UnitCalls     Unit = "calls"
	UnitTokens    Unit = "tokens"
)

// Metric is one catalog entry.
type Metric struct {
	// Primitive is the subsystem: the metric's full name is namespace_primitive_Name.
	Primitive Primitive
	// Name is the metric's own part of the name, including any _total or _seconds suffix.
	Name string
	Type Type
	Help string
	Unit Unit
	// Labels are the metric's labels in exposition order; every metric but the registry's
	// overflow counter starts with the `name` label.
	Labels []Label
	// Buckets are the default histogram buckets (histograms only).
	Buckets []float64
}

// FullName returns the metric's full name under namespace; an empty namespace means no prefix.
func (m Metric) FullName(namespace string) string {
	if namespace == "" {
		return string(m.Primitive) + "_" + m.Name
	}
	return namespace + "_" + string(m.Primitive) + "_" + m.Name
}

// LabelNames returns the names of the metric's labels, in order.
func (m Metric) LabelNames() []string {
	out := make([]string, len(m.Labels))
	for i, l := range m.Labels {
		out[i] = l.Name
	}
	return out
}

// Label returns the label called name and whether the metric has it.
func (m Metric) Label(name string) (Label, bool) {
	for _, l := range m.Labels {
		if l.Name == name {
			return l, true
		}
	}
	return Label{}, false
}

// SeriesNames returns the names under which Prometheus stores the metric: the full name for
// counters and gauges; for histograms the full name (a native histogram is one series of that
// name) and the _bucket, _sum and _count series of classic buckets.
func (m Metric) SeriesNames(namespace string) []string {
	n := m.FullName(namespace)
	if m.Type == Histogram {
		return []string{n, n + "_bucket", n + "_sum", n + "_count"}
	}
	return []string{n}
}

var nameLabel = Label{Name: LabelName}

func labels(extra ...Label) []Label { return append([]Label{nameLabel}, extra...) }

// Latency distributions (breaker call durations, retry delays, bulkhead waits) are recorded
// once, in the exponential buckets of a Prometheus native histogram, and exported as a native
// histogram, as classic buckets, or both (the collector decides). Classic bucket bounds are powers
// of two, which are bucket boundaries at every native schema, so the classic counts are exact
// sums of native buckets and the two views never disagree.
const (
	// NativeSchema is the native histogram schema: each bucket's upper bound is 2^(1/4) ≈ 1.19
	// times the previous one (at most ±9% error on a quantile).
	NativeSchema = 2
	// NativeMinExponent sets the zero bucket: observations of at most 2^-17 s (≈ 7.6 µs) count
	// in it.
	NativeMinExponent = -17
	// NativeMaxExponent sets the highest bucket: observations above 2^7 s (128 s) count in the
	// bucket that ends there (their sum stays exact).
	NativeMaxExponent = 7
)

// NativeZeroThreshold is the upper bound, in seconds, of the native histograms' zero bucket.
var NativeZeroThreshold = pow2(NativeMinExponent)

// The exponents of the first and last duration bounds, and the number of duration bounds (for
// arrays sized by it).
const (
	durationMinExponent, durationMaxExponent = -10, 5
	NumDurationBuckets                       = durationMaxExponent - durationMinExponent + 1
)

// Classic histogram bounds, in seconds: powers of two (see NativeSchema).
var (
	// DurationBuckets suit outbound call latencies: ≈ 1 ms to 32 s.
	DurationBuckets = powersOfTwo(durationMinExponent, durationMaxExponent)
	// BackoffBuckets suit retry delays: ≈ 8 ms to 64 s (above the Retry-After cap).
	BackoffBuckets = powersOfTwo(-7, 6)
	// WaitBuckets suit bulkhead queueing: ≈ 1 ms to 8 s.
	WaitBuckets = powersOfTwo(-10, 3)
)

// The few classic bounds a collector exports by default next to the native buckets, so that a
// Prometheus without native histogram ingestion (the default until Prometheus 4) and
// VictoriaMetrics store a call latency distribution they can take quantiles of. Only call
// durations carry them: they are what the latency panels read, and each bound is one more
// series per breaker as a default Prometheus stores them. Bulkhead waits and retry delays
// have none: their panels read the mean from _sum and _count, which every store has (a
// histogram without classic bounds is stored there as its +Inf bucket, _sum and _count).
// No generated alert or SLO reads a bucket: slow calls are counted by the breaker itself
// against its own threshold, so no threshold needs to be a bound.
var (
	// DurationDefaultBuckets: every third bound of the full layout from ≈ 3.9 ms (2^-8 s) to
	// 16 s — 3.9 ms, 31 ms, 250 ms, 2 s, 16 s: 5 bounds a factor 8 apart, so a quantile
	// interpolated inside a bucket is in the right order of magnitude over the range outbound
	// calls take (native histograms: within 9%).
	DurationDefaultBuckets = everyNth(powersOfTwo(-8, 4), 3)
)

// DefaultBuckets returns the classic bounds a collector exports by default on histogram m
// beside its native buckets (nil: none; m.Buckets is the full layout).
func DefaultBuckets(m Metric) []float64 {
	if m.Primitive == BreakerCallDuration.Primitive && m.Name == BreakerCallDuration.Name {
		return DurationDefaultBuckets
	}
	return nil
}

// everyNth returns b[0], b[n], b[2n], ….
func everyNth(b []float64, n int) []float64 {
	out := make([]float64, 0, (len(b)+n-1)/n)
	for i := 0; i < len(b); i += n {
		out = append(out, b[i])
	}
	return out
}

func pow2(e int) float64 {
	v := 1.0
	for ; e > 0; e-- {
		v *= 2
	}
	for ; e < 0; e++ {
		v /= 2
	}
	return v
}

// powersOfTwo returns 2^from, 2^(from+1), …, 2^to.
func powersOfTwo(from, to int) []float64 {
	out := make([]float64, 0, to-from+1)
	for e := from; e <= to; e++ {
		out = append(out, pow2(e))
	}
	return out
}

// The catalog entries. Their order is the exposition and documentation order.
var (
	BreakerState = Metric{CircuitBreaker, "state", Gauge,
		"Effective circuit breaker state: 1 for the current state, 0 for the others.",
		UnitNone, labels(Label{LabelState, Names(States[:])}), nil}
	BreakerTransitions = Metric{CircuitBreaker, "transitions_total", Counter,
		"Committed circuit breaker state transitions; trips are to=\"open\".",
		UnitNone, labels(Label{LabelFrom, Names(States[:])}, Label{LabelTo, Names(States[:])}), nil}
	// BreakerTrippedSince carries the cause of the trip that began the episode while it is
	// not 0; while closed (0) the cause is empty, which Prometheus stores as no label.
	BreakerTrippedSince = Metric{CircuitBreaker, "tripped_since_timestamp_seconds", Gauge,
		"Unix time of the trip that began the current not-closed episode, labelled with its cause; 0 (and no cause) while closed.",
		UnitTimestamp, labels(Label{LabelCause, Names(TripCauses[:])}), nil}
	BreakerCalls = Metric{CircuitBreaker, "calls_total", Counter,
		"Calls permitted by the circuit breaker, by outcome.",
		UnitCalls, labels(Label{LabelKind, Names(CallKinds[:])}), nil}
	BreakerNotPermitted = Metric{CircuitBreaker, "not_permitted_calls_total", Counter,
		"Calls rejected by the circuit breaker.",
		UnitCalls, labels(), nil}
	BreakerCallDuration = Metric{CircuitBreaker, "call_duration_seconds", Histogram,
		"Duration of calls permitted by the circuit breaker.",
		UnitSeconds, labels(Label{LabelKind, Names(DurationKinds[:])}), DurationBuckets}
	BreakerFailureRate = Metric{CircuitBreaker, "failure_rate", Gauge,
		"Failure ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.",
		UnitRatio, labels(), nil}
	BreakerSlowCallRate = Metric{CircuitBreaker, "slow_call_rate", Gauge,
		"Slow-call ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.",
		UnitRatio, labels(), nil}
	BreakerFailureRateThreshold = Metric{CircuitBreaker, "failure_rate_threshold", Gauge,
		"Configured failure ratio at which the circuit breaker trips.",
		UnitRatio, labels(), nil}
	BreakerSlowCallRateThreshold = Metric{CircuitBreaker, "slow_call_rate_threshold", Gauge,
		"Configured slow-call ratio at which the circuit breaker trips.",
		UnitRatio, labels(), nil}
	BreakerOpenDuration = Metric{CircuitBreaker, "open_duration_seconds", Gauge,
		"Configured base duration of the open state.",
		UnitSeconds, labels(), nil}

	RetryCalls = Metric{Retry, "calls_total", Counter,
		"Logical calls through the retry, by final outcome.",
		UnitCalls, labels(Label{LabelKind, Names(RetryKinds[:])}), nil}
	RetryAttempts = Metric{Retry, "attempts_total", Counter,
		"Retries performed: attempts after the first.",
		UnitCalls, labels(), nil}
	RetryErrors = Metric{Retry, "errors_total", Counter,
		"Failed attempts, by failure class.",
		UnitCalls, labels(Label{LabelClass, Names(Classes[:])}), nil}
	RetryBackoff = Metric{Retry, "backoff_seconds", Histogram,
		"Delays actually waited before retries, by what set the delay.",
		UnitSeconds, labels(Label{LabelSource, Names(DelaySources[:])}), BackoffBuckets}
	RetryBudgetTokens = Metric{Retry, "budget_tokens", Gauge,
		"Retry budget tokens available.",
		UnitTokens, labels(), nil}
	RetryBudgetDenied = Metric{Retry, "budget_denied_total", Counter,
		"Retries refused by the retry budget.",
		UnitCalls, labels(), nil}

	BulkheadMaxConcurrent = Metric{Bulkhead, "max_concurrent_calls", Gauge,
		"Configured bulkhead permits.",
		UnitCalls, labels(), nil}
	BulkheadInflight = Metric{Bulkhead, "inflight_calls", Gauge,
		"Bulkhead permits in use.",
		UnitCalls, labels(), nil}
	BulkheadWaiting = Metric{Bulkhead, "waiting_calls", Gauge,
		"Callers waiting for a bulkhead permit.",
		UnitCalls, labels(), nil}
	BulkheadCalls = Metric{Bulkhead, "calls_total", Counter,
		"Bulkhead admission decisions.",
		UnitCalls, labels(Label{LabelKind, Names(Admissions[:])}), nil}
	BulkheadWaitDuration = Metric{Bulkhead, "wait_duration_seconds", Histogram,
		"Time waited for a bulkhead permit.",
		UnitSeconds, labels(), WaitBuckets}

	TimeoutCalls = Metric{Timeout, "calls_total", Counter,
		"Attempts run under a time limit, by outcome.",
		UnitCalls, labels(Label{LabelKind, Names(TimeoutKinds[:])}), nil}

	FallbackCalls = Metric{Fallback, "calls_total", Counter,
		"Fallback invocations, by cause.",
		UnitCalls, labels(Label{LabelCause, Names(Causes[:])}), nil}

	RegistryOverflow = Metric{Registry, "overflow_total", Counter,
		"Names refused by the registry's cardinality guard; their calls share the _overflow instance.",
		UnitNone, []Label{{LabelPrimitive, primitiveStrings()}}, nil}

	RegistryEvicted = Metric{Registry, "evicted_total", Counter,
		"Primitives the registry's idle eviction removed; their series are gone from the next scrape.",
		UnitNone, []Label{{LabelPrimitive, primitiveStrings()}}, nil}
)

func primitiveStrings() []string {
	out := make([]string, len(Primitives))
	for i, p := range Primitives {
		out[i] = string(p)
	}
	return out
}

// All returns every catalog entry in catalog order. The slice is a copy.
func All() []Metric {
	return append([]Metric{
		BreakerState, BreakerTransitions, BreakerTrippedSince, BreakerCalls, BreakerNotPermitted,
		BreakerCallDuration, BreakerFailureRate, BreakerSlowCallRate, BreakerFailureRateThreshold,
		BreakerSlowCallRateThreshold, BreakerOpenDuration,
		RetryCalls, RetryAttempts, RetryErrors, RetryBackoff, RetryBudgetTokens, RetryBudgetDenied,
		BulkheadMaxConcurrent, BulkheadInflight, BulkheadWaiting, BulkheadCalls, BulkheadWaitDuration,
		TimeoutCalls,
		FallbackCalls,
		RegistryOverflow,
		RegistryEvicted,
	}, append(limitMetrics(), hedgeMetrics()...)...)
}

// ByPrimitive returns the catalog entries of one primitive kind, in catalog order.
func ByPrimitive(p Primitive) []Metric {
	var out []Metric
	for _, m := range All() {
		if m.Primitive == p {
			out = append(out, m)
		}
	}
	return out
}

// Lookup finds the catalog entry that exports the series called series under namespace. Series
// names of histograms (_bucket, _sum, _count) resolve to their histogram.
func Lookup(namespace, series string) (Metric, bool) {
	for _, m := range All() {
		for _, s := range m.SeriesNames(namespace) {
			if s == series {
				return m, true
			}
		}
	}
	return Metric{}, false
}

// MaxNamespaceLen caps the length of a namespace, in bytes.
const MaxNamespaceLen = 64

// ValidateNamespace reports whether ns can prefix metric names: empty, or a letter or underscore
// followed by letters, digits and underscores, without a trailing underscore, at most
// MaxNamespaceLen bytes. The error is a *ConfigError with Field "namespace" (Primitive empty:
// the caller knows what it was configuring).
func ValidateNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	bad := func(format string, args ...any) error {
		return &ConfigError{Field: "namespace", Value: ns, Reason: fmt.Sprintf(format, args...)}
	}
	if len(ns) > MaxNamespaceLen {
		return bad("%d bytes, at most %d allowed", len(ns), MaxNamespaceLen)
	}
	for i, r := range ns {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return bad("invalid character %q at offset %d (want [a-zA-Z_][a-zA-Z0-9_]*)", r, i)
		}
	}
	if strings.HasSuffix(ns, "_") {
		return bad("must not end with an underscore")
	}
	return nil
}
