package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	t0      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	errBoom = errors.New("boom")
	ctx     = context.Background()
)

func ok(context.Context) error   { return nil }
func fail(context.Context) error { return errBoom }

// newTest returns a breaker on a fake clock with transitions recorded.
func newTest(t *testing.T, cfg Config) (*Breaker, *clock.Fake, *[]events.Transition) {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg.Clock = clk
	if cfg.Events == nil {
		cfg.Events = new(events.Hub)
	}
	var mu sync.Mutex
	var trs []events.Transition
	cfg.Events.Transitions.Add(func(e events.Transition) {
		mu.Lock()
		trs = append(trs, e)
		mu.Unlock()
	})
	b, err := New("dep", cfg)
	require.NoError(t, err)
	return b, clk, &trs
}

func mustReject(t *testing.T, err error, state catalog.State) *OpenError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrOpen)
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, state, oe.State)
	assert.Equal(t, "dep", oe.Name)
	assert.True(t, oe.Rejected())
	return oe
}

func TestZeroConfigDefaults(t *testing.T) {
	b, err := New("dep", Config{})
	require.NoError(t, err)
	c := b.Config()
	assert.Equal(t, CountBased, c.Window)
	assert.Equal(t, 100, c.WindowSize)
	assert.Equal(t, 20, c.MinCalls)
	assert.Equal(t, 0.5, c.FailureRateThreshold)
	assert.Equal(t, 0.8, c.SlowCallRateThreshold)
	assert.Equal(t, time.Duration(0), c.SlowCallDuration)
	assert.Equal(t, 30*time.Second, c.OpenDuration)
	assert.Equal(t, 0.2, c.OpenJitter)
	assert.Equal(t, 3, c.HalfOpenCalls)
	assert.Equal(t, clock.Real{}, c.Clock)
	assert.Equal(t, catalog.StateClosed, b.State())
	assert.Equal(t, "dep", b.Name())

	tb, err := New("t", Config{Window: TimeBased})
	require.NoError(t, err)
	assert.Equal(t, 60*time.Second, tb.Config().WindowDuration)
	assert.Equal(t, time.Second, tb.Config().BucketDuration)

	cb, err := New("c", Config{Window: ConsecutiveFailures})
	require.NoError(t, err)
	assert.Equal(t, 5, cb.Config().WindowSize)
	sn := cb.Snapshot()
	assert.Equal(t, 1.0, sn.FailureRateThreshold)
	assert.Equal(t, 1.0, sn.SlowCallRateThreshold)
	assert.Equal(t, 30*time.Second, sn.OpenDuration)

	small, err := New("s", Config{WindowSize: 10})
	require.NoError(t, err)
	assert.Equal(t, 10, small.Config().MinCalls, "an unset MinCalls shrinks to a small window")
}

func TestInvalidConfigNamesFieldAndValue(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string
		value string
	}{
		{Config{Window: "sliding"}, "Window", `"sliding"`},
		{Config{WindowSize: -1}, "WindowSize", "-1"},
		{Config{WindowSize: maxWindowSize + 1}, "WindowSize", fmt.Sprint(maxWindowSize + 1)},
		{Config{WindowDuration: time.Minute}, "WindowDuration", "1m0s"},
		{Config{BucketDuration: time.Second}, "BucketDuration", "1s"},
		{Config{Window: TimeBased, WindowDuration: -time.Second}, "WindowDuration", "-1s"},
		{Config{Window: TimeBased, BucketDuration: -time.Second}, "BucketDuration", "-1s"},
		{Config{Window: TimeBased, WindowDuration: 2500 * time.Millisecond}, "WindowDuration", "2.5s"},
		{Config{Window: TimeBased, WindowDuration: 2 * time.Hour}, "WindowDuration", "2h0m0s"},
		{Config{Window: TimeBased, WindowSize: 10}, "WindowSize", "10"},
		{Config{MinCalls: -3}, "MinCalls", "-3"},
		{Config{WindowSize: 10, MinCalls: 11}, "MinCalls", "11"},
		{Config{Window: ConsecutiveFailures, MinCalls: 5}, "MinCalls", "5"},
		{Config{Window: ConsecutiveFailures, FailureRateThreshold: 0.5}, "FailureRateThreshold", "0.5"},
		{Config{Window: ConsecutiveFailures, SlowCallRateThreshold: 0.5}, "SlowCallRateThreshold", "0.5"},
		{Config{Window: ConsecutiveFailures, WindowDuration: time.Second}, "WindowDuration", "1s"},
		{Config{FailureRateThreshold: 1.5}, "FailureRateThreshold", "1.5"},
		{Config{FailureRateThreshold: -0.1}, "FailureRateThreshold", "-0.1"},
		{Config{FailureRateThreshold: math.NaN()}, "FailureRateThreshold", "NaN"},
		{Config{SlowCallRateThreshold: 2}, "SlowCallRateThreshold", "2"},
		{Config{SlowCallDuration: -time.Millisecond}, "SlowCallDuration", "-1ms"},
		{Config{HalfOpenCalls: -1}, "HalfOpenCalls", "-1"},
		{Config{HalfOpenCalls: maxHalfOpenCalls + 1}, "HalfOpenCalls", fmt.Sprint(maxHalfOpenCalls + 1)},
		{Config{HalfOpenMaxDuration: -time.Second}, "HalfOpenMaxDuration", "-1s"},
		{Config{OpenDuration: -time.Second}, "OpenDuration", "-1s"},
		{Config{OpenJitter: 1}, "OpenJitter", "1"},
		{Config{OpenJitter: -0.2}, "OpenJitter", "-0.2"},
		{Config{OpenJitter: 0.3, DisableJitter: true}, "OpenJitter", "0.3"},
		{Config{OpenDurationGrowth: 0.5}, "OpenDurationGrowth", "0.5"},
		{Config{OpenDurationGrowth: 101}, "OpenDurationGrowth", "101"},
		{Config{OpenDurationGrowth: 2, MaxOpenDuration: time.Second}, "MaxOpenDuration", "1s"},
		{Config{MaxOpenDuration: time.Hour}, "MaxOpenDuration", "1h0m0s"},
		{Config{MaxOpenDuration: -time.Hour}, "MaxOpenDuration", "-1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			b, err := New("dep", tt.cfg)
			require.Error(t, err)
			assert.Nil(t, b)
			var ce *catalog.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
			assert.Equal(t, "dep", ce.Name)
			assert.Contains(t, err.Error(), tt.field+" = "+tt.value)
		})
	}
	_, err := New("", Config{})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "name", ce.Field)
}

