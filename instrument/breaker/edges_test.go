package breaker

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// feedOutcomes runs one call per letter: f fails, s succeeds, w succeeds slowly (it advances
// the fake clock by slowBy while it runs). Between calls the clock advances by gap.
func feedOutcomes(t *testing.T, b *Breaker, clk *clock.Fake, pattern string, gap time.Duration) {
	t.Helper()
	const slowBy = 2 * time.Second
	for _, c := range pattern {
		switch c {
		case 'f':
			require.ErrorIs(t, b.Do(ctx, fail), errBoom)
		case 's':
			require.NoError(t, b.Do(ctx, ok))
		case 'w':
			require.NoError(t, b.Do(ctx, func(context.Context) error { clk.Advance(slowBy); return nil }))
		default:
			t.Fatalf("unknown outcome %q", c)
		}
		clk.Advance(gap)
	}
}

// transitionPairs turns recorded transition events into from→to strings, in order.
func transitionPairs(trs []events.Transition) []string {
	out := make([]string, len(trs))
	for i, tr := range trs {
		out[i] = tr.From.String() + "→" + tr.To.String()
	}
	return out
}

func TestReconfigureEvaluatesTheWindowAtOnce(t *testing.T) {
	count := Config{WindowSize: 10, MinCalls: 10, FailureRateThreshold: 0.5, OpenDuration: time.Minute, DisableJitter: true}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	tests := []struct {
		name    string
		cfg     Config
		before  func(b *Breaker) // run before the outcomes
		feed    string
		gap     time.Duration // clock advance between calls
		newCfg  Config
		wantTrp bool
	}{
		{
			name:    "count window: failure threshold lowered below the rate",
			cfg:     count,
			feed:    "ffffssssss",
			newCfg:  with(count, func(c *Config) { c.FailureRateThreshold = 0.3; c.OpenDuration = 2 * time.Minute }),
			wantTrp: true,
		},
		{
			name:    "count window: failure threshold lowered to exactly the rate",
			cfg:     count,
			feed:    "ffffssssss",
			newCfg:  with(count, func(c *Config) { c.FailureRateThreshold = 0.4; c.OpenDuration = 2 * time.Minute }),
			wantTrp: true,
		},
		{
			name: "count window: slow-call threshold lowered below the slow rate",
			cfg:  with(count, func(c *Config) { c.SlowCallDuration = time.Second; c.SlowCallRateThreshold = 0.8 }),
			feed: "wwwwwsssss",
			newCfg: with(count, func(c *Config) {
				c.SlowCallDuration = time.Second
				c.SlowCallRateThreshold = 0.5
				c.OpenDuration = 2 * time.Minute
			}),
			wantTrp: true,
		},
		{
			name: "time window: failure threshold lowered below the rate",
			cfg:  Config{Window: TimeBased, WindowDuration: 10 * time.Second, MinCalls: 10, FailureRateThreshold: 0.5, OpenDuration: time.Minute, DisableJitter: true},
			feed: "ffffssssss",
			gap:  100 * time.Millisecond,
			newCfg: Config{Window: TimeBased, WindowDuration: 10 * time.Second, MinCalls: 10, FailureRateThreshold: 0.3,
				OpenDuration: 2 * time.Minute, DisableJitter: true},
			wantTrp: true,
		},
		{
			name:    "count window: MinCalls lowered to the calls held",
			cfg:     count,
			feed:    "ffff",
			newCfg:  with(count, func(c *Config) { c.MinCalls = 4; c.OpenDuration = 2 * time.Minute }),
			wantTrp: true,
		},
		{
			name:   "count window: below MinCalls nothing is evaluated",
			cfg:    count,
			feed:   "ffff",
			newCfg: with(count, func(c *Config) { c.FailureRateThreshold = 0.3 }),
		},
		{
			name:   "count window: a raised threshold never trips",
			cfg:    count,
			feed:   "ffffssssss",
			newCfg: with(count, func(c *Config) { c.FailureRateThreshold = 0.6 }),
		},
		{
			name:   "metrics_only never trips",
			cfg:    count,
			before: func(b *Breaker) { b.MetricsOnly() },
			feed:   "ffffssssss",
			newCfg: with(count, func(c *Config) { c.FailureRateThreshold = 0.3 }),
		},
		{
			// Consecutive windows have no rate threshold to lower; a new WindowSize is a new
			// window shape and starts a new, empty run.
			name:   "consecutive window: a smaller WindowSize starts a new run",
			cfg:    Config{Window: ConsecutiveFailures, WindowSize: 5, OpenDuration: time.Minute, DisableJitter: true},
			feed:   "ffff",
			newCfg: Config{Window: ConsecutiveFailures, WindowSize: 3, OpenDuration: time.Minute, DisableJitter: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, clk, trs := newTest(t, tt.cfg)
			if tt.before != nil {
				tt.before(b)
			}
			stateBefore := b.State()
			feedOutcomes(t, b, clk, tt.feed, tt.gap)
			before := b.Snapshot()
			require.Equal(t, stateBefore, before.State, "the outcomes alone do not trip")
			nEvents := len(*trs)

			require.NoError(t, b.Reconfigure(tt.newCfg))
			after := b.Snapshot()
			assert.Equal(t, before.Calls, after.Calls, "Reconfigure keeps the counts")
			if !tt.wantTrp {
				assert.Equal(t, stateBefore, after.State)
				assert.Equal(t, stateBefore, storedState(b))
				assert.Equal(t, before.Transitions, after.Transitions)
				assert.Len(t, *trs, nEvents)
				return
			}
			now := clk.Now()
			assert.Equal(t, catalog.StateOpen, after.State, "trips at once")
			assert.Equal(t, catalog.StateOpen, storedState(b), "the trip is committed, not only effective")
			assert.Equal(t, uint64(1), after.Transitions[catalog.StateClosed][catalog.StateOpen])
			require.Len(t, *trs, nEvents+1)
			ev := (*trs)[nEvents]
			assert.Equal(t, []string{"closed→open"}, transitionPairs([]events.Transition{ev}))
			assert.Equal(t, now, ev.At)
			assert.NotEmpty(t, ev.Reason)
			assert.Equal(t, now, after.TrippedSince)
			assert.Equal(t, now.Add(2*time.Minute), after.OpenUntil, "the open period follows the new configuration")

			// Feeding the same outcomes again changes nothing: the breaker rejects them, and
			// the trip is counted once.
			mustReject(t, b.Do(ctx, ok), catalog.StateOpen)
			assert.Equal(t, uint64(1), b.Snapshot().Transitions[catalog.StateClosed][catalog.StateOpen])
		})
	}
}

