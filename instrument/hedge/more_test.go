package hedge_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// warm runs calls that take the given latencies on the fake clock; they are marked not
// idempotent, so that no hedge races them, and still teach the adaptive delay.
func warm(t *testing.T, h *hedge.Hedge, clk interface{ Advance(time.Duration) }, latencies []time.Duration) {
	t.Helper()
	for _, d := range latencies {
		_, err := hedge.Call(hedge.WithIdempotent(context.Background(), false), h, func(context.Context) (int, error) {
			clk.Advance(d)
			return 0, nil
		})
		require.NoError(t, err)
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestTheAdaptiveDelayIsARecentQuantileAboveTheFloor(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Idempotent: true, Window: 40})
	warm(t, h, clk, repeat(30*time.Millisecond, 19))
	assert.Zero(t, h.Snapshot().Delay, "no delay before window/2 latencies")
	assert.Equal(t, 0, clk.Timers(), "no hedge while warming up")

	// 19 + 1 = 20 latencies: 19 of 30 ms and one of 2 s. p95 of 20 is the 19th: 30 ms, rounded
	// up to its bucket (at most 25% above).
	warm(t, h, clk, []time.Duration{2 * time.Second})
	d := h.Snapshot().Delay
	assert.GreaterOrEqual(t, d, 30*time.Millisecond)
	assert.LessOrEqual(t, d, 30*time.Millisecond*5/4)

	// The dependency slows down: the delay follows within a window.
	warm(t, h, clk, repeat(200*time.Millisecond, 40))
	d = h.Snapshot().Delay
	assert.GreaterOrEqual(t, d, 200*time.Millisecond)
	assert.LessOrEqual(t, d, 250*time.Millisecond)

	// Fast answers: the delay never drops below the floor (1 ms by default).
	warm(t, h, clk, repeat(100*time.Microsecond, 40))
	assert.Equal(t, hedge.DefaultMinDelay, h.Snapshot().Delay)
}

func TestTheAdaptiveDelayIsUsed(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Idempotent: true, Window: 20, MinDelay: time.Millisecond})
	warm(t, h, clk, repeat(40*time.Millisecond, 10))
	d := h.Snapshot().Delay
	require.NotZero(t, d)
	s := newScript(blockUntilCancelled, answer("b"))
	res := callAsync(context.Background(), h, s)
	<-s.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(d - time.Nanosecond)
	select {
	case <-s.started:
		t.Fatal("hedged before the adaptive delay")
	default:
	}
	clk.Advance(time.Nanosecond)
	<-s.started
	assert.Equal(t, "b", (<-res).v)
}

func TestMaxHedgesStartsOneHedgePerDelay(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true, MaxHedges: 2,
		Budget: newSpy(grantAll{})})
	gate := make(chan struct{})
	s := newScript(blockUntilCancelled, blockUntilCancelled, gated(gate, "c", nil))
	res := callAsync(context.Background(), h, s)
	<-s.started
	for want := 1; want <= 2; want++ {
		require.True(t, clk.WaitForTimers(1, nil))
		clk.Advance(10 * time.Millisecond)
		require.Equal(t, want, <-s.started)
	}
	require.True(t, clk.WaitForTimers(0, nil))
	clk.Advance(time.Hour)
	close(gate)
	assert.Equal(t, "c", (<-res).v)
	assert.Equal(t, int32(3), s.n.Load(), "MaxHedges: 2 extra attempts at most")
	assert.Equal(t, map[string]uint64{"calls": 1, "won": 1, "cancelled": 1}, outcomes(h))
}

type grantAll struct{}

func (grantAll) SpendToken() bool { return true }