// tripConsecutive opens a consecutive-n breaker.
func tripConsecutive(t *testing.T, b *Breaker, n int) {
	t.Helper()
	for range n {
		require.ErrorIs(t, b.Do(ctx, fail), errBoom)
	}
	require.Equal(t, catalog.StateOpen, b.State())
}

func TestEveryTransition(t *testing.T) {
	b, clk, trs := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 2, HalfOpenCalls: 1, OpenDuration: time.Second, DisableJitter: true})
	tripConsecutive(t, b, 2)                     // closed → open
	clk.Advance(time.Second)                     //
	require.NoError(t, b.Do(ctx, ok))            // open → half_open → closed
	tripConsecutive(t, b, 2)                     // closed → open
	clk.Advance(time.Second)                     //
	require.ErrorIs(t, b.Do(ctx, fail), errBoom) // open → half_open → open
	b.ForceOpen()                                // open → forced_open
	b.Disable()                                  // forced_open → disabled
	b.MetricsOnly()                              // disabled → metrics_only
	b.ForceOpen()                                // metrics_only → forced_open
	b.MetricsOnly()                              // forced_open → metrics_only
	b.Disable()                                  // metrics_only → disabled
	b.ForceOpen()                                // disabled → forced_open
	b.Reset()                                    // forced_open → closed
	b.Disable()                                  // closed → disabled
	b.Reset()                                    // disabled → closed
	b.MetricsOnly()                              // closed → metrics_only
	b.Reset()                                    // metrics_only → closed
	b.ForceOpen()                                // closed → forced_open
	b.Disable()
	b.Disable() // no-op: already disabled
	b.Reset()
	tripConsecutive(t, b, 2)
	b.Reset() // open → closed
	tripConsecutive(t, b, 2)
	clk.Advance(time.Second)
	p, err := b.Acquire() // open → half_open (probe in flight)
	require.NoError(t, err)
	b.Disable() // half_open → disabled
	p.Done(nil) // late result: decides nothing
	assert.Equal(t, catalog.StateDisabled, b.State())
	b.Reset()
	tripConsecutive(t, b, 2)
	clk.Advance(time.Second)
	_, err = b.Acquire()
	require.NoError(t, err)
	b.ForceOpen() // half_open → forced_open
	b.Reset()
	tripConsecutive(t, b, 2)
	clk.Advance(time.Second)
	_, err = b.Acquire()
	require.NoError(t, err)
	b.MetricsOnly() // half_open → metrics_only
	b.Reset()
	tripConsecutive(t, b, 2)
	clk.Advance(time.Second)
	_, err = b.Acquire()
	require.NoError(t, err)
	b.Reset() // half_open → closed
	tripConsecutive(t, b, 2)
	b.Disable() // open → disabled
	b.Reset()
	tripConsecutive(t, b, 2)
	b.MetricsOnly() // open → metrics_only

	seen := map[[2]catalog.State]bool{}
	for _, tr := range *trs {
		seen[[2]catalog.State{tr.From, tr.To}] = true
		assert.Equal(t, "dep", tr.Name)
		assert.NotEmpty(t, tr.Reason)
	}
	sn := b.Snapshot()
	var total uint64
	for _, from := range catalog.States {
		for _, to := range catalog.States {
			n := sn.Transitions[from][to]
			total += n
			if catalog.CanTransition(from, to) {
				assert.True(t, seen[[2]catalog.State{from, to}], "transition %s→%s not exercised", from, to)
				assert.NotZero(t, n, "%s→%s", from, to)
			} else {
				assert.Zero(t, n, "impossible transition %s→%s counted", from, to)
			}
		}
	}
	assert.Equal(t, uint64(len(*trs)), total, "every committed transition is counted once and emitted once")
}

func TestCanTransitionPairs(t *testing.T) {
	n := 0
	for _, f := range catalog.States {
		for _, to := range catalog.States {
			if catalog.CanTransition(f, to) {
				n++
			}
		}
	}
	assert.Equal(t, 23, n)
	assert.False(t, catalog.CanTransition(catalog.StateClosed, catalog.StateHalfOpen))
	assert.False(t, catalog.CanTransition(catalog.StateForcedOpen, catalog.StateOpen))
	assert.False(t, catalog.CanTransition(catalog.StateDisabled, catalog.StateHalfOpen))
	assert.False(t, catalog.CanTransition(catalog.StateOpen, catalog.StateOpen))
}