// The reproduction: fed twice more after lowering, the rate stays 0.4 ≥ 0.3.
func TestReconfigureLoweredThresholdThenSameOutcomes(t *testing.T) {
	b, clk, _ := newTest(t, Config{WindowSize: 10, MinCalls: 10, FailureRateThreshold: 0.5, DisableJitter: true})
	feedOutcomes(t, b, clk, "ffffssssss", 0)
	require.Equal(t, catalog.StateClosed, b.State())
	require.InDelta(t, 0.4, b.Snapshot().FailureRate, 1e-9)
	require.NoError(t, b.Reconfigure(Config{WindowSize: 10, MinCalls: 10, FailureRateThreshold: 0.3, DisableJitter: true}))
	assert.Equal(t, catalog.StateOpen, b.State())
	rejected := 0
	for range 10 {
		if b.Do(ctx, ok) != nil {
			rejected++
		}
	}
	assert.Equal(t, 10, rejected)
	assert.Equal(t, uint64(10), b.Snapshot().NotPermitted)
}

func TestLateProbeDecidesNothing(t *testing.T) {
	const (
		open  = 10 * time.Second
		limit = 5 * time.Second
	)
	tests := []struct {
		name string
		cfg  Config
		trip string
		// run acquires the probes in time, lets the half-open limit pass by late and
		// concludes the last probe then.
		run  func(t *testing.T, b *Breaker, clk *clock.Fake)
		late time.Duration
		// counted is the call kind of the probes' results, added reported times during run (the
		// late one included).
		counted  catalog.CallKind
		reported uint64
	}{
		{
			name: "single probe succeeds at the limit",
			cfg:  Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1},
			trip: "f",
			late: 0, counted: catalog.CallSuccessful, reported: 1,
			run: func(t *testing.T, b *Breaker, clk *clock.Fake) {
				p, err := b.Acquire()
				require.NoError(t, err)
				clk.Advance(limit)
				p.Done(nil)
			},
		},
		{
			name: "single probe succeeds after the limit",
			cfg:  Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1},
			trip: "f",
			late: 500 * time.Millisecond, counted: catalog.CallSuccessful, reported: 1,
			run: func(t *testing.T, b *Breaker, clk *clock.Fake) {
				p, err := b.Acquire()
				require.NoError(t, err)
				clk.Advance(limit + 500*time.Millisecond)
				p.Done(nil)
			},
		},
		{
			name: "single probe fails after the limit",
			cfg:  Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1},
			trip: "f",
			late: 500 * time.Millisecond, counted: catalog.CallFailed, reported: 1,
			run: func(t *testing.T, b *Breaker, clk *clock.Fake) {
				p, err := b.Acquire()
				require.NoError(t, err)
				clk.Advance(limit + 500*time.Millisecond)
				p.Done(errBoom)
			},
		},
		{
			name: "last of three probes succeeds after the limit",
			cfg:  Config{WindowSize: 10, MinCalls: 1, HalfOpenCalls: 3},
			trip: "f",
			late: time.Second, counted: catalog.CallSuccessful, reported: 3,
			run: func(t *testing.T, b *Breaker, clk *clock.Fake) {
				var ps [3]Permit
				for i := range ps {
					var err error
					ps[i], err = b.Acquire()
					require.NoError(t, err)
				}
				ps[0].Done(nil)
				ps[1].Done(nil)
				require.Equal(t, catalog.StateHalfOpen, b.State(), "two of three probes decide nothing yet")
				clk.Advance(limit + time.Second)
				ps[2].Done(nil)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.OpenDuration, cfg.HalfOpenMaxDuration, cfg.DisableJitter = open, limit, true
			b, clk, trs := newTest(t, cfg)
			feedOutcomes(t, b, clk, tt.trip, 0)
			require.Equal(t, catalog.StateOpen, b.State())
			clk.Advance(open)
			before := b.Snapshot()

			tt.run(t, b, clk)
			expiry := t0.Add(open + limit)
			require.Equal(t, expiry.Add(tt.late), clk.Now())

			sn := b.Snapshot()
			assert.Equal(t, before.Calls[tt.counted]+tt.reported, sn.Calls[tt.counted], "the late result is counted")
			assert.Equal(t, catalog.StateOpen, sn.State, "and decides nothing: the half-open period expired")
			assert.Zero(t, sn.Transitions[catalog.StateHalfOpen][catalog.StateClosed], "a late probe never closes the breaker")
			assert.Zero(t, sn.Transitions[catalog.StateHalfOpen][catalog.StateOpen], "nor reopens it: the expiry will, when committed")
			assert.Equal(t, []string{"closed→open", "open→half_open"}, transitionPairs(*trs))

			// The open period drawn at the expiry counts from the expiry, not from the late
			// result.
			clk.Set(expiry.Add(open - time.Nanosecond))
			assert.Equal(t, catalog.StateOpen, b.State())
			clk.Set(expiry.Add(open))
			assert.Equal(t, catalog.StateHalfOpen, b.State())
			require.NoError(t, b.Do(ctx, ok))
			sn = b.Snapshot()
			assert.Equal(t, uint64(1), sn.Transitions[catalog.StateHalfOpen][catalog.StateOpen], "the expiry reopen, counted once")
			require.GreaterOrEqual(t, len(*trs), 4)
			assert.Equal(t, []string{"closed→open", "open→half_open", "half_open→open", "open→half_open"}, transitionPairs(*trs)[:4])
			assert.Equal(t, expiry, (*trs)[2].At)
		})
	}
}

