package catalog

import "strconv"

// This file holds the closed sets of label values. Each set is a small integer type whose
// String method returns the label value as exported, so that primitives can count in arrays
// indexed by the value (no map, no hashing on the hot path) and the collector, the generators,
// the logs and the docs all spell the value the same way.
//
// Every set has a Num… constant (its size) and an array listing its values in exposition order.
// Ranging over the array allocates nothing.

func name(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}

// State is a circuit breaker state, the value of the `state`, `from` and `to` labels.
type State uint8

// The breaker states, in exposition order.
const (
	// StateClosed permits calls and counts their outcomes.
	StateClosed State = iota
	// StateOpen rejects every call until the open period has elapsed.
	StateOpen
	// StateHalfOpen admits a few probes and rejects the rest until the probes decide.
	StateHalfOpen
	// StateForcedOpen rejects every call until an operator changes the state.
	StateForcedOpen
	// StateDisabled permits every call and records nothing.
	StateDisabled
	// StateMetricsOnly permits every call and records outcomes, but never trips (shadow mode).
	StateMetricsOnly
	// NumStates is the number of breaker states.
	NumStates = 6
)

var stateNames = []string{"closed", "open", "half_open", "forced_open", "disabled", "metrics_only"}

// States lists every breaker state in exposition order.
var States = [NumStates]State{StateClosed, StateOpen, StateHalfOpen, StateForcedOpen, StateDisabled, StateMetricsOnly}

// String returns the state's label value.
func (s State) String() string { return name(stateNames, int(s), "State") }

// CallKind is the outcome of a call a circuit breaker permitted, the `kind` label of
// resilience_circuitbreaker_calls_total.
type CallKind uint8

// The breaker call kinds, in exposition order.
const (
	CallSuccessful     CallKind = iota // succeeded in time
	CallFailed                         // failed in time
	CallSlowSuccessful                 // succeeded, slower than the slow-call duration
	CallSlowFailed                     // failed, slower than the slow-call duration
	CallIgnored                        // neither success nor failure (business error, cancellation)
	// NumCallKinds is the number of breaker call kinds.
	NumCallKinds = 5
)

var callKindNames = []string{"successful", "failed", "slow_successful", "slow_failed", "ignored"}

// CallKinds lists every breaker call kind in exposition order.
var CallKinds = [NumCallKinds]CallKind{CallSuccessful, CallFailed, CallSlowSuccessful, CallSlowFailed, CallIgnored}

// DurationKinds are the `kind` values of the breaker's call duration histogram: slow calls are
// observed under successful or failed.
var DurationKinds = [2]CallKind{CallSuccessful, CallFailed}

// String returns the kind's label value.
func (k CallKind) String() string { return name(callKindNames, int(k), "CallKind") }

// TripCause says why a circuit breaker opened. Breakers count trips by cause and transition
// events carry it, so that a breaker that opened on latency is visible as such.
type TripCause uint8

// The trip causes, in exposition order.
const (
	// TripFailureRate: the window's failure rate reached its threshold.
	TripFailureRate TripCause = iota
	// TripSlowCallRate: the window's slow-call rate reached its threshold (or, with a
	// consecutive window, a run of slow calls reached its length).
	TripSlowCallRate
	// TripConsecutiveFailures: a run of consecutive failures reached the window's length.
	TripConsecutiveFailures
	// TripProbeFailed: half-open probes failed (or were slow) and reopened the breaker.
	TripProbeFailed
	// TripMaxHalfOpenDuration: the probes had not concluded within the half-open limit.
	TripMaxHalfOpenDuration
	// TripForced: an operator forced the breaker open.
	TripForced
	// NumTripCauses is the number of trip causes.
	NumTripCauses = 6
)

var tripCauseNames = []string{"failure_rate", "slow_call_rate", "consecutive_failures", "probe_failed", "max_half_open_duration", "forced"}

// TripCauses lists every trip cause in exposition order.
var TripCauses = [NumTripCauses]TripCause{TripFailureRate, TripSlowCallRate, TripConsecutiveFailures, TripProbeFailed, TripMaxHalfOpenDuration, TripForced}

// String returns the cause's label value.
func (c TripCause) String() string { return name(tripCauseNames, int(c), "TripCause") }

// RetryKind is the final outcome of a logical call through a retry, the `kind` label of
// resilience_retry_calls_total.
type RetryKind uint8

