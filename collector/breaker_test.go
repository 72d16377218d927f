package collector

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

func TestBreakerTransitionPairsAreTheOnesThatCanOccur(t *testing.T) {
	// 4 automatic pairs (closed→open, open→half_open, half_open→closed, half_open→open) and the
	// manual ones: to closed from the 5 other states, to forced_open, disabled and metrics_only
	// from the 5 states other than each: 4 + 5 + 3×5 - 1 (open→closed counted once) = 23.
	assert.Len(t, transitionPairs, 23)
	assert.Len(t, transitionPairs, numTransitionPairs)
	for _, tr := range transitionPairs {
		assert.True(t, catalog.CanTransition(tr[0], tr[1]), "%s→%s", tr[0], tr[1])
	}
	assert.Equal(t, []catalog.CallKind{catalog.CallFailed, catalog.CallSuccessful}, sortedDurationKinds)
	for _, k := range catalog.DurationKinds {
		assert.Less(t, int(k), len(catalog.DurationKinds), "Snapshot.Durations is indexed by the kind")
	}
}

var (
	bt0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // Unix 1767225600
	errDown = errors.New("503")
	bctx    = context.Background()
)

// takes returns a call function that lasts d on clk and returns err.
func takes(clk *clock.Fake, d time.Duration, err error) func(context.Context) error {
	return func(context.Context) error {
		clk.Advance(d)
		return err
	}
}

// breakerHistory runs the scripted history of the exposition tests on a breaker called payments
// (count window of 10, 5 calls minimum, slow calls above 1 s, 30 s open, one probe): a trip on
// failures at T+3s, two rejections, a successful probe 30 s later, then 4 instant successes, 1
// instant failure and 1 ignored call. check is called at each step with the breaker's state.
func breakerHistory(t *testing.T, clk *clock.Fake, b *breaker.Breaker, check func(step string)) {
	t.Helper()
	check("start")
	// 1 success (500 ms), 1 slow success (1.5 s), 3 failures (250, 250, 500 ms): 3 of 5
	// failed at T+3s → trip.
	require.NoError(t, b.Do(bctx, takes(clk, 500*time.Millisecond, nil)))
	require.NoError(t, b.Do(bctx, takes(clk, 1500*time.Millisecond, nil)))
	require.Error(t, b.Do(bctx, takes(clk, 250*time.Millisecond, errDown)))
	require.Error(t, b.Do(bctx, takes(clk, 250*time.Millisecond, errDown)))
	require.Error(t, b.Do(bctx, takes(clk, 500*time.Millisecond, errDown)))
	require.Equal(t, catalog.StateOpen, b.State())
	// 2 rejections.
	require.ErrorIs(t, b.Do(bctx, takes(clk, 0, nil)), breaker.ErrOpen)
	require.ErrorIs(t, b.Do(bctx, takes(clk, 0, nil)), breaker.ErrOpen)
	check("open")
	// 30 s later the breaker is effectively half-open; scraping does not commit it.
	clk.Advance(30 * time.Second)
	check("half_open")
	check("half_open")
	assert.Zero(t, b.Snapshot().Transitions[catalog.StateOpen][catalog.StateHalfOpen], "a scrape never commits a transition")
	// The probe succeeds (500 ms) → closed. Then 4 instant successes, 1 instant failure and 1
	// ignored call: the new window holds 1 failure in 5 calls.
	require.NoError(t, b.Do(bctx, takes(clk, 500*time.Millisecond, nil)))
	require.Equal(t, catalog.StateClosed, b.State())
	for range 4 {
		require.NoError(t, b.Do(bctx, takes(clk, 0, nil)))
	}
	require.Error(t, b.Do(bctx, takes(clk, 0, errDown)))
	require.Error(t, b.Do(bctx, takes(clk, 0, classify.Business(errDown))))
	check("end")
}

