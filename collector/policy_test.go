package collector

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

func TestPolicyBreaker(t *testing.T) {
	var fresh breaker.Snapshot
	fresh.DurationsRecorded = true
	s := Policy{}.Breaker(&fresh)
	assert.Equal(t, [catalog.NumStates]bool{true, true, true, false, false, false}, s.States)
	assert.Equal(t, [catalog.NumCallKinds]bool{true, true, false, false, false}, s.Calls)
	assert.Equal(t, [2]bool{true, false}, s.Durations)
	assert.False(t, s.SlowCallRate || s.SlowCallRateThreshold || s.FailureRateThreshold || s.OpenDuration)
	for _, from := range catalog.States {
		for _, to := range catalog.States {
			want := to == catalog.StateOpen && catalog.CanTransition(from, to)
			assert.Equal(t, want, s.Transitions[from][to], "%s→%s", from, to)
		}
	}

	// Visited states, counted transitions and kinds appear; slow-call detection brings its
	// kinds and gauges.
	visited := fresh
	visited.State = catalog.StateMetricsOnly
	visited.Transitions[catalog.StateClosed][catalog.StateForcedOpen] = 1
	visited.Transitions[catalog.StateForcedOpen][catalog.StateClosed] = 1
	visited.Calls[catalog.CallIgnored] = 2
	visited.SlowCallDuration = 1
	visited.DurationsRecorded = false
	s = Policy{}.Breaker(&visited)
	assert.Equal(t, [catalog.NumStates]bool{true, true, true, true, false, true}, s.States)
	assert.True(t, s.Transitions[catalog.StateClosed][catalog.StateForcedOpen])
	assert.True(t, s.Transitions[catalog.StateForcedOpen][catalog.StateClosed])
	assert.False(t, s.Transitions[catalog.StateOpen][catalog.StateHalfOpen])
	assert.Equal(t, [catalog.NumCallKinds]bool{true, true, true, true, true}, s.Calls)
	assert.Equal(t, [2]bool{false, false}, s.Durations, "no durations recorded")
	assert.True(t, s.SlowCallRate && s.SlowCallRateThreshold)
	assert.False(t, s.FailureRateThreshold || s.OpenDuration)

	full := Policy{FullDetail: true}.Breaker(&fresh)
	n := 0
	for _, from := range catalog.States {
		for _, to := range catalog.States {
			assert.Equal(t, catalog.CanTransition(from, to), full.Transitions[from][to], "%s→%s", from, to)
			if full.Transitions[from][to] {
				n++
			}
		}
	}
	assert.Equal(t, numTransitionPairs, n)
	assert.Equal(t, [catalog.NumStates]bool{true, true, true, true, true, true}, full.States)
	assert.Equal(t, [catalog.NumCallKinds]bool{true, true, true, true, true}, full.Calls)
	assert.Equal(t, [2]bool{true, true}, full.Durations)
	assert.True(t, full.SlowCallRate && full.SlowCallRateThreshold && full.FailureRateThreshold && full.OpenDuration)
}

func TestPolicyRetryBulkheadTimeout(t *testing.T) {
	var rs retry.Snapshot
	r := Policy{}.Retry(&rs)
	assert.Equal(t, [catalog.NumRetryKinds]bool{true, true, true, true, false}, r.Calls)
	assert.Equal(t, [catalog.NumClasses]bool{}, r.Errors, "no class before it is counted")
	assert.Equal(t, [catalog.NumDelaySources]bool{true, false}, r.Backoff)
	rs.Calls[catalog.RetryAborted] = 1
	rs.Errors[catalog.ClassHTTP5xx] = 3
	rs.Errors[catalog.ClassRejected] = 3
	rs.Backoff[catalog.SourceRetryAfter].Count = 1
	r = Policy{}.Retry(&rs)
	assert.True(t, r.Calls[catalog.RetryAborted])
	assert.True(t, r.Errors[catalog.ClassHTTP5xx])
	assert.False(t, r.Errors[catalog.ClassRejected], "stormwatch's own refusals: full detail only")
	assert.True(t, r.Backoff[catalog.SourceRetryAfter])
	r = Policy{FullDetail: true}.Retry(&retry.Snapshot{})
	assert.False(t, r.Errors[catalog.ClassNone])
	for _, c := range catalog.Classes {
		assert.True(t, r.Errors[c], c)
	}
	assert.Equal(t, [catalog.NumRetryKinds]bool{true, true, true, true, true}, r.Calls)

	var bs bulkhead.Snapshot
	assert.Equal(t, BulkheadSeries{Calls: [catalog.NumAdmissions]bool{true, true, false}}, Policy{}.Bulkhead(&bs))
	bs.Calls[catalog.AdmissionAborted] = 1
	assert.True(t, Policy{}.Bulkhead(&bs).Calls[catalog.AdmissionAborted])
	assert.Equal(t, BulkheadSeries{Calls: [catalog.NumAdmissions]bool{true, true, true}, Waiting: true},
		Policy{FullDetail: true}.Bulkhead(&bulkhead.Snapshot{}))

	var ts timeout.Snapshot
	assert.Equal(t, [catalog.NumTimeoutKinds]bool{true, true, true, false}, Policy{}.Timeout(&ts).Calls)
	ts.Calls[catalog.TimeoutAborted] = 1
	assert.True(t, Policy{}.Timeout(&ts).Calls[catalog.TimeoutAborted])
	assert.True(t, Policy{FullDetail: true}.Timeout(&timeout.Snapshot{}).Calls[catalog.TimeoutAborted])
}