// The logical-call kinds, in exposition order.
const (
	RetrySuccessfulWithoutRetry RetryKind = iota // the first attempt succeeded
	RetrySuccessfulWithRetry                     // a later attempt succeeded
	RetryFailedWithoutRetry                      // failed after one attempt
	RetryFailedWithRetry                         // failed after several attempts
	RetryAborted                                 // the caller cancelled
	// NumRetryKinds is the number of logical-call kinds.
	NumRetryKinds = 5
)

var retryKindNames = []string{"successful_without_retry", "successful_with_retry", "failed_without_retry", "failed_with_retry", "aborted"}

// RetryKinds lists every logical-call kind in exposition order.
var RetryKinds = [NumRetryKinds]RetryKind{RetrySuccessfulWithoutRetry, RetrySuccessfulWithRetry, RetryFailedWithoutRetry, RetryFailedWithRetry, RetryAborted}

// String returns the kind's label value.
func (k RetryKind) String() string { return name(retryKindNames, int(k), "RetryKind") }

// Outcome is a retry decision, the `outcome` field of retry log records. Outcomes share their
// words with the metrics (aborted, budget_exhausted) so that logs and metrics join.
type Outcome uint8

// The retry decision outcomes, in documentation order.
const (
	OutcomeRetrying        Outcome = iota // another attempt follows after the delay
	OutcomeSucceeded                      // an attempt after the first succeeded
	OutcomeGaveUp                         // not retryable, attempts exhausted, or no time left
	OutcomeAborted                        // the caller cancelled
	OutcomeBudgetExhausted                // the retry budget refused the retry
	// NumOutcomes is the number of retry decision outcomes.
	NumOutcomes = 5
)

var outcomeNames = []string{"retrying", "succeeded", "gave_up", "aborted", "budget_exhausted"}

// Outcomes lists every retry decision outcome.
var Outcomes = [NumOutcomes]Outcome{OutcomeRetrying, OutcomeSucceeded, OutcomeGaveUp, OutcomeAborted, OutcomeBudgetExhausted}

// String returns the outcome's log value.
func (o Outcome) String() string { return name(outcomeNames, int(o), "Outcome") }

// Class is a failure class: the `class` label of resilience_retry_errors_total and the
// `error_class` field of retry log records. The zero value, [ClassNone], means "no failure" and
// is not a label value.
type Class uint8

// The failure classes. ClassNone is not part of the closed set [Classes].
const (
	ClassNone                  Class = iota // no failure: the call succeeded
	ClassHTTP4xx                            // client errors other than 401, 403, 408, 429
	ClassHTTPAuth                           // 401 and 403
	ClassHTTP408                            // 408 Request Timeout
	ClassHTTP429                            // 429 Too Many Requests
	ClassHTTP5xx                            // 500, 502, 503, 504 and other 5xx
	ClassHTTP5xxPermanent                   // 501 and 505
	ClassConnRefused                        // connection refused
	ClassConnReset                          // connection reset or dropped
	ClassDNS                                // name resolution failed
	ClassTLSCert                            // the peer's certificate was not accepted
	ClassTLS                                // other TLS failures
	ClassTimeout                            // timed out after the request was sent
	ClassCanceled                           // the caller cancelled
	ClassRejected                           // refused by stormwatch itself (breaker open, bulkhead full)
	ClassGRPCUnavailable                    // gRPC UNAVAILABLE
	ClassGRPCResourceExhausted              // gRPC RESOURCE_EXHAUSTED
	ClassGRPCDeadline                       // gRPC DEADLINE_EXCEEDED
	ClassGRPCPermanent                      // gRPC codes that are never retried (INVALID_ARGUMENT, NOT_FOUND, …)
	ClassError                              // any other error
	// NumClasses is the size of arrays indexed by Class (ClassNone included).
	NumClasses = 20
)

var classNames = []string{"", "http_4xx", "http_auth", "http_408", "http_429", "http_5xx", "http_5xx_permanent",
	"conn_refused", "conn_reset", "dns", "tls_cert", "tls", "timeout", "canceled", "rejected",
	"grpc_unavailable", "grpc_resource_exhausted", "grpc_deadline", "grpc_permanent", "error"}

// Classes lists the closed set of failure classes in exposition order (ClassNone excluded).
var Classes = [NumClasses - 1]Class{
	ClassHTTP4xx, ClassHTTPAuth, ClassHTTP408, ClassHTTP429, ClassHTTP5xx, ClassHTTP5xxPermanent,
	ClassConnRefused, ClassConnReset, ClassDNS, ClassTLSCert, ClassTLS, ClassTimeout,
	ClassCanceled, ClassRejected,
	ClassGRPCUnavailable, ClassGRPCResourceExhausted, ClassGRPCDeadline, ClassGRPCPermanent,
	ClassError,
}

