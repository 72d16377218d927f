package hedge_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func newHedge(t *testing.T, cfg hedge.Config) (*hedge.Hedge, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(epoch)
	cfg.Clock = clk
	h, err := hedge.New("payments", cfg)
	require.NoError(t, err)
	return h, clk
}

// script is a hedged function whose attempts are told apart by their order: attempt i runs
// behaviours[i]. Every attempt reports that it started on started.
type script struct {
	n       atomic.Int32
	started chan int
	do      []func(ctx context.Context) (string, error)
}

func newScript(do ...func(ctx context.Context) (string, error)) *script {
	return &script{started: make(chan int, len(do)), do: do}
}

func (s *script) fn(ctx context.Context) (string, error) {
	i := int(s.n.Add(1)) - 1
	s.started <- i
	return s.do[i](ctx)
}

func answer(v string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return v, nil }
}

func fail(err error) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return "", err }
}

// blockUntilCancelled is an attempt stuck on a slow server: it returns only when cancelled.
func blockUntilCancelled(ctx context.Context) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// gated is an attempt that answers when its gate is closed (or fails when cancelled).
func gated(gate chan struct{}, v string, err error) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		select {
		case <-gate:
			return v, err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

type result struct {
	v   string
	err error
}

func callAsync(ctx context.Context, h *hedge.Hedge, s *script) <-chan result {
	out := make(chan result, 1)
	go func() {
		v, err := hedge.Call(ctx, h, s.fn)
		out <- result{v, err}
	}()
	return out
}

func outcomes(h *hedge.Hedge) map[string]uint64 {
	sn := h.Snapshot()
	m := map[string]uint64{"calls": sn.Calls}
	for _, o := range catalog.HedgeOutcomes {
		if n := sn.Hedges[o]; n > 0 {
			m[o.String()] = n
		}
	}
	return m
}

func TestNoHedgeWhenTheFirstAttemptAnswersInTime(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 100 * time.Millisecond, Idempotent: true})
	s := newScript(answer("a"))
	v, err := hedge.Call(context.Background(), h, s.fn)
	require.NoError(t, err)
	assert.Equal(t, "a", v)
	assert.Equal(t, 1, clk.Timers(), "the scheduler's one timer stays armed: a call that ends only leaves its queue")
	clk.Advance(time.Second)
	assert.Equal(t, 0, clk.Timers(), "the timer fired once, found no call due and was not re-armed")
	assert.Equal(t, int32(1), s.n.Load(), "no hedge starts after the call")
	assert.Equal(t, map[string]uint64{"calls": 1}, outcomes(h))
}

func TestAHedgeStartsAfterTheDelayAndWins(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 100 * time.Millisecond, Idempotent: true})
	var firstErr error
	s := newScript(func(ctx context.Context) (string, error) {
		_, firstErr = blockUntilCancelled(ctx)
		return "", firstErr
	}, answer("b"))
	res := callAsync(context.Background(), h, s)
	require.Equal(t, 0, <-s.started)
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(99 * time.Millisecond)
	select {
	case <-s.started:
		t.Fatal("a hedge started before the delay")
	default:
	}
	clk.Advance(time.Millisecond)
	require.Equal(t, 1, <-s.started)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, "b", r.v, "the hedge's answer is the call's")
	assert.ErrorIs(t, firstErr, context.Canceled, "the losing first attempt is cancelled")
	assert.Equal(t, map[string]uint64{"calls": 1, "won": 1}, outcomes(h))
}

func TestTheFirstAttemptWinsAndTheHedgeIsCancelled(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 50 * time.Millisecond, Idempotent: true})
	gate := make(chan struct{})
	var hedgeErr error
	s := newScript(gated(gate, "a", nil), func(ctx context.Context) (string, error) {
		_, hedgeErr = blockUntilCancelled(ctx)
		return "", hedgeErr
	})
	res := callAsync(context.Background(), h, s)
	<-s.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(50 * time.Millisecond)
	require.Equal(t, 1, <-s.started)
	close(gate)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, "a", r.v)
	assert.ErrorIs(t, hedgeErr, context.Canceled, "the call returned after its hedge ended")
	assert.Equal(t, map[string]uint64{"calls": 1, "cancelled": 1}, outcomes(h), "counted before the call returned")
}