// TestTripTimeline follows a breaker second by second through a trip and its probe: five
// consecutive failures, open 30 s, one probe that either succeeds or fails.
func TestTripTimeline(t *testing.T) {
	for _, outcome := range []string{"A probe succeeds", "B probe fails"} {
		t.Run(outcome, func(t *testing.T) {
			b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 5, OpenDuration: 30 * time.Second, DisableJitter: true, HalfOpenCalls: 1})
			at := func(d time.Duration) { clk.Set(t0.Add(d)) }
			type row struct {
				at      time.Duration
				event   string
				counter int64
				state   catalog.State
			}
			var probe Permit
			rows := []struct {
				row
				do func(t *testing.T)
			}{
				{row{0, "normal request succeeds", 0, catalog.StateClosed}, func(t *testing.T) { require.NoError(t, b.Do(ctx, ok)) }},
				{row{100 * time.Millisecond, "1st failure", 1, catalog.StateClosed}, func(t *testing.T) { require.Error(t, b.Do(ctx, fail)) }},
				{row{2500 * time.Millisecond, "2nd failure", 2, catalog.StateClosed}, func(t *testing.T) { require.Error(t, b.Do(ctx, fail)) }},
				{row{5 * time.Second, "3rd failure", 3, catalog.StateClosed}, func(t *testing.T) { require.Error(t, b.Do(ctx, fail)) }},
				{row{7500 * time.Millisecond, "4th failure", 4, catalog.StateClosed}, func(t *testing.T) { require.Error(t, b.Do(ctx, fail)) }},
				{row{10 * time.Second, "5th failure trips", 0, catalog.StateOpen}, func(t *testing.T) {
					require.ErrorIs(t, b.Do(ctx, fail), errBoom)
					assert.Equal(t, uint64(1), b.Snapshot().Transitions[catalog.StateClosed][catalog.StateOpen])
					assert.Equal(t, t0.Add(10*time.Second), b.Snapshot().TrippedSince)
				}},
				{row{10*time.Second + time.Millisecond, "next request blocked", 0, catalog.StateOpen}, func(t *testing.T) {
					oe := mustReject(t, b.Do(ctx, ok), catalog.StateOpen)
					assert.Equal(t, 30*time.Second-time.Millisecond, oe.Remaining)
				}},
				{row{11 * time.Second, "thousands rejected", 0, catalog.StateOpen}, func(t *testing.T) {
					for range 3000 {
						require.ErrorIs(t, b.Do(ctx, ok), ErrOpen)
					}
					clk.Set(t0.Add(39 * time.Second))
					require.ErrorIs(t, b.Do(ctx, ok), ErrOpen)
				}},
				{row{40 * time.Second, "attempt reset (effective)", 0, catalog.StateHalfOpen}, func(t *testing.T) {
					assert.Equal(t, catalog.StateOpen, storedState(b), "not committed before a call")
					assert.Zero(t, b.Snapshot().Transitions[catalog.StateOpen][catalog.StateHalfOpen])
				}},
				{row{40*time.Second + 100*time.Millisecond, "single probe sent; others rejected", 0, catalog.StateHalfOpen}, func(t *testing.T) {
					var err error
					probe, err = b.Acquire()
					require.NoError(t, err)
					assert.Equal(t, uint64(1), b.Snapshot().Transitions[catalog.StateOpen][catalog.StateHalfOpen])
					mustReject(t, b.Do(ctx, ok), catalog.StateHalfOpen)
					mustReject(t, b.Do(ctx, ok), catalog.StateHalfOpen)
				}},
			}
			if outcome[0] == 'A' {
				rows = append(rows, struct {
					row
					do func(t *testing.T)
				}{row{40*time.Second + 300*time.Millisecond, "probe succeeds → reset", 0, catalog.StateClosed}, func(t *testing.T) {
					probe.Done(nil)
					assert.Equal(t, uint64(1), b.Snapshot().Transitions[catalog.StateHalfOpen][catalog.StateClosed])
					assert.True(t, b.Snapshot().TrippedSince.IsZero())
					require.NoError(t, b.Do(ctx, ok), "full traffic resumes")
				}})
			} else {
				rows = append(rows, struct {
					row
					do func(t *testing.T)
				}{row{40*time.Second + 300*time.Millisecond, "probe fails → trip", 0, catalog.StateOpen}, func(t *testing.T) {
					probe.Done(errBoom)
					assert.Equal(t, uint64(1), b.Snapshot().Transitions[catalog.StateHalfOpen][catalog.StateOpen])
					assert.Equal(t, t0.Add(70*time.Second+300*time.Millisecond), b.Snapshot().OpenUntil, "next probe at T+70.3s")
					assert.Equal(t, t0.Add(10*time.Second), b.Snapshot().TrippedSince, "the episode began at the first trip")
					clk.Set(t0.Add(70*time.Second + 299*time.Millisecond))
					assert.Equal(t, catalog.StateOpen, b.State())
					clk.Set(t0.Add(70*time.Second + 300*time.Millisecond))
					assert.Equal(t, catalog.StateHalfOpen, b.State())
				}})
			}
			for _, r := range rows {
				at(r.at)
				r.do(t)
				if r.at <= 40*time.Second+300*time.Millisecond {
					assert.Equal(t, r.counter, windowOf(b).WindowFailures, "T+%v %s: counter", r.at, r.event)
				}
				if r.event != "probe fails → trip" {
					assert.Equal(t, r.state, b.State(), "T+%v %s: state", r.at, r.event)
				}
			}
			sn := b.Snapshot()
			assert.Equal(t, uint64(3000+4), sn.NotPermitted)
		})
	}
}

// TestSmallestBreakerDemo walks the smallest useful breaker: two consecutive failures trip it,
// it stays open 1 s, one probe decides.
func TestSmallestBreakerDemo(t *testing.T) {
	b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 2, OpenDuration: time.Second, DisableJitter: true, HalfOpenCalls: 1})
	steps := []struct {
		name  string
		run   func() error
		want  error
		state catalog.State
	}{
		{"call1 fail", func() error { return b.Do(ctx, fail) }, errBoom, catalog.StateClosed},
		{"call2 fail", func() error { return b.Do(ctx, fail) }, errBoom, catalog.StateOpen},
		{"call3 rejected", func() error { return b.Do(ctx, ok) }, ErrOpen, catalog.StateOpen},
		{"tick after 1.1s", func() error { clk.Advance(1100 * time.Millisecond); return nil }, nil, catalog.StateHalfOpen},
		{"call4 probe fails", func() error { return b.Do(ctx, fail) }, errBoom, catalog.StateOpen},
		{"call5 rejected", func() error { return b.Do(ctx, ok) }, ErrOpen, catalog.StateOpen},
		{"call6 after 1.1s probe ok", func() error { clk.Advance(1100 * time.Millisecond); return b.Do(ctx, ok) }, nil, catalog.StateClosed},
		{"call7 ok", func() error { return b.Do(ctx, ok) }, nil, catalog.StateClosed},
	}
	for _, s := range steps {
		err := s.run()
		if s.want == nil {
			require.NoError(t, err, s.name)
		} else {
			require.ErrorIs(t, err, s.want, s.name)
		}
		assert.Equal(t, s.state, b.State(), s.name)
	}
	sn := b.Snapshot()
	assert.Equal(t, uint64(2), sn.Calls[catalog.CallSuccessful])
	assert.Equal(t, uint64(3), sn.Calls[catalog.CallFailed])
	assert.Equal(t, uint64(2), sn.NotPermitted)
}

// fortyPercent returns n outcomes (true = failure) with exactly 2 random failures in every 5
// calls, so failure runs never exceed 4.
func fortyPercent(n int, seed uint64) []bool {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]bool, 0, n)
	for len(out) < n {
		block := []bool{true, true, false, false, false}
		r.Shuffle(len(block), func(i, j int) { block[i], block[j] = block[j], block[i] })
		out = append(out, block...)
	}
	return out[:n]
}