func TestHalfOpenExpiryReopensAtTheInstant(t *testing.T) {
	const (
		open  = 10 * time.Second
		limit = 5 * time.Second
	)
	b, clk, trs := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1,
		OpenDuration: open, HalfOpenMaxDuration: limit, DisableJitter: true})
	at := func(d time.Duration) { clk.Set(t0.Add(d)) }
	feedOutcomes(t, b, clk, "f", 0) // trips at t0; open until t0+10s

	// The first call comes 2 s after the open period ended: the half-open period began when the
	// open period ended, and the committed epoch says so.
	at(12 * time.Second)
	hung, err := b.Acquire()
	require.NoError(t, err)
	require.Len(t, *trs, 2)
	assert.Equal(t, "open→half_open", transitionPairs(*trs)[1])
	assert.Equal(t, t0.Add(open), (*trs)[1].At, "half-open since the end of the open period")

	at(15*time.Second - time.Nanosecond)
	assert.Equal(t, catalog.StateHalfOpen, b.State())
	assert.Equal(t, 1, b.Snapshot().HalfOpenProbes)
	assert.Zero(t, b.Snapshot().OpenUntil)
	at(15 * time.Second)
	assert.Equal(t, catalog.StateOpen, b.State(), "reopened at half-open start + HalfOpenMaxDuration")
	assert.Equal(t, catalog.StateOpen, b.Snapshot().State)
	assert.Equal(t, catalog.StateHalfOpen, storedState(b), "reading committed nothing")
	assert.Zero(t, b.Snapshot().HalfOpenProbes, "the probe belongs to the expired half-open period")
	assert.Equal(t, t0.Add(25*time.Second), b.Snapshot().OpenUntil, "the open period drawn at the limit")

	// A call 2 s after the expiry commits the reopen as of the expiry.
	at(17 * time.Second)
	oe := mustReject(t, b.Do(ctx, ok), catalog.StateOpen)
	assert.Equal(t, 8*time.Second, oe.Remaining, "the new open period counts from the expiry")
	sn := b.Snapshot()
	assert.Equal(t, catalog.StateOpen, storedState(b))
	assert.Equal(t, uint64(1), sn.Transitions[catalog.StateHalfOpen][catalog.StateOpen])
	assert.Equal(t, t0.Add(25*time.Second), sn.OpenUntil)
	assert.Equal(t, open, drawnOpenPeriod(b))
	assert.Equal(t, t0, sn.TrippedSince, "the episode began at the first trip")
	require.Len(t, *trs, 3)
	assert.Equal(t, "half_open→open", transitionPairs(*trs)[2])
	assert.Equal(t, t0.Add(15*time.Second), (*trs)[2].At)

	at(18 * time.Second)
	mustReject(t, b.Do(ctx, ok), catalog.StateOpen)
	assert.Equal(t, uint64(1), b.Snapshot().Transitions[catalog.StateHalfOpen][catalog.StateOpen], "counted once")

	at(25 * time.Second)
	assert.Equal(t, catalog.StateHalfOpen, b.State(), "half-open again at expiry + open period")
	hung.Done(nil) // the probe of the expired half-open period: late
	assert.Equal(t, catalog.StateHalfOpen, b.State())
	assert.Zero(t, b.Snapshot().Transitions[catalog.StateHalfOpen][catalog.StateClosed])

	require.NoError(t, b.Do(ctx, ok))
	sn = b.Snapshot()
	assert.Equal(t, catalog.StateClosed, sn.State)
	assert.True(t, sn.TrippedSince.IsZero())
	assert.Equal(t, []string{"closed→open", "open→half_open", "half_open→open", "open→half_open", "half_open→closed"}, transitionPairs(*trs))
	assert.Equal(t, t0.Add(25*time.Second), (*trs)[3].At)
}

