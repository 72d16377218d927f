package collector

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Policy decides which series of the catalog a primitive exports, given its snapshot: the
// default exposition (what the generated rules and dashboards read, rare label values once they
// occur; see the package documentation) or, with FullDetail, every label value from the start.
//
// The Collector applies it at every scrape. Other exporters of the catalog — the OpenTelemetry
// bridge (module collector/otelx) — apply the same policy, so that one history yields the same
// series whichever way it is exported. The zero value is the default policy.
//
// The series a policy never drops are not in its answers: for a breaker,
// not_permitted_calls_total, failure_rate and tripped_since_timestamp_seconds; for a retry,
// attempts_total, budget_tokens and budget_denied_total; for a bulkhead, max_concurrent_calls,
// inflight_calls and the wait histogram; every cause of a fallback; the registry's overflow
// counter for every primitive kind.
type Policy struct {
	// FullDetail exports every label value of every catalog metric from the start (see
	// [WithFullDetail]).
	FullDetail bool
}

// BreakerSeries is the set of a circuit breaker's series that a [Policy] exports for one
// snapshot, by the catalog values of their labels.
type BreakerSeries struct {
	// States are the `state` values of resilience_circuitbreaker_state.
	States [catalog.NumStates]bool
	// Transitions are the (from, to) pairs of resilience_circuitbreaker_transitions_total:
	// Transitions[from][to]. Only pairs that catalog.CanTransition allows are ever set.
	Transitions [catalog.NumStates][catalog.NumStates]bool
	// Calls are the `kind` values of resilience_circuitbreaker_calls_total.
	Calls [catalog.NumCallKinds]bool
	// Durations are the `kind` values of resilience_circuitbreaker_call_duration_seconds,
	// indexed like breaker.Snapshot.Durations (by the values of catalog.DurationKinds).
	Durations [len(catalog.DurationKinds)]bool
	// The gauges that only some breakers export.
	SlowCallRate, SlowCallRateThreshold, FailureRateThreshold, OpenDuration bool
}

// Breaker returns the series exported for a breaker whose snapshot is sn.
//
// By default: the closed, open and half_open states, and the others once the breaker has been
// in them (its current state, or a committed transition into it); the transitions to open
// from 0, the other pairs once counted; calls of kind successful and failed (slow_successful and
// slow_failed too with slow-call detection on), ignored once counted; the slow-call rate and
// its threshold with slow-call detection on; the duration of successful calls while the
// breaker records durations. With FullDetail: every state, every transition
// catalog.CanTransition allows, every call kind, both duration kinds (while durations are
// recorded) and every configuration gauge.
func (p Policy) Breaker(sn *breaker.Snapshot) BreakerSeries {
	var s BreakerSeries
	slowOn := sn.SlowCallDuration > 0
	for _, from := range catalog.States {
		for _, to := range catalog.States {
			if catalog.CanTransition(from, to) {
				n := sn.Transitions[from][to]
				s.Transitions[from][to] = p.FullDetail || to == catalog.StateOpen || n > 0
				if n > 0 {
					s.States[to] = true // visited
				}
			}
		}
	}
	s.States[sn.State] = true
	for _, st := range catalog.States {
		s.States[st] = s.States[st] || p.FullDetail || st <= catalog.StateHalfOpen
	}
	for _, k := range catalog.CallKinds {
		s.Calls[k] = p.FullDetail || sn.Calls[k] > 0 || k == catalog.CallSuccessful || k == catalog.CallFailed ||
			(slowOn && (k == catalog.CallSlowSuccessful || k == catalog.CallSlowFailed))
	}
	if sn.DurationsRecorded {
		s.Durations[catalog.CallSuccessful] = true
		s.Durations[catalog.CallFailed] = p.FullDetail
	}
	s.SlowCallRate = p.FullDetail || slowOn
	s.SlowCallRateThreshold = p.FullDetail || slowOn
	s.FailureRateThreshold = p.FullDetail
	s.OpenDuration = p.FullDetail
	return s
}

// RetrySeries is the set of a retry's labelled series that a [Policy] exports for one
// snapshot, by the catalog values of their labels.
type RetrySeries struct {
	// Calls are the `kind` values of resilience_retry_calls_total.
	Calls [catalog.NumRetryKinds]bool
	// Errors are the `class` values of resilience_retry_errors_total (Errors[catalog.ClassNone]
	// is never set).
	Errors [catalog.NumClasses]bool
	// Backoff are the `source` values of resilience_retry_backoff_seconds.
	Backoff [catalog.NumDelaySources]bool
}

// Retry returns the labelled series exported for a retry whose snapshot is sn.
//
// By default: the four successful_*/failed_* call kinds from 0, aborted once counted (a caller's
// cancellation is not an outcome of the dependency); the failed attempts of each class once
// counted, except class rejected (stormwatch's own refusals, which the breaker and the bulkhead
// count where they happen); the delays of source backoff from 0, retry_after once counted.
// With FullDetail: every kind, class and source from the start.
func (p Policy) Retry(sn *retry.Snapshot) RetrySeries {
	var s RetrySeries
	for _, k := range catalog.RetryKinds {
		s.Calls[k] = p.FullDetail || sn.Calls[k] > 0 || k != catalog.RetryAborted
	}
	for _, c := range catalog.Classes {
		s.Errors[c] = p.FullDetail || (sn.Errors[c] > 0 && c != catalog.ClassRejected)
	}
	for _, src := range catalog.DelaySources {
		s.Backoff[src] = p.FullDetail || sn.Backoff[src].Count > 0 || src == catalog.SourceBackoff
	}
	return s
}

// BulkheadSeries is the set of a bulkhead's optional series that a [Policy] exports for one
// snapshot.
type BulkheadSeries struct {
	// Calls are the `kind` values of resilience_bulkhead_calls_total.
	Calls [catalog.NumAdmissions]bool
	// Waiting is resilience_bulkhead_waiting_calls.
	Waiting bool
}

// Bulkhead returns the optional series exported for a bulkhead whose snapshot is sn: the
// permitted and rejected admissions from 0, aborted (a caller cancelled while waiting) once
// counted; the number of callers waiting only with FullDetail (the generated dashboards read
// the mean number waiting from the wait histogram's sum).
func (p Policy) Bulkhead(sn *bulkhead.Snapshot) BulkheadSeries {
	var s BulkheadSeries
	for _, a := range catalog.Admissions {
		s.Calls[a] = p.FullDetail || a != catalog.AdmissionAborted || sn.Calls[a] > 0
	}
	s.Waiting = p.FullDetail
	return s
}

// TimeoutSeries is the set of a timeout's series that a [Policy] exports for one snapshot.
type TimeoutSeries struct {
	// Calls are the `kind` values of resilience_timeout_calls_total.
	Calls [catalog.NumTimeoutKinds]bool
}

// Timeout returns the series exported for a timeout whose snapshot is sn: successful, failed
// and timed_out from 0; aborted (the caller's cancellation) once counted, from 0 with
// FullDetail.
func (p Policy) Timeout(sn *timeout.Snapshot) TimeoutSeries {
	var s TimeoutSeries
	for _, k := range catalog.TimeoutKinds {
		s.Calls[k] = p.FullDetail || k != catalog.TimeoutAborted || sn.Calls[k] > 0
	}
	return s
}