// A steady 40% failure rate trips a count window with a 0.3 threshold, but never five
// failures in a row.
func TestFortyPercentFailures(t *testing.T) {
	seq := fortyPercent(1000, 42)
	run := func(b *Breaker) (tripped bool) {
		for _, f := range seq {
			fn := ok
			if f {
				fn = fail
			}
			if errors.Is(b.Do(ctx, fn), ErrOpen) {
				return true
			}
		}
		return b.Snapshot().Transitions[catalog.StateClosed][catalog.StateOpen] > 0
	}
	window, _, _ := newTest(t, Config{WindowSize: 100, MinCalls: 20, FailureRateThreshold: 0.3})
	assert.True(t, run(window), "a count window at 30%% trips on steady 40%% failures")
	assert.Equal(t, uint64(1), window.Snapshot().Transitions[catalog.StateClosed][catalog.StateOpen])

	consecutive, _, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 5})
	assert.False(t, run(consecutive), "a consecutive-5 breaker is blind to steady 40%% failures")
	assert.Equal(t, uint64(600), consecutive.Snapshot().Calls[catalog.CallSuccessful])
	assert.Equal(t, uint64(400), consecutive.Snapshot().Calls[catalog.CallFailed])
}

func TestSlowSuccessesReturnValueAndTrip(t *testing.T) {
	b, clk, _ := newTest(t, Config{WindowSize: 10, MinCalls: 10, SlowCallDuration: 100 * time.Millisecond, SlowCallRateThreshold: 0.8})
	slowFn := func(context.Context) (string, error) {
		clk.Advance(200 * time.Millisecond)
		return "value", nil
	}
	for i := range 10 {
		v, err := Call(ctx, b, slowFn)
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, "value", v, "a slow success returns its value")
	}
	assert.Equal(t, catalog.StateOpen, b.State())
	sn := b.Snapshot()
	assert.Equal(t, uint64(10), sn.Calls[catalog.CallSlowSuccessful])
	assert.Zero(t, sn.Calls[catalog.CallSuccessful]+sn.Calls[catalog.CallFailed])
	assert.True(t, sn.DurationsRecorded)
	d := sn.Durations[catalog.CallSuccessful]
	assert.Equal(t, uint64(10), d.Count, "slow successes are observed as successful")
	assert.InDelta(t, 2.0, d.Sum, 1e-9)
	cum := d.Cumulative(catalog.DurationBuckets)
	assert.Equal(t, uint64(0), cum[0.125])
	assert.Equal(t, uint64(10), cum[0.25], "200ms falls in the ≤250ms bucket")
	assert.Zero(t, sn.Durations[catalog.CallFailed].Count)
	_, err := Call(ctx, b, slowFn)
	mustReject(t, err, catalog.StateOpen)

	// Exactly at the slow-call duration is not slow; slow failures are slow_failed.
	b2, clk2, _ := newTest(t, Config{WindowSize: 10, SlowCallDuration: 100 * time.Millisecond})
	require.NoError(t, b2.Do(ctx, func(context.Context) error { clk2.Advance(100 * time.Millisecond); return nil }))
	require.Error(t, b2.Do(ctx, func(context.Context) error { clk2.Advance(101 * time.Millisecond); return errBoom }))
	assert.Equal(t, uint64(1), b2.Snapshot().Calls[catalog.CallSuccessful])
	assert.Equal(t, uint64(1), b2.Snapshot().Calls[catalog.CallSlowFailed])
}

func TestMinimumCallsRespected(t *testing.T) {
	for _, w := range []WindowKind{CountBased, TimeBased} {
		t.Run(string(w), func(t *testing.T) {
			b, _, _ := newTest(t, Config{Window: w, MinCalls: 20})
			for i := range 19 {
				require.ErrorIs(t, b.Do(ctx, fail), errBoom, "call %d", i)
			}
			assert.Equal(t, catalog.StateClosed, b.State(), "19 failures of 19 calls stay below the minimum")
			assert.True(t, math.IsNaN(b.Snapshot().FailureRate), "rate is NaN below the minimum")
			require.ErrorIs(t, b.Do(ctx, fail), errBoom)
			assert.Equal(t, catalog.StateOpen, b.State())
		})
	}
	// A success that lifts the window to the minimum trips it when the rate is already high.
	b, _, _ := newTest(t, Config{MinCalls: 4})
	for range 3 {
		require.Error(t, b.Do(ctx, fail))
	}
	require.NoError(t, b.Do(ctx, ok))
	assert.Equal(t, catalog.StateOpen, b.State(), "3 failures of 4 calls ≥ 0.5")
}

func TestCountWindowSlides(t *testing.T) {
	b, _, _ := newTest(t, Config{WindowSize: 10, MinCalls: 10, FailureRateThreshold: 0.5})
	for range 4 {
		require.Error(t, b.Do(ctx, fail))
	}
	for range 16 {
		require.NoError(t, b.Do(ctx, ok))
	}
	sn := b.Snapshot()
	assert.Equal(t, int64(10), windowOf(b).WindowCalls)
	assert.Zero(t, windowOf(b).WindowFailures, "the failures slid out of the last 10 calls")
	assert.Equal(t, 0.0, sn.FailureRate)
	for range 4 {
		require.Error(t, b.Do(ctx, fail))
	}
	assert.Equal(t, catalog.StateClosed, b.State())
	assert.InDelta(t, 0.4, b.Snapshot().FailureRate, 1e-9)
	require.Error(t, b.Do(ctx, fail))
	assert.Equal(t, catalog.StateOpen, b.State(), "5 of the last 10")
}

func TestTimeWindowExpires(t *testing.T) {
	b, clk, _ := newTest(t, Config{Window: TimeBased, WindowDuration: 10 * time.Second, MinCalls: 4})
	for range 3 {
		require.Error(t, b.Do(ctx, fail))
	}
	clk.Advance(9 * time.Second)
	assert.Equal(t, int64(3), windowOf(b).WindowCalls)
	clk.Advance(time.Second)
	assert.Equal(t, int64(0), windowOf(b).WindowCalls, "10 s later the bucket has left the window")
	for range 3 {
		require.NoError(t, b.Do(ctx, ok))
	}
	require.Error(t, b.Do(ctx, fail))
	assert.Equal(t, catalog.StateClosed, b.State(), "old failures no longer count: 1 of 4")
	assert.Equal(t, int64(4), windowOf(b).WindowCalls)
	assert.Equal(t, int64(1), windowOf(b).WindowFailures)
	require.Error(t, b.Do(ctx, fail))
	require.Error(t, b.Do(ctx, fail))
	assert.Equal(t, catalog.StateOpen, b.State(), "3 of 6 ≥ 0.5")
}