func newHistoryBreaker(t *testing.T, opts ...Option) (*clock.Fake, *breaker.Breaker, *Collector) {
	t.Helper()
	clk := clock.NewFake(bt0)
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	b, err := reg.Breaker("payments", breaker.Config{
		WindowSize: 10, MinCalls: 5, FailureRateThreshold: 0.5, SlowCallDuration: time.Second,
		OpenDuration: 30 * time.Second, DisableJitter: true, HalfOpenCalls: 1, Clock: clk,
	})
	require.NoError(t, err)
	c, err := New(reg, opts...)
	require.NoError(t, err)
	return clk, b, c
}

const (
	helpState   = "# HELP resilience_circuitbreaker_state Effective circuit breaker state: 1 for the current state, 0 for the others.\n# TYPE resilience_circuitbreaker_state gauge\n"
	helpTripped = "# HELP resilience_circuitbreaker_tripped_since_timestamp_seconds Unix time of the trip that began the current not-closed episode, labelled with its cause; 0 (and no cause) while closed.\n# TYPE resilience_circuitbreaker_tripped_since_timestamp_seconds gauge\n"
	helpNotPerm = "# HELP resilience_circuitbreaker_not_permitted_calls_total Calls rejected by the circuit breaker.\n# TYPE resilience_circuitbreaker_not_permitted_calls_total counter\n"
)

// stateLines writes the state series of breaker payments for the given states, cur at 1.
func stateLines(cur string, states ...string) string {
	var sb strings.Builder
	sort.Strings(states)
	for _, s := range states {
		v := 0
		if s == cur {
			v = 1
		}
		fmt.Fprintf(&sb, "resilience_circuitbreaker_state{name=\"payments\",state=%q} %d\n", s, v)
	}
	return sb.String()
}

func breakerFamilies() []string {
	var names []string
	for _, m := range catalog.ByPrimitive(catalog.CircuitBreaker) {
		names = append(names, m.FullName(catalog.DefaultNamespace))
	}
	return names
}