func TestAFailedFirstAttemptWaitsForTheHedge(t *testing.T) {
	boom := errors.New("connection reset")
	for _, tc := range []struct {
		name    string
		hedge   func(context.Context) (string, error)
		want    result
		outcome string
	}{
		{"the hedge answers", answer("b"), result{"b", nil}, "won"},
		{"the hedge fails too: the first attempt's error", fail(errors.New("other")), result{"", boom}, "lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, clk := newHedge(t, hedge.Config{Delay: 50 * time.Millisecond, Idempotent: true})
			firstGate, hedgeGate := make(chan struct{}), make(chan struct{})
			s := newScript(gated(firstGate, "", boom), func(ctx context.Context) (string, error) {
				<-hedgeGate
				return tc.hedge(ctx)
			})
			res := callAsync(context.Background(), h, s)
			<-s.started
			require.True(t, clk.WaitForTimers(1, nil))
			clk.Advance(50 * time.Millisecond)
			<-s.started
			close(firstGate) // the first attempt fails while the hedge runs
			select {
			case r := <-res:
				t.Fatalf("the call returned %v before its hedge answered", r)
			default:
			}
			close(hedgeGate)
			r := <-res
			assert.Equal(t, tc.want.v, r.v)
			if tc.want.err == nil {
				assert.NoError(t, r.err)
			} else {
				assert.ErrorIs(t, r.err, tc.want.err)
			}
			assert.Equal(t, map[string]uint64{"calls": 1, tc.outcome: 1}, outcomes(h))
		})
	}
}

func TestAFastFailureIsNotHedged(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 50 * time.Millisecond, Idempotent: true})
	boom := errors.New("refused")
	s := newScript(fail(boom))
	_, err := hedge.Call(context.Background(), h, s.fn)
	assert.ErrorIs(t, err, boom, "retrying failures is the retry's job")
	clk.Advance(time.Second)
	assert.Equal(t, 0, clk.Timers())
	assert.Equal(t, int32(1), s.n.Load(), "no hedge starts after the call")
	assert.Equal(t, map[string]uint64{"calls": 1}, outcomes(h))
}

func TestBusinessErrorsEndTheCall(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Delay: 50 * time.Millisecond, Idempotent: true})
	gate := make(chan struct{})
	insufficient := classify.Business(errors.New("insufficient funds"))
	s := newScript(gated(gate, "", insufficient), blockUntilCancelled)
	res := callAsync(context.Background(), h, s)
	<-s.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(50 * time.Millisecond)
	<-s.started
	close(gate)
	r := <-res
	assert.ErrorIs(t, r.err, insufficient, "a business answer is an answer: the hedge is cancelled")
	assert.Equal(t, map[string]uint64{"calls": 1, "cancelled": 1}, outcomes(h))
}

func TestNonIdempotentCallsAreNeverHedged(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg hedge.Config
		ctx context.Context
	}{
		"no idempotency said":              {hedge.Config{Delay: time.Millisecond}, context.Background()},
		"the context says not idempotent":  {hedge.Config{Delay: time.Millisecond, Idempotent: true}, hedge.WithIdempotent(context.Background(), false)},
		"the config says, the context not": {hedge.Config{Delay: time.Millisecond, Idempotent: true}, hedge.WithIdempotent(context.Background(), false)},
	} {
		t.Run(name, func(t *testing.T) {
			h, clk := newHedge(t, tc.cfg)
			s := newScript(func(context.Context) (string, error) {
				assert.Equal(t, 0, clk.Timers(), "no hedge is scheduled")
				clk.Advance(time.Hour) // far past the delay
				return "a", nil
			})
			v, err := hedge.Call(tc.ctx, h, s.fn)
			require.NoError(t, err)
			assert.Equal(t, "a", v)
			assert.Equal(t, int32(1), s.n.Load())
			assert.Equal(t, map[string]uint64{"calls": 1}, outcomes(h))
		})
	}
	t.Run("the context says idempotent", func(t *testing.T) {
		h, clk := newHedge(t, hedge.Config{Delay: time.Millisecond})
		s := newScript(blockUntilCancelled, answer("b"))
		res := callAsync(hedge.WithIdempotent(context.Background(), true), h, s)
		<-s.started
		require.True(t, clk.WaitForTimers(1, nil))
		clk.Advance(time.Millisecond)
		assert.Equal(t, "b", (<-res).v)
	})
}