func TestHalfOpenAdmitsExactlyThreeOfHundred(t *testing.T) {
	b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 3, OpenDuration: time.Second, DisableJitter: true})
	tripConsecutive(t, b, 1)
	clk.Advance(time.Second)

	var admitted atomic.Int32
	entered := make(chan struct{}, 100)
	rejected := make(chan struct{}, 100)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.Do(ctx, func(context.Context) error {
				admitted.Add(1)
				entered <- struct{}{}
				<-release
				return nil
			})
			if errors.Is(err, ErrOpen) {
				rejected <- struct{}{}
			}
		}()
	}
	in, out := 0, 0
	for in+out < 100 {
		select {
		case <-entered:
			in++
		case <-rejected:
			out++
		}
	}
	assert.Equal(t, 3, in)
	assert.Equal(t, 97, out)
	assert.Equal(t, int32(3), admitted.Load())
	close(release)
	wg.Wait()
	assert.Equal(t, catalog.StateClosed, b.State(), "three successful probes close the breaker")
	assert.Equal(t, uint64(97), b.Snapshot().NotPermitted)
	assert.Equal(t, uint64(3), b.Snapshot().Calls[catalog.CallSuccessful])
}

func TestHalfOpenRules(t *testing.T) {
	setup := func(t *testing.T) (*Breaker, *clock.Fake) {
		b, clk, _ := newTest(t, Config{WindowSize: 10, MinCalls: 1, HalfOpenCalls: 3, FailureRateThreshold: 0.5, OpenDuration: time.Second, DisableJitter: true})
		require.Error(t, b.Do(ctx, fail))
		require.Equal(t, catalog.StateOpen, b.State())
		clk.Advance(time.Second)
		return b, clk
	}
	t.Run("one failure of three closes", func(t *testing.T) {
		b, _ := setup(t)
		require.Error(t, b.Do(ctx, fail))
		assert.Equal(t, catalog.StateHalfOpen, b.State())
		require.NoError(t, b.Do(ctx, ok))
		require.NoError(t, b.Do(ctx, ok))
		assert.Equal(t, catalog.StateClosed, b.State())
		assert.Zero(t, windowOf(b).WindowCalls, "the transition zeroed the window")
	})
	t.Run("second failure reopens at once", func(t *testing.T) {
		b, _ := setup(t)
		require.Error(t, b.Do(ctx, fail))
		require.Error(t, b.Do(ctx, fail))
		assert.Equal(t, catalog.StateOpen, b.State())
	})
	t.Run("max duration reopens", func(t *testing.T) {
		b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1, HalfOpenMaxDuration: 5 * time.Second, OpenDuration: time.Second, DisableJitter: true})
		tripConsecutive(t, b, 1)
		clk.Advance(time.Second)
		hung, err := b.Acquire()
		require.NoError(t, err)
		mustReject(t, b.Do(ctx, ok), catalog.StateHalfOpen)
		clk.Advance(5 * time.Second)
		assert.Equal(t, catalog.StateOpen, b.State(), "effective state once the probes overran")
		oe := mustReject(t, b.Do(ctx, ok), catalog.StateOpen)
		assert.Equal(t, time.Second, oe.Remaining)
		assert.Equal(t, uint64(2), b.Snapshot().Transitions[catalog.StateHalfOpen][catalog.StateOpen]+b.Snapshot().Transitions[catalog.StateClosed][catalog.StateOpen])
		hung.Done(nil) // late: decides nothing
		assert.Equal(t, catalog.StateOpen, b.State())
		clk.Advance(time.Second)
		require.NoError(t, b.Do(ctx, ok))
		assert.Equal(t, catalog.StateClosed, b.State())
	})
}

func TestProbePermitReturnedOnPanicAndCancel(t *testing.T) {
	b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1, OpenDuration: time.Second, DisableJitter: true})
	tripConsecutive(t, b, 1)
	clk.Advance(time.Second)

	func() {
		defer func() { assert.Equal(t, "kaboom", recover()) }()
		_ = b.Do(ctx, func(context.Context) error { panic("kaboom") })
	}()
	assert.Equal(t, uint64(1), b.Snapshot().Calls[catalog.CallIgnored])
	assert.Equal(t, catalog.StateHalfOpen, b.State())
	assert.Equal(t, 0, b.Snapshot().HalfOpenProbes, "the panicking probe returned its permit")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := b.Do(cctx, func(ctx context.Context) error { return ctx.Err() })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, uint64(2), b.Snapshot().Calls[catalog.CallIgnored])
	assert.Equal(t, 0, b.Snapshot().HalfOpenProbes, "the cancelled probe returned its permit")

	_, err = Call(ctx, b, func(context.Context) (int, error) { return 0, classify.Business(errors.New("not found")) })
	require.Error(t, err)
	assert.Equal(t, uint64(3), b.Snapshot().Calls[catalog.CallIgnored])

	// The permit is free: the next probe is admitted and decides.
	require.NoError(t, b.Do(ctx, ok))
	assert.Equal(t, catalog.StateClosed, b.State())
}

func TestJitterDrawnAtEachTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	b, _, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, OpenDuration: 20 * time.Second, Rand: clock.Locked(r)})
	base := 20 * time.Second
	seen := map[time.Duration]bool{}
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for range 10000 {
		require.Error(t, b.Do(ctx, fail))
		p := drawnOpenPeriod(b)
		require.GreaterOrEqual(t, p, base*8/10)
		require.LessOrEqual(t, p, base*12/10)
		seen[p] = true
		lo, hi = min(lo, p), max(hi, p)
		b.Reset()
	}
	assert.Greater(t, len(seen), 1000, "periods are drawn afresh")
	assert.Less(t, lo, base*81/100, "the range is used")
	assert.Greater(t, hi, base*119/100, "the range is used")
}

func TestOpenDurationGrowth(t *testing.T) {
	b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1, OpenDuration: time.Second, DisableJitter: true, OpenDurationGrowth: 2, MaxOpenDuration: 5 * time.Second})
	tripConsecutive(t, b, 1)
	var got []time.Duration
	for range 5 {
		p := drawnOpenPeriod(b)
		got = append(got, p)
		clk.Advance(p)
		require.Error(t, b.Do(ctx, fail)) // probe fails: re-trip
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	clk.Advance(5 * time.Second)
	require.NoError(t, b.Do(ctx, ok))
	tripConsecutive(t, b, 1)
	assert.Equal(t, time.Second, drawnOpenPeriod(b), "closing resets the growth")
}