func TestBreakerExpositionAfterScriptedHistory(t *testing.T) {
	clk, b, c := newHistoryBreaker(t)
	brief := []string{"resilience_circuitbreaker_state", "resilience_circuitbreaker_tripped_since_timestamp_seconds", "resilience_circuitbreaker_not_permitted_calls_total"}
	base := []string{"closed", "half_open", "open"}
	steps := map[string]string{
		// Before any call: closed, everything at 0, no trip cause.
		"start": helpState + stateLines("closed", base...) + helpTripped +
			"resilience_circuitbreaker_tripped_since_timestamp_seconds{cause=\"\",name=\"payments\"} 0\n" + helpNotPerm +
			"resilience_circuitbreaker_not_permitted_calls_total{name=\"payments\"} 0\n",
		"open": helpState + stateLines("open", base...) + helpTripped +
			"resilience_circuitbreaker_tripped_since_timestamp_seconds{cause=\"failure_rate\",name=\"payments\"} 1767225603\n" + helpNotPerm +
			"resilience_circuitbreaker_not_permitted_calls_total{name=\"payments\"} 2\n",
		"half_open": helpState + stateLines("half_open", base...) + helpTripped +
			"resilience_circuitbreaker_tripped_since_timestamp_seconds{cause=\"failure_rate\",name=\"payments\"} 1767225603\n" + helpNotPerm +
			"resilience_circuitbreaker_not_permitted_calls_total{name=\"payments\"} 2\n",
	}
	breakerHistory(t, clk, b, func(step string) {
		if want, ok := steps[step]; ok {
			require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), brief...), step)
		}
	})

	// Successful durations (slow ones included): 500 ms, 1.5 s, the 500 ms probe and 4 instant
	// calls. Failed durations and the ignored call are not exported by default. The native
	// histogram reads as its count and sum in the text format.
	want := helpState + stateLines("closed", base...) + `# HELP resilience_circuitbreaker_transitions_total Committed circuit breaker state transitions; trips are to="open".
# TYPE resilience_circuitbreaker_transitions_total counter
resilience_circuitbreaker_transitions_total{from="closed",name="payments",to="open"} 1
resilience_circuitbreaker_transitions_total{from="half_open",name="payments",to="closed"} 1
resilience_circuitbreaker_transitions_total{from="half_open",name="payments",to="open"} 0
resilience_circuitbreaker_transitions_total{from="open",name="payments",to="half_open"} 1
` + helpTripped + `resilience_circuitbreaker_tripped_since_timestamp_seconds{cause="",name="payments"} 0
# HELP resilience_circuitbreaker_calls_total Calls permitted by the circuit breaker, by outcome.
# TYPE resilience_circuitbreaker_calls_total counter
resilience_circuitbreaker_calls_total{kind="failed",name="payments"} 4
resilience_circuitbreaker_calls_total{kind="ignored",name="payments"} 1
resilience_circuitbreaker_calls_total{kind="slow_failed",name="payments"} 0
resilience_circuitbreaker_calls_total{kind="slow_successful",name="payments"} 1
resilience_circuitbreaker_calls_total{kind="successful",name="payments"} 6
` + helpNotPerm + `resilience_circuitbreaker_not_permitted_calls_total{name="payments"} 2
# HELP resilience_circuitbreaker_call_duration_seconds Duration of calls permitted by the circuit breaker.
# TYPE resilience_circuitbreaker_call_duration_seconds histogram
` + histogramLines("resilience_circuitbreaker_call_duration_seconds", `kind="successful",name="payments"`,
		catalog.DurationDefaultBuckets, 0.5, 1.5, 0.5, 0, 0, 0, 0) + `# HELP resilience_circuitbreaker_failure_rate Failure ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.
# TYPE resilience_circuitbreaker_failure_rate gauge
resilience_circuitbreaker_failure_rate{name="payments"} 0.2
# HELP resilience_circuitbreaker_slow_call_rate Slow-call ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.
# TYPE resilience_circuitbreaker_slow_call_rate gauge
resilience_circuitbreaker_slow_call_rate{name="payments"} 0
# HELP resilience_circuitbreaker_slow_call_rate_threshold Configured slow-call ratio at which the circuit breaker trips.
# TYPE resilience_circuitbreaker_slow_call_rate_threshold gauge
resilience_circuitbreaker_slow_call_rate_threshold{name="payments"} 0.8
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), breakerFamilies()...))
}

func TestBreakerFullDetailExposition(t *testing.T) {
	clk, b, c := newHistoryBreaker(t, WithFullDetail())
	breakerHistory(t, clk, b, func(string) {})

	// Durations observed: failed 250, 250, 500 ms and 0 (the instant failure); successful
	// (slow ones included) 500 ms, 1.5 s, the 500 ms probe and 4 instant calls. The ignored call
	// is not observed.
	const family = "resilience_circuitbreaker_call_duration_seconds"
	durations := histogramLines(family, `kind="failed",name="payments"`, catalog.DurationBuckets, 0.25, 0.25, 0.5, 0) +
		histogramLines(family, `kind="successful",name="payments"`, catalog.DurationBuckets, 0.5, 1.5, 0.5, 0, 0, 0, 0)
	want := helpState + stateLines("closed", catalog.Names(catalog.States[:])...) + `# HELP resilience_circuitbreaker_transitions_total Committed circuit breaker state transitions; trips are to="open".