// flip is an instant (offset from t0) at which an idle breaker's effective state changes.
type flip struct {
	at time.Duration
	to catalog.State
}

func TestIdleBreakerChainsThroughExpiries(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		cfg   Config
		flips []flip // after the trip at t0, up to and including the committing call
		call  time.Duration
		// remaining is the rejected call's retry hint, or 0 when the call is a probe.
		remaining time.Duration
	}{
		{
			name: "fixed open duration",
			cfg:  Config{OpenDuration: 10 * s, HalfOpenMaxDuration: 5 * s},
			flips: []flip{
				{10 * s, catalog.StateHalfOpen}, {15 * s, catalog.StateOpen}, {25 * s, catalog.StateHalfOpen}, {30 * s, catalog.StateOpen},
				{40 * s, catalog.StateHalfOpen}, {45 * s, catalog.StateOpen}, {55 * s, catalog.StateHalfOpen}, {60 * s, catalog.StateOpen},
			},
			call: 62 * s, remaining: 8 * s,
		},
		{
			name: "growing open duration",
			cfg:  Config{OpenDuration: s, OpenDurationGrowth: 2, MaxOpenDuration: 4 * s, HalfOpenMaxDuration: s},
			flips: []flip{
				{1 * s, catalog.StateHalfOpen}, {2 * s, catalog.StateOpen}, // re-trip 1: 2 s
				{4 * s, catalog.StateHalfOpen}, {5 * s, catalog.StateOpen}, // re-trip 2: 4 s
				{9 * s, catalog.StateHalfOpen}, {10 * s, catalog.StateOpen}, // re-trip 3: capped at 4 s
				{14 * s, catalog.StateHalfOpen}, {15 * s, catalog.StateOpen},
				{19 * s, catalog.StateHalfOpen},
			},
			call: 19*s + s/2, // admitted as a probe
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Window, cfg.WindowSize, cfg.HalfOpenCalls, cfg.DisableJitter = ConsecutiveFailures, 1, 1, true
			b, clk, trs := newTest(t, cfg)
			feedOutcomes(t, b, clk, "f", 0)
			committed := b.Snapshot()

			// Walk the clock without calls: the effective state follows the timeline exactly,
			// and nothing is committed.
			want := func(d time.Duration) catalog.State {
				st := catalog.StateOpen
				for _, f := range tt.flips {
					if f.at <= d {
						st = f.to
					}
				}
				return st
			}
			// openPeriod returns the open period d falls in: its start and end.
			openPeriod := func(d time.Duration) (from, until time.Duration) {
				until = tt.call + tt.remaining // the open period the committing call meets
				for _, f := range tt.flips {
					switch {
					case f.at <= d && f.to == catalog.StateOpen:
						from = f.at
					case f.at > d:
						return from, f.at
					}
				}
				return from, until
			}
			// Every 250 ms, and on both sides of every flip.
			var checks []time.Duration
			for d := time.Duration(0); d <= tt.call; d += 250 * time.Millisecond {
				checks = append(checks, d)
			}
			for _, f := range tt.flips {
				checks = append(checks, f.at-time.Nanosecond, f.at)
			}
			slices.Sort(checks)
			for _, d := range slices.Compact(checks) {
				if d > tt.call {
					break
				}
				clk.Set(t0.Add(d))
				require.Equal(t, want(d), b.State(), "at %v", d)
				sn := b.Snapshot()
				require.Equal(t, want(d), sn.State, "snapshot at %v", d)
				require.Equal(t, catalog.StateOpen, storedState(b), "reading commits nothing (at %v)", d)
				require.Equal(t, committed.Transitions, sn.Transitions)
				require.Equal(t, committed.Trips, sn.Trips)
				require.Equal(t, t0, sn.TrippedSince)
				require.Equal(t, catalog.TripConsecutiveFailures, sn.TripCause, "the episode's cause")
				if want(d) == catalog.StateOpen {
					from, until := openPeriod(d)
					require.Equal(t, t0.Add(until), sn.OpenUntil, "the open period walked to (at %v)", d)
					require.Equal(t, until-from, drawnOpenPeriod(b), "at %v", d)
				} else {
					require.Zero(t, sn.OpenUntil, "at %v", d)
					require.Zero(t, drawnOpenPeriod(b), "at %v", d)
				}
			}
			require.Len(t, *trs, 1)

			// One call commits the whole chain, each transition at its own instant.
			clk.Set(t0.Add(tt.call))
			err := b.Do(ctx, ok)
			if tt.remaining > 0 {
				oe := mustReject(t, err, catalog.StateOpen)
				assert.Equal(t, tt.remaining, oe.Remaining)
			} else {
				require.NoError(t, err)
			}
			wantPairs := []string{"closed→open"}
			wantAt := []time.Time{t0}
			prev := catalog.StateOpen
			for _, f := range tt.flips {
				wantPairs = append(wantPairs, prev.String()+"→"+f.to.String())
				wantAt = append(wantAt, t0.Add(f.at))
				prev = f.to
			}
			if tt.remaining == 0 {
				wantPairs = append(wantPairs, "half_open→closed")
				wantAt = append(wantAt, t0.Add(tt.call))
			}
			assert.Equal(t, wantPairs, transitionPairs(*trs))
			var gotAt []time.Time
			for _, tr := range *trs {
				gotAt = append(gotAt, tr.At)
			}
			assert.Equal(t, wantAt, gotAt)
			nHalf, nOpen := 0, 0
			for _, f := range tt.flips {
				if f.to == catalog.StateHalfOpen {
					nHalf++
				} else {
					nOpen++
				}
			}
			sn := b.Snapshot()
			assert.Equal(t, uint64(nHalf), sn.Transitions[catalog.StateOpen][catalog.StateHalfOpen])
			assert.Equal(t, uint64(nOpen), sn.Transitions[catalog.StateHalfOpen][catalog.StateOpen])
			var wantTrips [catalog.NumTripCauses]uint64
			wantTrips[catalog.TripConsecutiveFailures] = 1
			wantTrips[catalog.TripMaxHalfOpenDuration] = uint64(nOpen)
			assert.Equal(t, wantTrips, sn.Trips, "each reopen at the half-open limit is a trip of its own cause")
			for _, tr := range (*trs)[1:] {
				switch {
				case tr.From == catalog.StateHalfOpen && tr.To == catalog.StateOpen:
					assert.Equal(t, catalog.TripMaxHalfOpenDuration, tr.Cause, "at %v", tr.At)
				default:
					assert.False(t, tr.Trip())
					assert.Zero(t, tr.Cause)
				}
			}
			if tt.remaining > 0 {
				assert.Equal(t, t0, sn.TrippedSince, "the episode began at the first trip")
				assert.Equal(t, t0.Add(tt.call+tt.remaining), sn.OpenUntil)
			}
		})
	}
}