func TestStateIsPureRead(t *testing.T) {
	b, clk, trs := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, OpenDuration: time.Second, DisableJitter: true})
	tripConsecutive(t, b, 1)
	before := b.Snapshot()
	clk.Advance(2 * time.Second)
	for range 100 {
		assert.Equal(t, catalog.StateHalfOpen, b.State())
		_ = b.Snapshot()
	}
	after := b.Snapshot()
	assert.Equal(t, catalog.StateOpen, storedState(b), "reading never commits a transition")
	assert.Equal(t, catalog.StateHalfOpen, after.State)
	assert.Equal(t, before.Transitions, after.Transitions)
	assert.Len(t, *trs, 1)
	require.NoError(t, b.Do(ctx, ok))
	assert.Equal(t, uint64(1), b.Snapshot().Transitions[catalog.StateOpen][catalog.StateHalfOpen], "the next call commits it")
}

func TestReconfigureKeepsCounts(t *testing.T) {
	b, _, _ := newTest(t, Config{WindowSize: 20, MinCalls: 10})
	for i := range 10 {
		if i%3 == 0 {
			require.Error(t, b.Do(ctx, fail))
		} else {
			require.NoError(t, b.Do(ctx, ok))
		}
	}
	before, bw := b.Snapshot(), windowOf(b)
	require.Equal(t, int64(10), bw.WindowCalls)
	require.Equal(t, int64(4), bw.WindowFailures)

	require.NoError(t, b.Reconfigure(Config{WindowSize: 20, MinCalls: 10, FailureRateThreshold: 0.9, OpenDuration: time.Minute}))
	after := b.Snapshot()
	assert.Equal(t, before.Calls, after.Calls)
	assert.Equal(t, bw, windowOf(b), "same window shape: the window is kept")
	assert.Equal(t, 0.9, after.FailureRateThreshold)
	assert.Equal(t, time.Minute, after.OpenDuration)
	assert.IsType(t, &clock.Fake{}, b.Config().Clock, "the clock is kept")

	// The new threshold applies: 4 of 10 failed; two more failures reach 6 of 12 = 0.5 < 0.9.
	require.Error(t, b.Do(ctx, fail))
	require.Error(t, b.Do(ctx, fail))
	assert.Equal(t, catalog.StateClosed, b.State())

	err := b.Reconfigure(Config{FailureRateThreshold: 7})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "FailureRateThreshold", ce.Field)
	assert.Equal(t, 0.9, b.Snapshot().FailureRateThreshold, "a rejected config changes nothing")

	err = b.Reconfigure(Config{Clock: clock.NewFake(t0)})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Clock", ce.Field)

	// A new window shape restarts the window but keeps the cumulative counts.
	calls := b.Snapshot().Calls
	require.NoError(t, b.Reconfigure(Config{Window: ConsecutiveFailures, WindowSize: 3}))
	sn := b.Snapshot()
	assert.Equal(t, calls, sn.Calls)
	assert.Zero(t, windowOf(b).WindowFailures)
	assert.Equal(t, catalog.StateClosed, storedState(b))
	for range 3 {
		require.Error(t, b.Do(ctx, fail))
	}
	assert.Equal(t, catalog.StateOpen, b.State())
}

func TestModes(t *testing.T) {
	b, _, _ := newTest(t, Config{WindowSize: 10, MinCalls: 2})
	b.MetricsOnly()
	for range 10 {
		require.ErrorIs(t, b.Do(ctx, fail), errBoom)
	}
	assert.Equal(t, catalog.StateMetricsOnly, b.State(), "shadow mode never trips")
	sn := b.Snapshot()
	assert.Equal(t, 1.0, sn.FailureRate, "but keeps the window rates current")
	assert.Equal(t, uint64(10), sn.Calls[catalog.CallFailed])

	b.Disable()
	for range 5 {
		require.ErrorIs(t, b.Do(ctx, fail), errBoom)
	}
	done, err := b.Acquire()
	require.NoError(t, err)
	done.Done(errBoom)
	assert.Equal(t, uint64(10), b.Snapshot().Calls[catalog.CallFailed], "disabled records nothing")
	assert.True(t, math.IsNaN(b.Snapshot().FailureRate))

	b.ForceOpen()
	oe := mustReject(t, b.Do(ctx, ok), catalog.StateForcedOpen)
	assert.Zero(t, oe.Remaining)
	assert.Equal(t, catalog.StateForcedOpen, b.State())
	assert.False(t, b.Snapshot().TrippedSince.IsZero())
	b.Reset()
	assert.Equal(t, catalog.StateClosed, b.State())
	assert.True(t, b.Snapshot().TrippedSince.IsZero())
	require.NoError(t, b.Do(ctx, ok))
}

func TestTwoStepAPI(t *testing.T) {
	b, clk, _ := newTest(t, Config{WindowSize: 10, MinCalls: 2, SlowCallDuration: time.Second})
	done, err := b.Acquire()
	require.NoError(t, err)
	clk.Advance(2 * time.Second)
	done.Done(nil)
	assert.Equal(t, uint64(1), b.Snapshot().Calls[catalog.CallSlowSuccessful])

	p, err := b.Acquire()
	require.NoError(t, err)
	clk.Advance(3 * time.Second)
	p.Done(errBoom)
	assert.Equal(t, uint64(1), b.Snapshot().Calls[catalog.CallSlowFailed])
	assert.Equal(t, catalog.StateOpen, b.State())
	_, err = b.Acquire()
	mustReject(t, err, catalog.StateOpen)
	var zero Permit
	zero.Done(nil) // inert
}

func TestClassifier(t *testing.T) {
	biz := errors.New("insufficient funds")
	b, _, _ := newTest(t, Config{WindowSize: 10, MinCalls: 1, Classify: func(err error) catalog.CallKind {
		if errors.Is(err, biz) {
			return catalog.CallSuccessful
		}
		return DefaultClassify(err)
	}})
	require.ErrorIs(t, b.Do(ctx, func(context.Context) error { return biz }), biz, "errors are returned untouched")
	require.Error(t, b.Do(ctx, func(context.Context) error { return classify.Business(errBoom) }))
	assert.Equal(t, uint64(1), b.Snapshot().Calls[catalog.CallSuccessful])
	assert.Equal(t, uint64(1), b.Snapshot().Calls[catalog.CallIgnored])
	assert.Equal(t, catalog.StateClosed, b.State())

	assert.Equal(t, catalog.CallIgnored, DefaultClassify(fmt.Errorf("wrapped: %w", context.Canceled)))
	assert.Equal(t, catalog.CallFailed, DefaultClassify(context.DeadlineExceeded))
	assert.Equal(t, catalog.CallIgnored, DefaultClassify(fmt.Errorf("x: %w", classify.Business(errBoom))))
	assert.Equal(t, catalog.CallSuccessful, DefaultClassify(nil))
}