# TYPE resilience_circuitbreaker_transitions_total counter
resilience_circuitbreaker_transitions_total{from="closed",name="payments",to="disabled"} 0
resilience_circuitbreaker_transitions_total{from="closed",name="payments",to="forced_open"} 0
resilience_circuitbreaker_transitions_total{from="closed",name="payments",to="metrics_only"} 0
resilience_circuitbreaker_transitions_total{from="closed",name="payments",to="open"} 1
resilience_circuitbreaker_transitions_total{from="disabled",name="payments",to="closed"} 0
resilience_circuitbreaker_transitions_total{from="disabled",name="payments",to="forced_open"} 0
resilience_circuitbreaker_transitions_total{from="disabled",name="payments",to="metrics_only"} 0
resilience_circuitbreaker_transitions_total{from="forced_open",name="payments",to="closed"} 0
resilience_circuitbreaker_transitions_total{from="forced_open",name="payments",to="disabled"} 0
resilience_circuitbreaker_transitions_total{from="forced_open",name="payments",to="metrics_only"} 0
resilience_circuitbreaker_transitions_total{from="half_open",name="payments",to="closed"} 1
resilience_circuitbreaker_transitions_total{from="half_open",name="payments",to="disabled"} 0
resilience_circuitbreaker_transitions_total{from="half_open",name="payments",to="forced_open"} 0
resilience_circuitbreaker_transitions_total{from="half_open",name="payments",to="metrics_only"} 0
resilience_circuitbreaker_transitions_total{from="half_open",name="payments",to="open"} 0
resilience_circuitbreaker_transitions_total{from="metrics_only",name="payments",to="closed"} 0
resilience_circuitbreaker_transitions_total{from="metrics_only",name="payments",to="disabled"} 0
resilience_circuitbreaker_transitions_total{from="metrics_only",name="payments",to="forced_open"} 0
resilience_circuitbreaker_transitions_total{from="open",name="payments",to="closed"} 0
resilience_circuitbreaker_transitions_total{from="open",name="payments",to="disabled"} 0
resilience_circuitbreaker_transitions_total{from="open",name="payments",to="forced_open"} 0
resilience_circuitbreaker_transitions_total{from="open",name="payments",to="half_open"} 1
resilience_circuitbreaker_transitions_total{from="open",name="payments",to="metrics_only"} 0
` + helpTripped + `resilience_circuitbreaker_tripped_since_timestamp_seconds{cause="",name="payments"} 0
# HELP resilience_circuitbreaker_calls_total Calls permitted by the circuit breaker, by outcome.
# TYPE resilience_circuitbreaker_calls_total counter
resilience_circuitbreaker_calls_total{kind="failed",name="payments"} 4
resilience_circuitbreaker_calls_total{kind="ignored",name="payments"} 1
resilience_circuitbreaker_calls_total{kind="slow_failed",name="payments"} 0
resilience_circuitbreaker_calls_total{kind="slow_successful",name="payments"} 1
resilience_circuitbreaker_calls_total{kind="successful",name="payments"} 6
` + helpNotPerm + `resilience_circuitbreaker_not_permitted_calls_total{name="payments"} 2
# HELP resilience_circuitbreaker_call_duration_seconds Duration of calls permitted by the circuit breaker.
# TYPE resilience_circuitbreaker_call_duration_seconds histogram
` + durations + `# HELP resilience_circuitbreaker_failure_rate Failure ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.
# TYPE resilience_circuitbreaker_failure_rate gauge
resilience_circuitbreaker_failure_rate{name="payments"} 0.2
# HELP resilience_circuitbreaker_slow_call_rate Slow-call ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.
# TYPE resilience_circuitbreaker_slow_call_rate gauge
resilience_circuitbreaker_slow_call_rate{name="payments"} 0
# HELP resilience_circuitbreaker_failure_rate_threshold Configured failure ratio at which the circuit breaker trips.
# TYPE resilience_circuitbreaker_failure_rate_threshold gauge
resilience_circuitbreaker_failure_rate_threshold{name="payments"} 0.5
# HELP resilience_circuitbreaker_slow_call_rate_threshold Configured slow-call ratio at which the circuit breaker trips.
# TYPE resilience_circuitbreaker_slow_call_rate_threshold gauge
resilience_circuitbreaker_slow_call_rate_threshold{name="payments"} 0.8
# HELP resilience_circuitbreaker_open_duration_seconds Configured base duration of the open state.
# TYPE resilience_circuitbreaker_open_duration_seconds gauge
resilience_circuitbreaker_open_duration_seconds{name="payments"} 30
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), breakerFamilies()...))
}