// TestAPanickingHedgeLosesAndTheCallGoesOn: the first attempt fails, so the call waits for its
// hedge, which panics: the panic is the hedge's failure (lost), and the call returns the first
// attempt's error instead of crashing.
func TestAPanickingHedgeLosesAndTheCallGoesOn(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true})
	gate := make(chan struct{})
	boom := errors.New("reset")
	s := newScript(gated(gate, "", boom), func(context.Context) (string, error) { panic("bug") })
	res := callAsync(context.Background(), h, s)
	<-s.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(10 * time.Millisecond)
	<-s.started
	close(gate)
	assert.ErrorIs(t, (<-res).err, boom)
	assert.Equal(t, map[string]uint64{"calls": 1, "lost": 1}, outcomes(h))
}

func TestAPanickingFirstAttemptCancelsTheHedges(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true})
	gate := make(chan struct{})
	var hedgeErr error
	s := newScript(func(context.Context) (string, error) { <-gate; panic("bug") }, func(ctx context.Context) (string, error) {
		_, hedgeErr = blockUntilCancelled(ctx)
		return "", hedgeErr
	})
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_, _ = hedge.Call(context.Background(), h, s.fn)
	}()
	<-s.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(10 * time.Millisecond)
	<-s.started
	close(gate)
	assert.Equal(t, "bug", <-panicked, "the first attempt's panic reaches the caller")
	assert.ErrorIs(t, hedgeErr, context.Canceled, "after its hedges ended")
	assert.Equal(t, map[string]uint64{"calls": 1, "cancelled": 1}, outcomes(h))
}

func TestTheCallersCancellationEndsTheCall(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true})
	ctx, cancel := context.WithCancel(context.Background())
	s := newScript(blockUntilCancelled, blockUntilCancelled)
	res := callAsync(ctx, h, s)
	<-s.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(10 * time.Millisecond)
	<-s.started
	cancel()
	assert.ErrorIs(t, (<-res).err, context.Canceled)
	assert.Equal(t, map[string]uint64{"calls": 1, "cancelled": 1}, outcomes(h))
}

func TestEveryCallAndHedgeIsCountedOnce(t *testing.T) {
	h, err := hedge.New("payments", hedge.Config{Delay: 20 * time.Microsecond, Idempotent: true, MaxHedges: 3, Budget: grantAll{}})
	require.NoError(t, err)
	const goroutines, calls = 8, 200
	var wg sync.WaitGroup
	var attempts atomic.Uint64
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range calls {
				spin, failing := rng.IntN(300), rng.IntN(3) == 0
				_ = h.Do(context.Background(), func(ctx context.Context) error {
					attempts.Add(1)
					for i := 0; i < spin && ctx.Err() == nil; i++ {
						runtime.Gosched() // some attempts are slow enough to be hedged
					}
					if failing {
						return errors.New("reset")
					}
					return ctx.Err()
				})
			}
		}()
	}
	wg.Wait()
	sn := h.Snapshot()
	assert.Equal(t, uint64(goroutines*calls), sn.Calls)
	assert.LessOrEqual(t, sn.Ran(), uint64(3*goroutines*calls))
	assert.Equal(t, attempts.Load(), sn.Calls+sn.Ran(), "every attempt run is a call's first or a counted hedge")
	assert.Zero(t, sn.Hedges[catalog.HedgeBudgetDenied])
	t.Logf("%d calls: %d hedges won, %d lost, %d cancelled", sn.Calls, sn.Hedges[catalog.HedgeWon], sn.Hedges[catalog.HedgeLost], sn.Hedges[catalog.HedgeCancelled])
}

func TestInvalidConfigsNameTheField(t *testing.T) {
	for field, cfg := range map[string]hedge.Config{
		"Delay":         {Delay: -time.Second},
		"Quantile":      {Quantile: 1},
		"MinDelay":      {MinDelay: -1},
		"Window":        {Window: 5},
		"MaxHedges":     {MaxHedges: 11},
		"MaxExtraRatio": {MaxExtraRatio: 1.5},
	} {
		_, err := hedge.New("payments", cfg)
		var ce *hedge.ConfigError
		require.ErrorAs(t, err, &ce, field)
		assert.Equal(t, field, ce.Field)
		assert.Equal(t, "hedge", ce.Primitive)
		assert.Equal(t, "payments", ce.Name)
	}
	_, err := hedge.New("payments", hedge.Config{})
	assert.NoError(t, err, "the zero Config works")
}

