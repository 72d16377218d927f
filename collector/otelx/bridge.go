package otelx

import (
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// ScopeName is the instrumentation scope of every metric the bridge exports (Prometheus does
// not turn it into labels unless its OTLP configuration promotes scope metadata).
const ScopeName = "github.com/stormwatch-go/stormwatch/collector/otelx"

// DefaultRetiredHold is how long, by default, a tripped_since series whose trip has ended is
// still exported, at 0 (see [WithRetiredHold]): Prometheus's default lookback delta.
const DefaultRetiredHold = 5 * time.Minute

// Bridge exports the metric catalog of a registry's primitives through OpenTelemetry: the
// counters and gauges as observable instruments on a MeterProvider ([Bridge.Register]), the
// latency histograms through the reader it is given to as a producer ([Bridge.Produce]). Both
// read the primitives' snapshots when the reader collects: a call through a primitive costs
// nothing more than without OpenTelemetry.
//
// A Bridge is safe for concurrent use; one Bridge may serve several readers and providers.
type Bridge struct {
	reg       *instrument.Registry
	namespace string
	policy    collector.Policy
	explicit  bool
	hold      time.Duration
	clk       clock.Clock

	mu        sync.Mutex
	breakers  map[*breaker.Breaker]*breakerAttrs
	retries   map[*retry.Retry]*retryAttrs
	bulkheads map[*bulkhead.Bulkhead]*bulkheadAttrs
	timeouts  map[*timeout.Timeout]*timeoutAttrs
	fallbacks map[*fallback.Fallback]*fallbackAttrs
	overflow  [][]metric.ObserveOption // by index in catalog.Primitives (the overflow and eviction counters)
	limitMaps                          // limiters and throttles (limit.go)
	hedgeMaps                          // hedges (hedge.go)
}

// Option configures a Bridge.
type Option func(*Bridge) error

// WithNamespace sets the metric name prefix (default catalog.DefaultNamespace, "resilience");
// "" means none. Use the namespace the rules and dashboards were generated for.
func WithNamespace(ns string) Option {
	return func(b *Bridge) error {
		if err := catalog.ValidateNamespace(ns); err != nil {
			return fmt.Errorf("otelx: %w", err)
		}
		b.namespace = ns
		return nil
	}
}

// WithFullDetail exports every label value of every catalog metric from the start, as
// collector.WithFullDetail does (see collector.Policy). The histograms keep the form the bridge
// is configured for (exponential unless [WithExplicitBuckets]).
func WithFullDetail() Option {
	return func(b *Bridge) error {
		b.policy.FullDetail = true
		return nil
	}
}

// WithExplicitBuckets exports the latency histograms as explicit-bucket histograms with the
// catalog's classic bounds (which Prometheus stores as _bucket, _sum and _count series, like
// the Prometheus collector's classic buckets) instead of exponential histograms of scale 2
// (which Prometheus stores as native histograms). Use it for a scraper without native
// histogram ingestion (a Prometheus with its default configuration, VictoriaMetrics); the
// generated dashboards read either form.
func WithExplicitBuckets() Option {
	return func(b *Bridge) error {
		b.explicit = true
		return nil
	}
}

// WithRetiredHold sets how long a circuit breaker's tripped_since series of a trip that has
// ended (the breaker closed, or a new episode began) is still exported, at 0 (default
// [DefaultRetiredHold]; 0 turns the hold off).
//
// A Prometheus scrape ends a series that disappears with a staleness marker; data pushed over
// OTLP has none, so without the hold the last value of the ended trip — its timestamp, labelled
// with its cause — would stay visible to queries for Prometheus's lookback delta (5m by
// default), and `tripped_since > 0` would still find the breaker tripped after it closed. With
// it, the series reads 0 at once and leaves after the hold.
func WithRetiredHold(d time.Duration) Option {
	return func(b *Bridge) error {
		if d < 0 {
			return &catalog.ConfigError{Primitive: "otelx", Field: "RetiredHold", Value: d, Reason: "must not be negative"}
		}
		b.hold = d
		return nil
	}
}

// WithClock sets the clock of the data points' timestamps and of the retired hold (default:
// the wall clock).
func WithClock(c clock.Clock) Option {
	return func(b *Bridge) error {
		if c == nil {
			return &catalog.ConfigError{Primitive: "otelx", Field: "Clock", Reason: "must not be nil"}
		}
		b.clk = c
		return nil
	}
}

// New returns a bridge exporting reg's primitives. Give it to the reader as a producer
// (sdkmetric.WithProducer) and register it on the provider ([Bridge.Register]).
func New(reg *instrument.Registry, opts ...Option) (*Bridge, error) {
	if reg == nil {
		return nil, &catalog.ConfigError{Primitive: "otelx", Field: "Registry", Reason: "must not be nil"}
	}
	b := &Bridge{
		reg:       reg,
		namespace: catalog.DefaultNamespace,
		hold:      DefaultRetiredHold,
		clk:       clock.Real{},
		breakers:  map[*breaker.Breaker]*breakerAttrs{},
		retries:   map[*retry.Retry]*retryAttrs{},
		bulkheads: map[*bulkhead.Bulkhead]*bulkheadAttrs{},
		timeouts:  map[*timeout.Timeout]*timeoutAttrs{},
		fallbacks: map[*fallback.Fallback]*fallbackAttrs{},
		limitMaps: limitMaps{limiters: map[*limit.Limiter]*limitAttrs{}, throttles: map[*throttle.Throttle]*limitAttrs{}},
		hedgeMaps: hedgeMaps{hedges: map[*hedge.Hedge]*hedgeAttrs{}},
	}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("otelx: option %d is nil", i)
		}
		if err := o(b); err != nil {
			return nil, err
		}
	}
	for _, p := range catalog.Primitives {
		b.overflow = append(b.overflow, observeOpts(attribute.String(catalog.LabelPrimitive, string(p))))
	}
	return b, nil
}