func TestEventsAndOutcomeListener(t *testing.T) {
	hub := new(events.Hub)
	var rejections []events.Rejection
	var outcomes []events.CallOutcome
	hub.Rejections.Add(func(r events.Rejection) { rejections = append(rejections, r) })
	b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, Events: hub, DisableDurationHistogram: true})
	require.NoError(t, b.Do(ctx, ok))
	remove := hub.Outcomes.Add(func(o events.CallOutcome) { outcomes = append(outcomes, o) })
	require.Error(t, b.Do(ctx, func(context.Context) error { clk.Advance(time.Millisecond); return errBoom }))
	remove()
	require.ErrorIs(t, b.Do(ctx, ok), ErrOpen)
	require.Len(t, outcomes, 1, "outcomes only while a listener is registered")
	assert.Equal(t, events.CallOutcome{Name: "dep", Kind: catalog.CallFailed, Duration: time.Millisecond, Err: errBoom}, outcomes[0])
	require.Len(t, rejections, 1)
	assert.Equal(t, events.Rejection{Primitive: catalog.CircuitBreaker, Name: "dep", State: catalog.StateOpen, At: t0.Add(time.Millisecond)}, rejections[0])
}

func TestLateResultsCountedButIgnored(t *testing.T) {
	b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 2, HalfOpenCalls: 1, OpenDuration: time.Second, DisableJitter: true})
	slow, err := b.Acquire() // admitted while closed
	require.NoError(t, err)
	tripConsecutive(t, b, 2)
	slow.Done(errBoom) // late failure from the closed epoch
	assert.Equal(t, uint64(3), b.Snapshot().Calls[catalog.CallFailed], "counted in calls_total")
	assert.Zero(t, windowOf(b).WindowFailures, "but not in the new state's decisions")
	clk.Advance(time.Second)
	require.NoError(t, b.Do(ctx, ok))
	assert.Equal(t, catalog.StateClosed, b.State())
}

func TestConcurrentExactAccounting(t *testing.T) {
	const goroutines, perG = 32, 5000
	b, err := New("dep", Config{WindowSize: 50, MinCalls: 10, FailureRateThreshold: 0.3, OpenDuration: 50 * time.Microsecond, HalfOpenCalls: 2, SlowCallDuration: time.Millisecond})
	require.NoError(t, err)
	var made atomic.Uint64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for i := range perG {
				made.Add(1)
				var fnErr error
				switch x := r.IntN(10); {
				case x < 3:
					fnErr = errBoom
				case x == 3:
					fnErr = classify.Business(errBoom)
				}
				switch i % 3 {
				case 0:
					_ = b.Do(ctx, func(context.Context) error { return fnErr })
				case 1:
					_, _ = Call(ctx, b, func(context.Context) (int, error) { return i, fnErr })
				default:
					if p, err := b.Acquire(); err == nil {
						p.Done(fnErr)
					}
				}
			}
		}()
	}
	wg.Wait()
	sn := b.Snapshot()
	var sum uint64
	for _, c := range sn.Calls {
		sum += c
	}
	assert.Equal(t, uint64(goroutines*perG), made.Load())
	assert.Equal(t, made.Load(), sum+sn.NotPermitted, "every call counted exactly once")
	assert.NotZero(t, sn.Transitions[catalog.StateClosed][catalog.StateOpen], "the run exercised trips")
}

func TestClosedPathAllocatesNothing(t *testing.T) {
	for _, cfg := range []Config{
		{DisableDurationHistogram: true},
		{},
		{SlowCallDuration: time.Second},
		{Window: TimeBased},
		{Window: ConsecutiveFailures},
	} {
		b, err := New("dep", cfg)
		require.NoError(t, err)
		fn := func(context.Context) (int, error) { return 1, nil }
		allocs := testing.AllocsPerRun(1000, func() {
			_ = b.Do(ctx, ok)
			_, _ = Call(ctx, b, fn)
			p, err := b.Acquire()
			if err == nil {
				p.Done(nil)
			}
		})
		assert.Zero(t, allocs, "%+v", cfg)
	}
	b, err := New("dep", Config{DisableDurationHistogram: true})
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		if done, err := b.Acquire(); err == nil {
			done.Done(nil)
		}
	}), "Allow on an untimed closed breaker")
}

func TestSnapshotAllocatesNothing(t *testing.T) {
	for _, cfg := range []Config{{}, {Window: TimeBased}, {Window: ConsecutiveFailures}} {
		b, err := New("dep", cfg)
		require.NoError(t, err)
		require.NoError(t, b.Do(ctx, ok))
		var sn Snapshot
		assert.Zero(t, testing.AllocsPerRun(100, func() { sn = b.Snapshot() }), "%+v", cfg)
		assert.Equal(t, uint64(1), sn.Calls[catalog.CallSuccessful])
	}
}