func TestBreakerRatesAreNaNBelowMinimumCalls(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	b, err := reg.Breaker("orders", breaker.Config{MinCalls: 3, WindowSize: 10, SlowCallDuration: time.Second})
	require.NoError(t, err)
	c, err := New(reg, WithNamespace("acme"))
	require.NoError(t, err)
	require.NoError(t, b.Do(bctx, func(context.Context) error { return nil }))
	want := `
# HELP acme_circuitbreaker_failure_rate Failure ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.
# TYPE acme_circuitbreaker_failure_rate gauge
acme_circuitbreaker_failure_rate{name="orders"} NaN
# HELP acme_circuitbreaker_slow_call_rate Slow-call ratio (0..1) in the circuit breaker's window; NaN below the minimum number of calls.
# TYPE acme_circuitbreaker_slow_call_rate gauge
acme_circuitbreaker_slow_call_rate{name="orders"} NaN
`
	// testutil compares NaN by its text, so NaN == NaN here.
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "acme_circuitbreaker_failure_rate", "acme_circuitbreaker_slow_call_rate"))
}

// lintRegistry builds a registry with breakers in every state and window kind.
func lintRegistry(t *testing.T) *instrument.Registry {
	t.Helper()
	reg, err := instrument.NewRegistry(instrument.WithMaxNames(6))
	require.NoError(t, err)
	mk := func(name string, cfg breaker.Config) *breaker.Breaker {
		b, err := reg.Breaker(name, cfg)
		require.NoError(t, err)
		return b
	}
	fail := func(context.Context) error { return errDown }
	open := mk("open", breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1})
	_ = open.Do(bctx, fail)
	mk("forced", breaker.Config{}).ForceOpen()
	mk("disabled", breaker.Config{DisableDurationHistogram: true}).Disable()
	mk("shadow", breaker.Config{Window: breaker.TimeBased}).MetricsOnly()
	tb := mk("timed", breaker.Config{Window: breaker.TimeBased, MinCalls: 1, SlowCallDuration: time.Second})
	_ = tb.Do(bctx, func(context.Context) error { return nil })
	mk("a", breaker.Config{})
	mk("overflowing", breaker.Config{}) // becomes _overflow
	return reg
}

func TestBreakerExpositionLintsClean(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithFullDetail()}, {WithClassicBuckets()}} {
		c, err := New(lintRegistry(t), opts...)
		require.NoError(t, err)
		pr := prometheus.NewPedanticRegistry()
		require.NoError(t, pr.Register(c))
		problems, err := testutil.GatherAndLint(pr)
		require.NoError(t, err)
		assert.Empty(t, problems)
	}
}

func TestBreakerSeriesDeclaredInCatalog(t *testing.T) {
	for _, full := range []bool{false, true} {
		var opts []Option
		if full {
			opts = append(opts, WithFullDetail())
		}
		c, err := New(lintRegistry(t), opts...)
		require.NoError(t, err)
		pr := prometheus.NewPedanticRegistry()
		require.NoError(t, pr.Register(c))
		mfs, err := pr.Gather()
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, mf := range mfs {
			m, ok := familyInCatalog(mf.GetName())
			require.True(t, ok, "series %s is not in the catalog", mf.GetName())
			if m.Primitive != catalog.CircuitBreaker {
				continue
			}
			seen[mf.GetName()] = true
			assert.Equal(t, m.Type.String(), strings.ToLower(mf.GetType().String()), mf.GetName())
			for _, met := range mf.GetMetric() {
				var got []string
				for _, lp := range met.GetLabel() {
					got = append(got, lp.GetName())
					l, ok := m.Label(lp.GetName())
					require.True(t, ok, "%s has undeclared label %s", mf.GetName(), lp.GetName())
					if l.Values == nil {
						continue
					}
					if m.Name == catalog.BreakerTrippedSince.Name && lp.GetValue() == "" {
						assert.Zero(t, met.GetGauge().GetValue(), "no cause only while closed")
						continue
					}
					assert.Contains(t, l.Values, lp.GetValue(), "%s{%s}", mf.GetName(), lp.GetName())
				}
				assert.ElementsMatch(t, m.LabelNames(), got, mf.GetName())
			}
		}
		counts := map[string]int{}
		for _, mf := range mfs {
			counts[mf.GetName()] = len(mf.GetMetric())
		}
		// Seven breakers: a, disabled, forced, open, shadow, timed (slow-call detection on) and
		// _overflow; durations are not recorded by disabled.
		if full {
			for _, m := range catalog.ByPrimitive(catalog.CircuitBreaker) {
				assert.True(t, seen[m.FullName(catalog.DefaultNamespace)], "catalog metric %s not exported", m.Name)
			}
			assert.Equal(t, 7*6, counts["resilience_circuitbreaker_state"])
			assert.Equal(t, 7*23, counts["resilience_circuitbreaker_transitions_total"])
			assert.Equal(t, 7*5, counts["resilience_circuitbreaker_calls_total"])
			assert.Equal(t, 6*2, counts["resilience_circuitbreaker_call_duration_seconds"], "the disabled histogram is not exported")
			assert.Equal(t, 7, counts["resilience_circuitbreaker_open_duration_seconds"])
			continue
		}
		// closed, open, half_open of each, and forced_open, disabled, metrics_only of the
		// breakers in them.
		assert.Equal(t, 7*3+3, counts["resilience_circuitbreaker_state"])
		// The two trips of each, and the three manual moves that happened.
		assert.Equal(t, 7*2+3, counts["resilience_circuitbreaker_transitions_total"])
		assert.Equal(t, 7*2+2, counts["resilience_circuitbreaker_calls_total"], "the slow kinds of timed")
		assert.Equal(t, 6, counts["resilience_circuitbreaker_call_duration_seconds"], "successful calls only")
		assert.Equal(t, 7, counts["resilience_circuitbreaker_tripped_since_timestamp_seconds"])
		assert.Equal(t, 1, counts["resilience_circuitbreaker_slow_call_rate"])
		assert.Equal(t, 1, counts["resilience_circuitbreaker_slow_call_rate_threshold"])
		assert.Zero(t, counts["resilience_circuitbreaker_failure_rate_threshold"])
		assert.Zero(t, counts["resilience_circuitbreaker_open_duration_seconds"])
	}
}