// spy passes SpendToken to a budget (nil: refuse) and reports each answer on asked.
type spy struct {
	budget hedge.Budget
	asked  chan bool
}

func newSpy(b hedge.Budget) *spy { return &spy{budget: b, asked: make(chan bool, 16)} }

func (s *spy) SpendToken() bool {
	ok := s.budget != nil && s.budget.SpendToken()
	s.asked <- ok
	return ok
}

func TestABudgetRefusalIsCountedAndTheCallGoesOn(t *testing.T) {
	budget := newSpy(nil)
	h, clk := newHedge(t, hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true, Budget: budget})
	gate := make(chan struct{})
	s := newScript(gated(gate, "a", nil))
	res := callAsync(context.Background(), h, s)
	<-s.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(10 * time.Millisecond)
	require.False(t, <-budget.asked, "the timer's goroutine asked the budget")
	close(gate)
	assert.Equal(t, "a", (<-res).v)
	assert.Equal(t, int32(1), s.n.Load(), "the refused hedge never ran")
	assert.Equal(t, map[string]uint64{"calls": 1, "budget_denied": 1}, outcomes(h))
}

// TestRetriesAndHedgesShareOneBudget: a hedge spends the retry budget's token, so the retry
// that follows is refused; and a retry that spent the token leaves none for a hedge.
func TestRetriesAndHedgesShareOneBudget(t *testing.T) {
	boom := classify.Permanent(errors.New("never retried"))
	retryable := errors.New("reset")
	setup := func(t *testing.T) (*retry.Retry, *hedge.Hedge, *spy, *clock.Fake) {
		clk := clock.NewFake(epoch)
		r, err := retry.New("payments", retry.Config{Clock: clk, MaxAttempts: 2,
			Backoff: retry.Backoff{Strategy: retry.None},
			Budget:  retry.BudgetConfig{Ratio: 0.5, Capacity: 1, DisableFloor: true, DisableDecay: true}})
		require.NoError(t, err)
		for range 2 { // two first attempts: one token
			_ = r.Do(context.Background(), func(context.Context) error { return boom })
		}
		budget := newSpy(r) // the retry is the hedge's budget, as in a pipeline
		h, err := hedge.New("payments", hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true, Budget: budget, Clock: clk})
		require.NoError(t, err)
		return r, h, budget, clk
	}
	hedged := func(t *testing.T, h *hedge.Hedge, budget *spy, clk *clock.Fake) {
		t.Helper()
		gate := make(chan struct{})
		s := newScript(gated(gate, "a", nil), gated(gate, "b", nil))
		res := callAsync(context.Background(), h, s)
		<-s.started
		require.True(t, clk.WaitForTimers(1, nil))
		clk.Advance(10 * time.Millisecond)
		if <-budget.asked {
			<-s.started
		}
		close(gate)
		<-res
	}

	t.Run("a hedge spends it, the retry is refused", func(t *testing.T) {
		r, h, budget, clk := setup(t)
		hedged(t, h, budget, clk)
		require.Equal(t, uint64(1), h.Snapshot().Ran())
		err := r.Do(context.Background(), func(context.Context) error { return retryable })
		var re *retry.Error
		require.ErrorAs(t, err, &re)
		assert.Len(t, re.Attempts(), 1, "no token left for the retry")
		assert.Equal(t, uint64(1), r.Snapshot().BudgetDenied)
	})
	t.Run("a retry spends it, the hedge is refused", func(t *testing.T) {
		r, h, budget, clk := setup(t)
		n := 0
		require.NoError(t, r.Do(context.Background(), func(context.Context) error {
			if n++; n == 1 {
				return retryable
			}
			return nil
		}))
		require.Equal(t, 2, n, "the retry ran on the token")
		hedged(t, h, budget, clk)
		assert.Equal(t, map[string]uint64{"calls": 1, "budget_denied": 1}, outcomes(h))
		assert.Equal(t, uint64(0), r.Snapshot().BudgetDenied, "a refused hedge is not a refused retry")
	})
}