// String returns the class's label value; "" for ClassNone.
func (c Class) String() string { return name(classNames, int(c), "Class") }

// Valid reports whether c is one of [Classes].
func (c Class) Valid() bool { return c > ClassNone && c < NumClasses }

// DelaySource says what set a retry delay: the `source` label of resilience_retry_backoff_seconds
// and the `delay_source` field of retry log records.
type DelaySource uint8

// The delay sources.
const (
	SourceBackoff    DelaySource = iota // the backoff strategy
	SourceRetryAfter                    // the server's Retry-After (or gRPC pushback)
	// NumDelaySources is the number of delay sources.
	NumDelaySources = 2
)

var delaySourceNames = []string{"backoff", "retry_after"}

// DelaySources lists every delay source.
var DelaySources = [NumDelaySources]DelaySource{SourceBackoff, SourceRetryAfter}

// String returns the source's label value.
func (s DelaySource) String() string { return name(delaySourceNames, int(s), "DelaySource") }

// Admission is a bulkhead admission decision, the `kind` label of resilience_bulkhead_calls_total.
type Admission uint8

// The admission decisions.
const (
	AdmissionPermitted Admission = iota // a permit was granted (at once or after waiting)
	AdmissionRejected                   // no permit within MaxWait (or before the caller's deadline)
	AdmissionAborted                    // the caller cancelled while waiting: not a rejection
	// NumAdmissions is the number of admission decisions.
	NumAdmissions = 3
)

var admissionNames = []string{"permitted", "rejected", "aborted"}

// Admissions lists every admission decision.
var Admissions = [NumAdmissions]Admission{AdmissionPermitted, AdmissionRejected, AdmissionAborted}

// String returns the decision's label value.
func (a Admission) String() string { return name(admissionNames, int(a), "Admission") }

// TimeoutKind is the outcome of an attempt under a time limit, the `kind` label of
// resilience_timeout_calls_total.
type TimeoutKind uint8

// The timeout outcomes.
const (
	TimeoutSuccessful TimeoutKind = iota // finished in time without error
	TimeoutFailed                        // finished in time with an error (or the caller's deadline ended it)
	TimeoutTimedOut                      // stopped by its own time limit
	TimeoutAborted                       // the caller cancelled it: never a failure
	// NumTimeoutKinds is the number of timeout outcomes.
	NumTimeoutKinds = 4
)

var timeoutKindNames = []string{"successful", "failed", "timed_out", "aborted"}

// TimeoutKinds lists every timeout outcome.
var TimeoutKinds = [NumTimeoutKinds]TimeoutKind{TimeoutSuccessful, TimeoutFailed, TimeoutTimedOut, TimeoutAborted}

// String returns the outcome's label value.
func (k TimeoutKind) String() string { return name(timeoutKindNames, int(k), "TimeoutKind") }

// Cause says why a fallback ran, the `cause` label of resilience_fallback_calls_total.
type Cause uint8

// The fallback causes.
const (
	CauseCircuitOpen      Cause = iota // the circuit breaker refused the call
	CauseBulkheadFull                  // the bulkhead refused the call
	CauseTimeout                       // the attempt's time limit fired
	CauseRetriesExhausted              // the retry gave up or its budget refused a retry
	CauseError                         // any other failure
	// NumCauses is the number of fallback causes.
	NumCauses = 5
)

var causeNames = []string{"circuit_open", "bulkhead_full", "timeout", "retries_exhausted", "error"}

// Causes lists every fallback cause.
var Causes = [NumCauses]Cause{CauseCircuitOpen, CauseBulkheadFull, CauseTimeout, CauseRetriesExhausted, CauseError}

// String returns the cause's label value.
func (c Cause) String() string { return name(causeNames, int(c), "Cause") }

// The closed-set types encode as their label value in JSON, YAML and text formats (and so in
// structured logs), never as numbers.

// MarshalText returns the label value.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalText returns the label value.
func (k CallKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MarshalText returns the label value.
func (c TripCause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// MarshalText returns the label value.
func (k RetryKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MarshalText returns the label value.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// MarshalText returns the label value.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// MarshalText returns the label value.
func (s DelaySource) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalText returns the label value.
func (a Admission) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// MarshalText returns the label value.
func (k TimeoutKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MarshalText returns the label value.
func (c Cause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Names returns the label values of vs, in order: catalog.Names(catalog.States[:]).
func Names[T interface{ String() string }](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}