// TestBreakerTripCauseLabel checks the cause of each kind of trip on tripped_since.
func TestBreakerTripCauseLabel(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	mk := func(name string, cfg breaker.Config) *breaker.Breaker {
		b, err := reg.Breaker(name, cfg)
		require.NoError(t, err)
		return b
	}
	fail := func(context.Context) error { return errDown }
	_ = mk("consecutive", breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1}).Do(bctx, fail)
	rate := mk("rate", breaker.Config{WindowSize: 2, MinCalls: 2})
	_ = rate.Do(bctx, fail)
	_ = rate.Do(bctx, fail)
	mk("forced", breaker.Config{}).ForceOpen()
	mk("closed", breaker.Config{})
	want := helpTripped + `resilience_circuitbreaker_tripped_since_timestamp_seconds{cause="",name="closed"} 0
resilience_circuitbreaker_tripped_since_timestamp_seconds{cause="consecutive_failures",name="consecutive"} 1
resilience_circuitbreaker_tripped_since_timestamp_seconds{cause="failure_rate",name="rate"} 1
resilience_circuitbreaker_tripped_since_timestamp_seconds{cause="forced",name="forced"} 1
`
	pr := prometheus.NewRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	var lines []string
	for _, mf := range mfs {
		if mf.GetName() != catalog.BreakerTrippedSince.FullName(catalog.DefaultNamespace) {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := 0
			if m.GetGauge().GetValue() > 0 {
				v = 1
			}
			lines = append(lines, fmt.Sprintf("resilience_circuitbreaker_tripped_since_timestamp_seconds{cause=%q,name=%q} %d",
				m.GetLabel()[0].GetValue(), m.GetLabel()[1].GetValue(), v))
		}
	}
	assert.Equal(t, want, helpTripped+strings.Join(lines, "\n")+"\n")
}