// Two breakers with the same random source trip together; one is read only, the other takes a
// rejected call in every open period (committing the chain piece by piece). Both must agree at
// every instant, commit the same transitions at the same instants, and draw jittered open
// periods.
func TestIdleJitteredChainIsTheSameCommittedOrNot(t *testing.T) {
	const (
		open  = 10 * time.Second
		limit = 3 * time.Second
		step  = 50 * time.Millisecond
		until = 300 * time.Second
	)
	cfg := Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1, OpenDuration: open, HalfOpenMaxDuration: limit}
	newTwin := func() (*Breaker, *clock.Fake, *[]events.Transition) {
		c := cfg
		c.Rand = rand.New(rand.NewPCG(11, 13))
		b, clk, trs := newTest(t, c)
		feedOutcomes(t, b, clk, "f", 0)
		return b, clk, trs
	}
	reader, rclk, rtrs := newTwin()
	caller, cclk, ctrs := newTwin()

	var flips []time.Time // instants the reader's state changed, to step resolution
	prev := catalog.StateOpen
	lastCommit := time.Duration(-1)
	for d := step; d <= until; d += step {
		rclk.Set(t0.Add(d))
		cclk.Set(t0.Add(d))
		st := reader.State()
		if st != prev {
			flips = append(flips, t0.Add(d))
			prev = st
		}
		if st == catalog.StateOpen && d-lastCommit > 2*time.Second {
			mustReject(t, caller.Do(ctx, ok), catalog.StateOpen)
			lastCommit = d
		}
		require.Equal(t, st, caller.State(), "at %v", d)
	}
	require.Greater(t, len(flips), 30, "the idle breaker cycled many times")
	assert.Len(t, *rtrs, 1, "the reader committed nothing")

	// Commit the reader's chain with one call, in an open period.
	for reader.State() != catalog.StateOpen {
		rclk.Advance(step)
		cclk.Advance(step)
	}
	_ = reader.Do(ctx, ok)
	_ = caller.Do(ctx, ok)
	require.Equal(t, transitionPairs(*ctrs), transitionPairs(*rtrs))
	require.Len(t, *rtrs, len(*ctrs))
	for i := range *rtrs {
		assert.Equal(t, (*ctrs)[i].At, (*rtrs)[i].At, "transition %d", i)
	}
	assert.Equal(t, caller.Snapshot().Transitions, reader.Snapshot().Transitions)
	assert.Equal(t, caller.Snapshot().OpenUntil, reader.Snapshot().OpenUntil)

	// Each observed flip is the instant of a committed transition, to step resolution.
	trs := (*rtrs)[1:]
	require.GreaterOrEqual(t, len(trs), len(flips))
	for i, f := range flips {
		assert.True(t, !trs[i].At.After(f) && trs[i].At.After(f.Add(-step)), "flip %d at %v, transition at %v", i, f, trs[i].At)
	}
	// The open periods are jittered: within ±20% of the base, and not all the same.
	periods := map[time.Duration]bool{}
	for i := 1; i+1 < len(trs); i++ {
		if trs[i].To == catalog.StateOpen {
			p := trs[i+1].At.Sub(trs[i].At)
			assert.GreaterOrEqual(t, p, open*8/10)
			assert.Less(t, p, open*12/10)
			periods[p] = true
		}
		if trs[i].To == catalog.StateHalfOpen && trs[i+1].To == catalog.StateOpen {
			assert.Equal(t, limit, trs[i+1].At.Sub(trs[i].At), "each half-open period lasts exactly the limit")
		}
	}
	assert.Greater(t, len(periods), 5, "each reopen draws its own period")
}