// TestTheWinnersContextStaysLive: what a winning result still reads through its attempt's
// context (an HTTP response body) stays readable after the call returns; losers are cancelled.
func TestTheWinnersContextStaysLive(t *testing.T) {
	type res struct {
		ctx context.Context
		err error
	}
	run := func(t *testing.T, firstWins bool) (winner, loser context.Context) {
		h, clk := newHedge(t, hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true})
		gate := make(chan struct{})
		ctxs := make(chan context.Context, 2)
		attempt := func(wins bool) func(ctx context.Context) (context.Context, error) {
			return func(ctx context.Context) (context.Context, error) {
				ctxs <- ctx
				if wins {
					<-gate
					return ctx, nil
				}
				<-ctx.Done()
				return ctx, ctx.Err()
			}
		}
		attempts := []func(context.Context) (context.Context, error){attempt(firstWins), attempt(!firstWins)}
		var n atomic.Int32
		out := make(chan res, 1)
		go func() {
			c, err := hedge.Call(context.Background(), h, func(ctx context.Context) (context.Context, error) {
				return attempts[n.Add(1)-1](ctx)
			})
			out <- res{c, err}
		}()
		c1 := <-ctxs
		require.True(t, clk.WaitForTimers(1, nil))
		clk.Advance(10 * time.Millisecond)
		c2 := <-ctxs
		close(gate)
		r := <-out
		require.NoError(t, r.err)
		if firstWins {
			return c1, c2
		}
		return c2, c1
	}
	for name, firstWins := range map[string]bool{"the first attempt wins": true, "the hedge wins": false} {
		t.Run(name, func(t *testing.T) {
			winner, loser := run(t, firstWins)
			assert.NoError(t, winner.Err(), "the winner's context is not cancelled")
			assert.ErrorIs(t, loser.Err(), context.Canceled)
			derived, cancel := context.WithTimeout(winner, time.Hour)
			defer cancel()
			assert.NoError(t, derived.Err())
		})
	}
}

// TestTheWallClockSchedulerStartsOnlyItsOwnCallsHedges: on the wall clock, calls that end
// before the delay give their race back to the hedge's pool and hedged calls do not; a hedge
// that starts is its own call's — never another's, whose race the pool handed on.
func TestTheWallClockSchedulerStartsOnlyItsOwnCallsHedges(t *testing.T) {
	slow, err := hedge.New("slow", hedge.Config{Delay: time.Hour, Idempotent: true})
	require.NoError(t, err)
	for range 1000 {
		require.NoError(t, slow.Do(context.Background(), func(context.Context) error { return nil }))
	}
	assert.Equal(t, map[string]uint64{"calls": 1000}, outcomes(slow))

	fast, err := hedge.New("fast", hedge.Config{Delay: time.Nanosecond, Idempotent: true, Budget: grantAll{}})
	require.NoError(t, err)
	for i := range 50 {
		var n atomic.Int32
		v, err := hedge.Call(context.Background(), fast, func(ctx context.Context) (int, error) {
			if n.Add(1) == 1 { // the attempt that starts first (the timer may beat the caller)
				// answers only once the other has won
				<-ctx.Done()
				return -1, ctx.Err()
			}
			return i, nil
		})
		require.NoError(t, err)
		require.Equal(t, i, v, "the call's own hedge answered")
		require.Equal(t, int32(2), n.Load())
		// interleave calls that end before their delay, so pooled and hedged races mix
		require.NoError(t, slow.Do(context.Background(), func(context.Context) error { return nil }))
	}
	sn := fast.Snapshot()
	assert.Equal(t, uint64(50), sn.Calls)
	assert.Equal(t, uint64(50), sn.Ran(), "one hedge per call: won, or cancelled when the caller's attempt answered")
	assert.Zero(t, sn.Hedges[catalog.HedgeLost]+sn.Hedges[catalog.HedgeBudgetDenied])
}