// Namespace returns the metric name prefix in use.
func (b *Bridge) Namespace() string { return b.namespace }

// Name returns the OpenTelemetry instrument name of catalog metric m: its full Prometheus
// name, type and unit suffixes included (see the package documentation).
func (b *Bridge) Name(m catalog.Metric) string { return m.FullName(b.namespace) }

// Unit returns the OpenTelemetry unit of catalog metric m: "s" for seconds and timestamps, a
// UCUM annotation ("{call}", "{token}") for counts, "" for ratios and states. None of them makes
// Prometheus's OTLP translation add a suffix the catalog's name does not already have.
func Unit(m catalog.Metric) string {
	switch m.Unit {
	case catalog.UnitSeconds, catalog.UnitTimestamp:
		return "s"
	case catalog.UnitCalls:
		return "{call}"
	case catalog.UnitTokens:
		return "{token}"
	}
	// Ratios: not "1", which the translation turns into a _ratio suffix on gauges.
	return ""
}

// observeOpts returns the observe options of the attribute set kvs: a slice, so that each
// observation passes it as is (no allocation per call).
func observeOpts(kvs ...attribute.KeyValue) []metric.ObserveOption {
	return []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// The attribute sets of one primitive, built when the bridge first sees it.

type breakerAttrs struct {
	start       time.Time
	only        []metric.ObserveOption
	states      [catalog.NumStates][]metric.ObserveOption
	transitions [catalog.NumStates][catalog.NumStates][]metric.ObserveOption
	calls       [catalog.NumCallKinds][]metric.ObserveOption
	causes      [catalog.NumTripCauses][]metric.ObserveOption
	durations   [len(catalog.DurationKinds)]attribute.Set

	// The tripped_since series last observed (its cause; catalog.NumTripCauses: none) and its
	// value, and until when each cause's ended trip is still exported at 0.
	observed bool
	lastAt   catalog.TripCause
	last     float64
	retired  [catalog.NumTripCauses]time.Time
}

func newBreakerAttrs(name string, now time.Time) *breakerAttrs {
	n := attribute.String(catalog.LabelName, name)
	a := &breakerAttrs{start: now, only: observeOpts(n)}
	for _, st := range catalog.States {
		a.states[st] = observeOpts(n, attribute.String(catalog.LabelState, st.String()))
		for _, to := range catalog.States {
			if catalog.CanTransition(st, to) {
				a.transitions[st][to] = observeOpts(n, attribute.String(catalog.LabelFrom, st.String()),
					attribute.String(catalog.LabelTo, to.String()))
			}
		}
	}
	for _, k := range catalog.CallKinds {
		a.calls[k] = observeOpts(n, attribute.String(catalog.LabelKind, k.String()))
	}
	for _, c := range catalog.TripCauses {
		a.causes[c] = observeOpts(n, attribute.String(catalog.LabelCause, c.String()))
	}
	for _, k := range catalog.DurationKinds {
		a.durations[k] = attribute.NewSet(n, attribute.String(catalog.LabelKind, k.String()))
	}
	return a
}

type retryAttrs struct {
	start   time.Time
	only    []metric.ObserveOption
	calls   [catalog.NumRetryKinds][]metric.ObserveOption
	errors  [catalog.NumClasses][]metric.ObserveOption
	backoff [catalog.NumDelaySources]attribute.Set
}

func newRetryAttrs(name string, now time.Time) *retryAttrs {
	n := attribute.String(catalog.LabelName, name)
	a := &retryAttrs{start: now, only: observeOpts(n)}
	for _, k := range catalog.RetryKinds {
		a.calls[k] = observeOpts(n, attribute.String(catalog.LabelKind, k.String()))
	}
	for _, c := range catalog.Classes {
		a.errors[c] = observeOpts(n, attribute.String(catalog.LabelClass, c.String()))
	}
	for _, src := range catalog.DelaySources {
		a.backoff[src] = attribute.NewSet(n, attribute.String(catalog.LabelSource, src.String()))
	}
	return a
}

type bulkheadAttrs struct {
	start time.Time
	only  []metric.ObserveOption
	set   attribute.Set
	calls [catalog.NumAdmissions][]metric.ObserveOption
}

func newBulkheadAttrs(name string, now time.Time) *bulkheadAttrs {
	n := attribute.String(catalog.LabelName, name)
	a := &bulkheadAttrs{start: now, only: observeOpts(n), set: attribute.NewSet(n)}
	for _, k := range catalog.Admissions {
		a.calls[k] = observeOpts(n, attribute.String(catalog.LabelKind, k.String()))
	}
	return a
}

type timeoutAttrs struct {
	calls [catalog.NumTimeoutKinds][]metric.ObserveOption
}

func newTimeoutAttrs(name string) *timeoutAttrs {
	n := attribute.String(catalog.LabelName, name)
	a := &timeoutAttrs{}
	for _, k := range catalog.TimeoutKinds {
		a.calls[k] = observeOpts(n, attribute.String(catalog.LabelKind, k.String()))
	}
	return a
}

type fallbackAttrs struct {
	calls [catalog.NumCauses][]metric.ObserveOption
}

func newFallbackAttrs(name string) *fallbackAttrs {
	n := attribute.String(catalog.LabelName, name)
	a := &fallbackAttrs{}
	for _, c := range catalog.Causes {
		a.calls[c] = observeOpts(n, attribute.String(catalog.LabelCause, c.String()))
	}
	return a
}

// The attribute sets of a primitive, created on first sight. Callers hold b.mu.

// attrsOf returns the attribute set of primitive p in m, made by make on first sight.
func attrsOf[P comparable, A any](m map[P]A, p P, make func() A) A {
	a, ok := m[p]
	if !ok {
		a = make()
		m[p] = a
	}
	return a
}

func (b *Bridge) breakerAttrs(nb instrument.Named[*breaker.Breaker], now time.Time) *breakerAttrs {
	return attrsOf(b.breakers, nb.Value, func() *breakerAttrs { return newBreakerAttrs(nb.Name, now) })
}

func (b *Bridge) retryAttrs(nr instrument.Named[*retry.Retry], now time.Time) *retryAttrs {
	return attrsOf(b.retries, nr.Value, func() *retryAttrs { return newRetryAttrs(nr.Name, now) })
}

func (b *Bridge) bulkheadAttrs(nb instrument.Named[*bulkhead.Bulkhead], now time.Time) *bulkheadAttrs {
	return attrsOf(b.bulkheads, nb.Value, func() *bulkheadAttrs { return newBulkheadAttrs(nb.Name, now) })
}

func (b *Bridge) timeoutAttrs(nt instrument.Named[*timeout.Timeout]) *timeoutAttrs {
	return attrsOf(b.timeouts, nt.Value, func() *timeoutAttrs { return newTimeoutAttrs(nt.Name) })
}

func (b *Bridge) fallbackAttrs(nf instrument.Named[*fallback.Fallback]) *fallbackAttrs {
	return attrsOf(b.fallbacks, nf.Value, func() *fallbackAttrs { return newFallbackAttrs(nf.Name) })
}