// stepByStep is walk without skipping: the reference walk must match.
func stepByStep(p phase, s *settings, now int64) (cur phase, toHalf, toOpen uint64) {
	for {
		q, ok := p.next(s, now)
		if !ok {
			return p, toHalf, toOpen
		}
		if q.state == catalog.StateHalfOpen {
			toHalf++
		} else {
			toOpen++
		}
		p = q
	}
}

func TestWalkSkipsRoundsExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	ms := time.Millisecond
	configs := []Config{
		{OpenDuration: 10 * ms, HalfOpenMaxDuration: 3 * ms},
		{OpenDuration: 10 * ms, HalfOpenMaxDuration: 3 * ms, DisableJitter: true},
		{OpenDuration: ms, HalfOpenMaxDuration: ms, OpenJitter: 0.5},
		{OpenDuration: ms, HalfOpenMaxDuration: 7 * ms, OpenDurationGrowth: 2, MaxOpenDuration: 20 * ms},
		{OpenDuration: 3 * ms, HalfOpenMaxDuration: ms, OpenDurationGrowth: 1.1, OpenJitter: 0.1},
		{OpenDuration: time.Nanosecond, HalfOpenMaxDuration: time.Nanosecond, DisableJitter: true},
	}
	for i, cfg := range configs {
		cfg.Window, cfg.WindowSize, cfg.Rand = ConsecutiveFailures, 1, r
		s, err := newSettings("dep", cfg)
		require.NoError(t, err)
		for range 40 {
			jr := drawJitter(s)
			start := phase{state: catalog.StateOpen, since: 0, jseed: math.Float64bits(jr), reTrips: r.IntN(3)}
			start.period = openPeriodAt(s, start.reTrips, jr)
			start.until = start.period
			if r.IntN(2) == 0 { // start half-open instead
				start = phase{state: catalog.StateHalfOpen, since: 0, jseed: start.jseed, jn: r.Uint64N(100), reTrips: start.reTrips}
			}
			cycle := int64(s.halfOpenMax) + int64(float64(max(s.openBase, s.maxOpen))*1.6)
			now := r.Int64N(cycle * int64(r.IntN(3000)+1))
			got, gh, go_ := walk(start, s, now, nil)
			want, wh, wo := stepByStep(start, s, now)
			got.skippedRounds = 0
			require.Equal(t, want, got, "config %d, now %d", i, now)
			require.Equal(t, [2]uint64{wh, wo}, [2]uint64{gh, go_}, "config %d, now %d", i, now)
		}
	}
}