func TestTripsCountedByCause(t *testing.T) {
	slow := func(clk *clock.Fake, err error) func(context.Context) error {
		return func(context.Context) error { clk.Advance(2 * time.Second); return err }
	}
	tests := []struct {
		name string
		cfg  Config
		// trip drives the breaker into its trip and returns after it.
		trip func(t *testing.T, b *Breaker, clk *clock.Fake)
		want catalog.TripCause
		// episode is the cause of the trip that began the episode (when it differs from want).
		episode catalog.TripCause
	}{
		{"failure rate", Config{WindowSize: 4, MinCalls: 4}, func(t *testing.T, b *Breaker, _ *clock.Fake) {
			for _, fn := range []func(context.Context) error{ok, ok, fail, fail} {
				_ = b.Do(ctx, fn)
			}
		}, catalog.TripFailureRate, catalog.TripFailureRate},
		{"slow-call rate", Config{WindowSize: 4, MinCalls: 4, SlowCallDuration: time.Second}, func(t *testing.T, b *Breaker, clk *clock.Fake) {
			for range 4 {
				require.NoError(t, b.Do(ctx, slow(clk, nil)))
			}
		}, catalog.TripSlowCallRate, catalog.TripSlowCallRate},
		{"consecutive failures", Config{Window: ConsecutiveFailures, WindowSize: 2}, func(t *testing.T, b *Breaker, _ *clock.Fake) {
			tripConsecutive(t, b, 2)
		}, catalog.TripConsecutiveFailures, catalog.TripConsecutiveFailures},
		{"consecutive slow calls", Config{Window: ConsecutiveFailures, WindowSize: 2, SlowCallDuration: time.Second}, func(t *testing.T, b *Breaker, clk *clock.Fake) {
			require.NoError(t, b.Do(ctx, slow(clk, nil)))
			require.NoError(t, b.Do(ctx, slow(clk, nil)))
		}, catalog.TripSlowCallRate, catalog.TripSlowCallRate},
		{"probe failed", Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1}, func(t *testing.T, b *Breaker, clk *clock.Fake) {
			tripConsecutive(t, b, 1)
			clk.Advance(time.Minute)
			require.ErrorIs(t, b.Do(ctx, fail), errBoom)
		}, catalog.TripProbeFailed, catalog.TripConsecutiveFailures},
		{"probe slow", Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1, SlowCallDuration: time.Second}, func(t *testing.T, b *Breaker, clk *clock.Fake) {
			tripConsecutive(t, b, 1)
			clk.Advance(time.Minute)
			require.NoError(t, b.Do(ctx, slow(clk, nil)))
		}, catalog.TripProbeFailed, catalog.TripConsecutiveFailures},
		{"half-open max duration", Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1, HalfOpenMaxDuration: time.Second}, func(t *testing.T, b *Breaker, clk *clock.Fake) {
			tripConsecutive(t, b, 1)
			clk.Advance(30 * time.Second) // the end of the open period: a minute would be past the half-open limit
			_, err := b.Acquire()         // the probe never reports
			require.NoError(t, err)
			clk.Advance(2 * time.Second)
			_, _ = b.Acquire() // commits the reopen (if not committed already)
		}, catalog.TripMaxHalfOpenDuration, catalog.TripConsecutiveFailures},
		{"forced", Config{}, func(t *testing.T, b *Breaker, _ *clock.Fake) {
			b.ForceOpen()
		}, catalog.TripForced, catalog.TripForced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.DisableJitter = true
			b, clk, trs := newTest(t, tt.cfg)
			tt.trip(t, b, clk)
			sn := b.Snapshot()
			var want [catalog.NumTripCauses]uint64
			want[tt.want]++
			if tt.episode != tt.want {
				want[tt.episode]++ // the trip that began the episode
			}
			assert.Equal(t, want, sn.Trips)
			assert.Equal(t, tt.episode, sn.TripCause, "the episode keeps the cause of its first trip")
			require.NotEmpty(t, *trs)
			last := (*trs)[len(*trs)-1]
			assert.True(t, last.Trip(), "%s→%s", last.From, last.To)
			assert.Equal(t, tt.want, last.Cause, "the event carries the cause")
			for _, tr := range *trs {
				if !tr.Trip() {
					assert.Zero(t, tr.Cause, "%s→%s is not a trip", tr.From, tr.To)
				}
			}

			b.Reset()
			sn = b.Snapshot()
			assert.True(t, sn.TrippedSince.IsZero())
			assert.Equal(t, want, sn.Trips, "trips are cumulative")
		})
	}
}

type statusErr int

func (s statusErr) Error() string   { return fmt.Sprintf("HTTP %d", int(s)) }
func (s statusErr) HTTPStatus() int { return int(s) }

func TestDefaultClassifyFollowsFailureClassification(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want catalog.CallKind
	}{
		{"404: the dependency answered", statusErr(404), catalog.CallSuccessful},
		{"401", statusErr(401), catalog.CallSuccessful},
		{"501 permanent", statusErr(501), catalog.CallSuccessful},
		{"503", statusErr(503), catalog.CallFailed},
		{"429", statusErr(429), catalog.CallFailed},
		{"408", statusErr(408), catalog.CallFailed},
		{"own rejection", &OpenError{Name: "x"}, catalog.CallIgnored},
		{"plain error", errBoom, catalog.CallFailed},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), catalog.CallFailed},
		{"cancelled", fmt.Errorf("call: %w", context.Canceled), catalog.CallIgnored},
		// Business errors are ignored, whatever they wrap: the dependency answered as
		// designed, and nothing about its health follows.
		{"business", classify.Business(errBoom), catalog.CallIgnored},
		{"business wrapped", fmt.Errorf("transfer: %w", classify.Business(errBoom)), catalog.CallIgnored},
		{"business 409", classify.Business(statusErr(409)), catalog.CallIgnored},
		{"business 503", classify.Business(statusErr(503)), catalog.CallIgnored},
		{"business deadline", classify.Business(context.DeadlineExceeded), catalog.CallIgnored},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, DefaultClassify(tt.err), tt.name)
	}

	b, _, _ := newTest(t, Config{WindowSize: 10, MinCalls: 1})
	for i := 0; i < 5; i++ {
		_ = b.Do(ctx, func(context.Context) error { return statusErr(404) })
	}
	assert.Equal(t, catalog.StateClosed, b.State(), "4xx never trip a standalone breaker")
	assert.Equal(t, uint64(5), b.Snapshot().Calls[catalog.CallSuccessful])
}

// A user classifier that calls every error a failure still cannot make a business error, the
// caller's cancellation or a stormwatch rejection trip the breaker: the rule the pipeline's
// breaker applies holds for a standalone one.
func TestClassifierCannotCountNeverFailures(t *testing.T) {
	failAll := func(error) catalog.CallKind { return catalog.CallFailed }
	b, _, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, Classify: failAll})
	rejected, err := New("other", Config{Window: ConsecutiveFailures, WindowSize: 1})
	require.NoError(t, err)
	rejected.ForceOpen()
	rej := rejected.Do(ctx, ok)
	require.ErrorIs(t, rej, ErrOpen)
	for _, e := range []error{
		classify.Business(errBoom),
		fmt.Errorf("call: %w", context.Canceled),
		fmt.Errorf("layer: %w", rej),
	} {
		require.ErrorIs(t, b.Do(ctx, func(context.Context) error { return e }), e)
	}
	assert.Equal(t, uint64(3), b.Snapshot().Calls[catalog.CallIgnored])
	assert.Equal(t, catalog.StateClosed, b.State())
	require.Error(t, b.Do(ctx, fail))
	assert.Equal(t, catalog.StateOpen, b.State(), "other errors are the classifier's to decide")
}
