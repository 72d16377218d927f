package catalog

// The adaptive concurrency limiter and the client-side throttle (instrument/limit).
const (
	Limiter  Primitive = "limiter"
	Throttle Primitive = "throttle"
)

// Label names of the limiter and throttle metrics.
const (
	LabelReason = "reason" // why the limiter refused a call
)

// LimitReason says why an adaptive limiter refused a call, the `reason` label of
// resilience_limiter_rejections_total.
type LimitReason uint8

// The limiter's rejection reasons.
const (
	ReasonLimit        LimitReason = iota // the limit was reached and no queue is configured
	ReasonQueueFull                       // the limit was reached and the queue was full
	ReasonQueueTimeout                    // queued for MaxWait without getting a permit
	ReasonDeadline                        // the caller's deadline passed while it was queued
	// NumLimitReasons is the number of rejection reasons.
	NumLimitReasons = 4
)

var limitReasonNames = []string{"limit", "queue_full", "queue_timeout", "deadline"}

// LimitReasons lists every rejection reason.
var LimitReasons = [NumLimitReasons]LimitReason{ReasonLimit, ReasonQueueFull, ReasonQueueTimeout, ReasonDeadline}

// String returns the reason's label value.
func (r LimitReason) String() string { return name(limitReasonNames, int(r), "LimitReason") }

// MarshalText returns the label value.
func (r LimitReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// SampleKind says what an admitted call taught the limiter, the `kind` label of
// resilience_limiter_samples_total.
type SampleKind uint8

// The sample kinds.
const (
	SampleMeasured SampleKind = iota // the call's latency was measured (success or an ordinary error)
	SampleDropped                    // the call timed out or was refused by the dependency: an overload signal
	SampleIgnored                    // the caller left (cancelled); nothing learnt
	// NumSampleKinds is the number of sample kinds.
	NumSampleKinds = 3
)

var sampleKindNames = []string{"measured", "dropped", "ignored"}

// SampleKinds lists every sample kind.
var SampleKinds = [NumSampleKinds]SampleKind{SampleMeasured, SampleDropped, SampleIgnored}

// String returns the kind's label value.
func (k SampleKind) String() string { return name(sampleKindNames, int(k), "SampleKind") }

// MarshalText returns the label value.
func (k SampleKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ThrottleKind is a client-side throttle decision or outcome, the `kind` label of
// resilience_throttle_calls_total.
type ThrottleKind uint8

// The throttle kinds.
const (
	ThrottleAccepted  ThrottleKind = iota // sent, and the dependency accepted it
	ThrottleRefused                       // sent, and the dependency refused it (overloaded, unavailable, timed out)
	ThrottleThrottled                     // not sent: the throttle rejected it locally
	// NumThrottleKinds is the number of throttle kinds.
	NumThrottleKinds = 3
)

var throttleKindNames = []string{"accepted", "refused", "throttled"}

// ThrottleKinds lists every throttle kind.
var ThrottleKinds = [NumThrottleKinds]ThrottleKind{ThrottleAccepted, ThrottleRefused, ThrottleThrottled}

// String returns the kind's label value.
func (k ThrottleKind) String() string { return name(throttleKindNames, int(k), "ThrottleKind") }

// MarshalText returns the label value.
func (k ThrottleKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// The limiter's and the throttle's catalog entries.
var (
	LimiterLimit = Metric{Limiter, "limit", Gauge,
		"Current adaptive concurrency limit.",
		UnitCalls, labels(), nil}
	LimiterMinLimit = Metric{Limiter, "min_limit", Gauge,
		"Configured lower bound of the adaptive concurrency limit.",
		UnitCalls, labels(), nil}
	LimiterInflight = Metric{Limiter, "inflight_calls", Gauge,
		"Calls holding a limiter permit.",
		UnitCalls, labels(), nil}
	LimiterQueued = Metric{Limiter, "queued_calls", Gauge,
		"Callers queued for a limiter permit.",
		UnitCalls, labels(), nil}
	LimiterBaselineLatency = Metric{Limiter, "baseline_latency_seconds", Gauge,
		"The limiter's no-load latency estimate: the lowest window average, raised only from windows its own load cannot explain.",
		UnitSeconds, labels(), nil}
	LimiterSampleLatency = Metric{Limiter, "sample_latency_seconds", Gauge,
		"Average latency of the calls in the limiter's last closed window.",
		UnitSeconds, labels(), nil}
	LimiterCalls = Metric{Limiter, "calls_total", Counter,
		"Limiter admission decisions.",
		UnitCalls, labels(Label{LabelKind, Names(Admissions[:])}), nil}
	LimiterRejections = Metric{Limiter, "rejections_total", Counter,
		"Calls rejected by the limiter, by reason.",
		UnitCalls, labels(Label{LabelReason, Names(LimitReasons[:])}), nil}
	LimiterSamples = Metric{Limiter, "samples_total", Counter,
		"Admitted calls by what they taught the limiter: a latency, an overload signal (dropped) or nothing (ignored).",
		UnitCalls, labels(Label{LabelKind, Names(SampleKinds[:])}), nil}

	ThrottleProbability = Metric{Throttle, "rejection_probability", Gauge,
		"Client-side throttle: probability (0..1) with which a new request is shed, max(0, (requests − K·accepts)/(requests + 1)) over the window.",
		UnitRatio, labels(), nil}
	ThrottleCalls = Metric{Throttle, "calls_total", Counter,
		"Client-side throttle: requests accepted or refused by the dependency, and requests shed locally (throttled).",
		UnitCalls, labels(Label{LabelKind, Names(ThrottleKinds[:])}), nil}
)

// limitMetrics lists the limiter's and the throttle's entries in catalog order.
func limitMetrics() []Metric {
	return []Metric{
		LimiterLimit, LimiterMinLimit, LimiterInflight, LimiterQueued, LimiterBaselineLatency,
		LimiterSampleLatency, LimiterCalls, LimiterRejections, LimiterSamples,
		ThrottleProbability, ThrottleCalls,
	}
}