// A breaker left idle for a long time reads its state in a bounded number of steps, and the
// commit counts every transition while reporting only the last steps one by one.
func TestLongIdleChainIsBounded(t *testing.T) {
	ms := time.Millisecond
	b, clk, trs := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1,
		OpenDuration: ms, HalfOpenMaxDuration: ms, DisableJitter: true})
	feedOutcomes(t, b, clk, "f", 0) // open [0, 1ms), half-open [1ms, 2ms), open [2ms, 3ms), …

	clk.Set(t0.Add(time.Hour + ms/2))
	assert.Equal(t, catalog.StateOpen, b.State())
	clk.Set(t0.Add(time.Hour + ms + ms/2))
	assert.Equal(t, catalog.StateHalfOpen, b.State())

	steps := 0
	e, s := b.cur.Load(), b.set.Load()
	_, toHalf, toOpen := walk(e.phase(), s, int64(time.Hour+ms+ms/2), func(phase, phase) { steps++ })
	assert.LessOrEqual(t, steps, 6*chainCycle, "walked step by step")
	assert.Equal(t, uint64(1_800_001), toHalf)
	assert.Equal(t, uint64(1_800_000), toOpen)

	clk.Set(t0.Add(time.Hour + 2*ms + ms/2))
	oe := mustReject(t, b.Do(ctx, ok), catalog.StateOpen)
	assert.Equal(t, ms/2, oe.Remaining)
	sn := b.Snapshot()
	assert.Equal(t, uint64(1_800_001), sn.Transitions[catalog.StateOpen][catalog.StateHalfOpen])
	assert.Equal(t, uint64(1_800_001), sn.Transitions[catalog.StateHalfOpen][catalog.StateOpen])
	assert.Equal(t, uint64(1_800_001), sn.Trips[catalog.TripMaxHalfOpenDuration], "skipped reopens are counted as trips too")
	assert.Equal(t, t0, sn.TrippedSince)
	assert.Equal(t, t0.Add(time.Hour+3*ms), sn.OpenUntil)
	assert.LessOrEqual(t, len(*trs), 1+6*chainCycle, "events for the last steps only")
	last := (*trs)[len(*trs)-1]
	assert.Equal(t, "half_open→open", last.From.String()+"→"+last.To.String())
	assert.Equal(t, t0.Add(time.Hour+2*ms), last.At)
	skipped := 0
	for _, tr := range *trs {
		if strings.Contains(tr.Reason, "not reported one by one") {
			skipped++
		}
	}
	assert.Equal(t, 1, skipped, "the skipped cycles are announced once")
}