func TestBreakerCollectorSeesNewBreakersAndRaces(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	assert.Equal(t, 0, testutil.CollectAndCount(c, "resilience_circuitbreaker_state"))
	b, err := reg.Breaker("a", breaker.Config{})
	require.NoError(t, err)
	assert.Equal(t, 3, testutil.CollectAndCount(c, "resilience_circuitbreaker_state"))
	_, err = reg.Breaker("b", breaker.Config{})
	require.NoError(t, err)
	assert.Equal(t, 6, testutil.CollectAndCount(c, "resilience_circuitbreaker_state"))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = testutil.CollectAndCount(c)
				}
			}
		}()
	}
	for i := range 2000 {
		_ = b.Do(bctx, func(context.Context) error {
			if i%2 == 0 {
				return errDown
			}
			return nil
		})
	}
	close(stop)
	wg.Wait()
	sn := b.Snapshot()
	var sum uint64
	for _, n := range sn.Calls {
		sum += n
	}
	assert.Equal(t, uint64(2000), sum+sn.NotPermitted)
}

// familyInCatalog finds the catalog metric whose full name is a family name.
func familyInCatalog(family string) (catalog.Metric, bool) {
	for _, m := range catalog.All() {
		if m.FullName(catalog.DefaultNamespace) == family {
			return m, true
		}
	}
	return catalog.Metric{}, false
}

func ExampleNew_breaker() {
	reg, _ := instrument.NewRegistry()
	b, _ := reg.Breaker("payments-api", breaker.Config{})
	_ = b.Do(context.Background(), func(ctx context.Context) error { return nil })

	c, _ := New(reg)
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(c)
	// Serve it: http.Handle("/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	mfs, _ := promReg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "resilience_circuitbreaker_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			fmt.Println(m.GetLabel()[0].GetValue(), m.GetCounter().GetValue())
		}
	}
	// Output:
	// failed 0
	// successful 1
}

// TestBreakerSeriesWrittenFromANewerReading: a series chosen by one scrape is written from the
// breaker's latest reading, which a concurrent scrape may have replaced — here after the breaker
// stopped recording durations. The histogram then reads as empty rather than missing.
func TestBreakerSeriesWrittenFromANewerReading(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	b, err := reg.Breaker("a", breaker.Config{})
	require.NoError(t, err)
	require.NoError(t, b.Do(bctx, func(context.Context) error { return nil }))
	c, err := New(reg)
	require.NoError(t, err)
	first := make(chan prometheus.Metric, 100)
	c.Collect(first) // scrape 1 chooses its series...
	close(first)
	require.NoError(t, b.Reconfigure(breaker.Config{DisableDurationHistogram: true}))
	second := make(chan prometheus.Metric, 100)
	c.Collect(second) // ...scrape 2 stores a newer reading before scrape 1 writes them
	close(second)
	histograms := 0
	for m := range first {
		var out dto.Metric
		require.NoError(t, m.Write(&out))
		if strings.Contains(m.Desc().String(), catalog.BreakerCallDuration.FullName(catalog.DefaultNamespace)) {
			histograms++
			require.NotNil(t, out.Histogram, "a histogram series without a histogram")
			assert.Zero(t, out.GetHistogram().GetSampleCount())
		}
	}
	assert.Equal(t, 1, histograms)
	for m := range second {
		assert.NotContains(t, m.Desc().String(), catalog.BreakerCallDuration.FullName(catalog.DefaultNamespace))
	}
}

// TestBreakerHistogramReusedWhileUnchanged: the duration histogram of a breaker that saw no call
// since the last scrape is the same message (no allocation); a call makes a new one.
func TestBreakerHistogramReusedWhileUnchanged(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	b, err := reg.Breaker("a", breaker.Config{})
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	histogramOfScrape := func() *dto.Histogram {
		ch := make(chan prometheus.Metric, 100)
		c.Collect(ch)
		close(ch)
		var got *dto.Histogram
		for m := range ch {
			var out dto.Metric
			require.NoError(t, m.Write(&out))
			if out.Histogram != nil {
				got = out.Histogram
			}
		}
		require.NotNil(t, got)
		return got
	}
	first := histogramOfScrape()
	assert.Same(t, first, histogramOfScrape(), "no call: the same histogram")
	require.NoError(t, b.Do(bctx, func(context.Context) error { return nil }))
	third := histogramOfScrape()
	assert.NotSame(t, first, third)
	assert.Equal(t, uint64(1), third.GetSampleCount())
	assert.Zero(t, first.GetSampleCount(), "a histogram handed out never changes")
}