func TestReconfigureJudgesHalfOpenProbesAtOnce(t *testing.T) {
	cfg := Config{WindowSize: 10, MinCalls: 1, HalfOpenCalls: 3, FailureRateThreshold: 0.5, OpenDuration: time.Second, DisableJitter: true}
	b, clk, trs := newTest(t, cfg)
	feedOutcomes(t, b, clk, "f", 0)
	clk.Advance(time.Second)
	p, err := b.Acquire()
	require.NoError(t, err)
	p.Done(errBoom) // 1 of 3 probes failed: below 0.5, undecided
	require.Equal(t, catalog.StateHalfOpen, b.State())

	cfg.FailureRateThreshold = 0.3 // one failed probe of three now reaches it
	require.NoError(t, b.Reconfigure(cfg))
	sn := b.Snapshot()
	assert.Equal(t, catalog.StateOpen, storedState(b))
	assert.Equal(t, uint64(1), sn.Transitions[catalog.StateHalfOpen][catalog.StateOpen])
	assert.Equal(t, []string{"closed→open", "open→half_open", "half_open→open"}, transitionPairs(*trs))
	assert.Equal(t, clk.Now(), sn.OpenUntil.Add(-time.Second))
}

// Manual changes and Reconfigure start from the state catalog.State reported: what time alone changed
// is committed first, as of when it happened.
func TestManualChangeAndReconfigureCommitTimeFirst(t *testing.T) {
	cfg := Config{Window: ConsecutiveFailures, WindowSize: 1, HalfOpenCalls: 1, OpenDuration: 10 * time.Second,
		HalfOpenMaxDuration: 5 * time.Second, DisableJitter: true}
	t.Run("reset", func(t *testing.T) {
		b, clk, trs := newTest(t, cfg)
		feedOutcomes(t, b, clk, "f", 0)
		clk.Set(t0.Add(12 * time.Second))
		require.Equal(t, catalog.StateHalfOpen, b.State())
		b.Reset()
		require.Equal(t, []string{"closed→open", "open→half_open", "half_open→closed"}, transitionPairs(*trs))
		assert.Equal(t, t0.Add(10*time.Second), (*trs)[1].At)
		assert.Equal(t, t0.Add(12*time.Second), (*trs)[2].At)
		assert.Zero(t, b.Snapshot().Transitions[catalog.StateOpen][catalog.StateClosed])
	})
	t.Run("reconfigure", func(t *testing.T) {
		b, clk, trs := newTest(t, cfg)
		feedOutcomes(t, b, clk, "f", 0)
		clk.Set(t0.Add(16 * time.Second)) // half-open at 10 s, reopened at 15 s until 25 s
		require.Equal(t, catalog.StateOpen, b.State())
		longer := cfg
		longer.OpenDuration, longer.HalfOpenMaxDuration = time.Minute, time.Minute
		require.NoError(t, b.Reconfigure(longer))
		assert.Equal(t, []string{"closed→open", "open→half_open", "half_open→open"}, transitionPairs(*trs))
		sn := b.Snapshot()
		assert.Equal(t, t0.Add(25*time.Second), sn.OpenUntil, "committed under the settings of the time")
		clk.Set(t0.Add(25 * time.Second))
		assert.Equal(t, catalog.StateHalfOpen, b.State())
		clk.Set(t0.Add(85*time.Second - time.Nanosecond))
		assert.Equal(t, catalog.StateHalfOpen, b.State(), "the new limit applies from here")
		clk.Set(t0.Add(85 * time.Second))
		assert.Equal(t, catalog.StateOpen, b.State())
	})
}

func TestStateOfAnIdleChainAllocatesNothing(t *testing.T) {
	b, clk, _ := newTest(t, Config{Window: ConsecutiveFailures, WindowSize: 1, OpenDuration: time.Millisecond,
		HalfOpenMaxDuration: time.Millisecond})
	feedOutcomes(t, b, clk, "f", 0)
	clk.Advance(time.Hour)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = b.State() }))
}
