package instrument

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// The pipeline starts no goroutines; its tests start some, and every one must end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guard bounds every blocking wait of these tests.
const guard = 10 * time.Second

var errBoom = errors.New("boom")

// tracedPipeline builds a pipeline with every layer on a fake clock (retry waits) and records,
// in order, what each layer saw: the call itself (with the bulkhead's in-flight count and
// whether the attempt had a deadline), the breaker's recorded outcomes, the retry's decisions
// (with the bulkhead's in-flight count at that moment) and the fallback's invocations.
type tracer struct {
	mu       sync.Mutex
	trace    []string
	retrying chan events.Retry
}

func (tr *tracer) add(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.trace = append(tr.trace, fmt.Sprintf(format, args...))
}

func (tr *tracer) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.trace...)
}

func newTraced(t *testing.T, order Order, breakerCfg breaker.Config) (*Registry, *Pipeline, *clock.Fake, *tracer) {
	t.Helper()
	fake := clock.NewFake(time.Now())
	reg, err := NewRegistry()
	require.NoError(t, err)
	rc := retry.Config{}
	rc.Backoff = retry.Backoff{Strategy: retry.Constant, Base: 100 * time.Millisecond}
	rc.DisableBudget = true
	rc.Clock = fake
	breakerCfg.Clock = fake
	p, err := reg.Pipeline("payments", PipelineConfig{
		Order:    order,
		Retry:    &rc,
		Breaker:  &breakerCfg,
		Bulkhead: &bulkhead.Config{MaxConcurrent: 1},
		Timeout:  &timeout.Config{Timeout: time.Minute},
		Fallback: &fallback.Config{},
	})
	require.NoError(t, err)
	tr := &tracer{retrying: make(chan events.Retry, 16)}
	hub := reg.Events()
	hub.Outcomes.Add(func(e events.CallOutcome) { tr.add("breaker:%s", e.Kind) })
	hub.Rejections.Add(func(e events.Rejection) { tr.add("rejected:%s", e.Primitive) })
	hub.Retries.Add(func(e events.Retry) {
		tr.add("retry:%s inflight=%d", e.Outcome, p.Bulkhead().Snapshot().InFlight)
		if e.Outcome == catalog.OutcomeRetrying {
			tr.retrying <- e
		}
	})
	hub.Fallbacks.Add(func(e events.Fallback) { tr.add("fallback:%s", e.Cause) })
	return reg, p, fake, tr
}

// driveRetries lets n retry waits pass: for each, it waits for the retry's decision, checks
// that the backoff timer is the only pending timer and that no bulkhead permit is held while
// it waits, and advances the fake clock by the delay.
func driveRetries(t *testing.T, p *Pipeline, fake *clock.Fake, tr *tracer, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		var e events.Retry
		select {
		case e = <-tr.retrying:
		case <-time.After(guard):
			t.Fatalf("retry %d never happened; trace %v", i+1, tr.get())
		}
		require.True(t, fake.WaitForTimers(1, nil))
		st := p.Bulkhead().Snapshot()
		assert.Equal(t, 0, st.InFlight, "no bulkhead permit is held during the backoff wait")
		assert.Equal(t, 0, st.Waiting)
		tr.add("wait %s inflight=%d", e.Delay, st.InFlight)
		fake.Advance(e.Delay)
	}
}

func TestPipelineOrderTrace(t *testing.T) {
	tests := []struct {
		order Order
		want  []string
	}{
		{BreakerPerAttempt, []string{
			"call#1 inflight=1 deadline=true", "breaker:failed", "retry:retrying inflight=0", "wait 100ms inflight=0",
			"call#2 inflight=1 deadline=true", "breaker:failed", "retry:retrying inflight=0", "wait 100ms inflight=0",
			"call#3 inflight=1 deadline=true", "breaker:failed", "retry:gave_up inflight=0",
			"fallback:retries_exhausted",
		}},
		{BreakerPerCall, []string{
			"call#1 inflight=1 deadline=true", "retry:retrying inflight=0", "wait 100ms inflight=0",
			"call#2 inflight=1 deadline=true", "retry:retrying inflight=0", "wait 100ms inflight=0",
			"call#3 inflight=1 deadline=true", "retry:gave_up inflight=0",
			"breaker:failed", // one outcome per logical call
			"fallback:retries_exhausted",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.order.String(), func(t *testing.T) {
			_, p, fake, tr := newTraced(t, tt.order, breaker.Config{WindowSize: 100})
			calls := 0
			type result struct {
				v            string
				fromFallback bool
				err          error
				cause        catalog.Cause
				causeErr     error
			}
			done := make(chan result, 1)
			go func() {
				var r result
				r.v, r.fromFallback, r.err = CallWithFallback(context.Background(), p,
					func(ctx context.Context) (string, error) {
						calls++
						_, hasDeadline := ctx.Deadline()
						tr.add("call#%d inflight=%d deadline=%t", calls, p.Bulkhead().Snapshot().InFlight, hasDeadline)
						return "", errBoom
					},
					func(_ context.Context, cause catalog.Cause, err error) (string, error) {
						r.cause, r.causeErr = cause, err
						return "degraded", nil
					})
				done <- r
			}()
			driveRetries(t, p, fake, tr, 2)
			var r result
			select {
			case r = <-done:
			case <-time.After(guard):
				t.Fatal("the call never ended")
			}
			assert.Equal(t, tt.want, tr.get())
			require.NoError(t, r.err)
			assert.True(t, r.fromFallback)
			assert.Equal(t, "degraded", r.v)
			assert.Equal(t, catalog.CauseRetriesExhausted, r.cause, "the fallback receives the cause")
			assert.ErrorIs(t, r.causeErr, errBoom, "and the error")
			var rerr *retry.Error
			require.ErrorAs(t, r.causeErr, &rerr)
			assert.Len(t, rerr.Attempts(), 3)

			// Every layer counted what it saw.
			snap := p.Breaker().Snapshot()
			wantBreakerCalls := uint64(3)
			if tt.order == BreakerPerCall {
				wantBreakerCalls = 1
			}
			assert.Equal(t, wantBreakerCalls, snap.Calls[catalog.CallFailed])
			assert.Equal(t, uint64(3), p.Bulkhead().Snapshot().Calls[catalog.AdmissionPermitted])
			assert.Equal(t, timeout.Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutFailed: 3}}, p.Timeout().Snapshot())
			assert.Equal(t, uint64(1), p.Fallback().Snapshot().Calls[catalog.CauseRetriesExhausted])
		})
	}
}

func TestPipelineNeverRetriesTheBreakersRejection(t *testing.T) {
	// The first attempt's failure trips the breaker; the retry's second attempt is refused by it
	// and not retried again, although two more attempts were allowed.
	_, p, fake, tr := newTraced(t, BreakerPerAttempt, breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1})
	require.Equal(t, 3, p.Retry().Config().MaxAttempts)
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- p.Do(context.Background(), func(context.Context) error { calls++; return errBoom })
	}()
	driveRetries(t, p, fake, tr, 1)
	var err error
	select {
	case err = <-done:
	case <-time.After(guard):
		t.Fatal("the call never ended")
	}
	assert.Equal(t, 1, calls)
	require.ErrorIs(t, err, breaker.ErrOpen)
	var rerr *retry.Error
	require.ErrorAs(t, err, &rerr)
	assert.Len(t, rerr.Attempts(), 2, "the rejection ended the call: no third attempt")
	assert.Equal(t, []string{
		"breaker:failed", "retry:retrying inflight=0", "wait 100ms inflight=0",
		"rejected:circuitbreaker", "retry:gave_up inflight=0",
	}, tr.get())
	assert.Equal(t, uint64(1), p.Breaker().Snapshot().NotPermitted)
	assert.Equal(t, uint64(1), p.Bulkhead().Snapshot().Calls[catalog.AdmissionPermitted], "the rejected attempt never took a permit")

	// Now open: a new call is refused at once, returned unchanged, and the fallback gets
	// circuit_open.
	fromFallback, err := p.DoWithFallback(context.Background(),
		func(context.Context) error { calls++; return nil },
		func(_ context.Context, cause catalog.Cause, err error) error {
			assert.Equal(t, catalog.CauseCircuitOpen, cause)
			assert.ErrorIs(t, err, breaker.ErrOpen)
			return nil
		})
	require.NoError(t, err)
	assert.True(t, fromFallback)
	assert.Equal(t, 1, calls)
}

func TestPipelineNeverRetriesTheBulkheadsRejection(t *testing.T) {
	_, p, _, tr := newTraced(t, BreakerPerAttempt, breaker.Config{})
	release, err := p.Bulkhead().Acquire(context.Background()) // every permit taken
	require.NoError(t, err)
	defer release.Done()
	calls := 0
	var gotCause catalog.Cause
	fromFallback, err := p.DoWithFallback(context.Background(),
		func(context.Context) error { calls++; return nil },
		func(_ context.Context, cause catalog.Cause, err error) error {
			gotCause = cause
			return err
		})
	assert.True(t, fromFallback)
	require.ErrorIs(t, err, bulkhead.ErrFull)
	assert.Equal(t, catalog.CauseBulkheadFull, gotCause)
	assert.Zero(t, calls)
	assert.Equal(t, uint64(0), p.Retry().Snapshot().Retries, "no retry of a full bulkhead")
	snap := p.Breaker().Snapshot()
	assert.Equal(t, uint64(1), snap.Calls[catalog.CallIgnored], "a full bulkhead is not a breaker failure")
	assert.Equal(t, uint64(0), snap.Calls[catalog.CallFailed])
	assert.Equal(t, []string{"rejected:bulkhead", "breaker:ignored", "fallback:bulkhead_full"}, tr.get())
}

func TestPipelineBulkheadWaitNeverCountsForTheBreaker(t *testing.T) {
	// The call never ran, whichever way the wait for a permit ended: the breaker counts it as
	// ignored, never as a failure — a saturated bulkhead must not trip it.
	ends := []struct {
		name string
		end  func(ctx *deadlineCtx, cancel func())
		want error
	}{
		{"the caller's deadline passes", func(ctx *deadlineCtx, _ func()) { ctx.expire() }, context.DeadlineExceeded},
		{"the caller cancels", func(_ *deadlineCtx, cancel func()) { cancel() }, context.Canceled},
	}
	for _, order := range []Order{BreakerPerAttempt, BreakerPerCall} {
		for _, e := range ends {
			t.Run(order.String()+"/"+e.name, func(t *testing.T) {
				fake := clock.NewFake(time.Now())
				reg, err := NewRegistry()
				require.NoError(t, err)
				p, err := reg.Pipeline("api", PipelineConfig{Order: order,
					Retry:    &retry.Config{Clock: fake, DisableBudget: true},
					Breaker:  &breaker.Config{Clock: fake, Window: breaker.ConsecutiveFailures, WindowSize: 1},
					Bulkhead: &bulkhead.Config{MaxConcurrent: 1, MaxWait: time.Hour, Clock: fake}})
				require.NoError(t, err)
				release, err := p.Bulkhead().Acquire(context.Background())
				require.NoError(t, err)
				defer release.Done()

				dl := newDeadlineCtx(time.Now().Add(time.Hour))
				ctx, cancel := context.WithCancel(dl)
				defer cancel()
				errc := make(chan error, 1)
				go func() { errc <- p.Do(ctx, func(context.Context) error { return nil }) }()
				require.True(t, fake.WaitForTimers(1, nil), "waiting for a permit")
				e.end(dl, cancel)
				select {
				case err = <-errc:
				case <-time.After(guard):
					t.Fatal("the call never ended")
				}
				require.ErrorIs(t, err, e.want)
				bs := p.Breaker().Snapshot()
				assert.Equal(t, uint64(0), bs.Calls[catalog.CallFailed], "not a breaker failure")
				assert.Equal(t, uint64(1), bs.Calls[catalog.CallIgnored])
				assert.Equal(t, catalog.StateClosed, p.Breaker().State())
			})
		}
	}
}

func TestPipelineTotalDeadlineBoundsTheCall(t *testing.T) {
	t.Run("retry MaxDuration on the fake clock", func(t *testing.T) {
		fake := clock.NewFake(time.Now())
		reg, err := NewRegistry()
		require.NoError(t, err)
		rc := retry.Config{
			MaxAttempts:   10,
			MaxDuration:   time.Second,
			Backoff:       retry.Backoff{Strategy: retry.Constant, Base: 300 * time.Millisecond},
			DisableBudget: true,
			Clock:         fake,
		}
		p, err := reg.Pipeline("inventory", PipelineConfig{
			Retry:   &rc,
			Timeout: &timeout.Config{Timeout: 200 * time.Millisecond}, // also the least useful attempt time
		})
		require.NoError(t, err)
		start := fake.Now()
		var at []time.Duration
		var err2 error
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			err2 = p.Do(context.Background(), func(ctx context.Context) error {
				at = append(at, fake.Now().Sub(start))
				return errBoom
			})
		}()
		for fake.WaitForTimers(1, finished) {
			fake.Advance(300 * time.Millisecond)
		}
		<-finished
		// Attempts at 0, 300 and 600 ms; at 600 ms only 400 ms remain, less than the next delay
		// plus a useful attempt (300 + 200), so the retry gives up within the second.
		assert.Equal(t, []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond}, at)
		var rerr *retry.Error
		require.ErrorAs(t, err2, &rerr)
		assert.Equal(t, catalog.OutcomeGaveUp, rerr.Outcome())
	})

	t.Run("the caller's deadline", func(t *testing.T) {
		reg, err := NewRegistry()
		require.NoError(t, err)
		rc := retry.Config{MaxAttempts: 100, Backoff: retry.Backoff{Strategy: retry.None},
			DisableBudget: true, Idempotent: true}
		p, err := reg.Pipeline("search", PipelineConfig{
			Retry:    &rc,
			Bulkhead: &bulkhead.Config{MaxConcurrent: 1},
			Timeout:  &timeout.Config{Timeout: time.Hour},
		})
		require.NoError(t, err)
		ctx := newDeadlineCtx(time.Now().Add(time.Minute))
		calls := 0
		err = p.Do(ctx, func(actx context.Context) error {
			calls++
			d, ok := actx.Deadline()
			assert.True(t, ok)
			assert.False(t, d.After(ctx.deadline), "the attempt's deadline never exceeds the caller's")
			ctx.expire() // the caller's deadline passes while the dependency hangs
			<-actx.Done()
			return actx.Err()
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, timeout.ErrTimedOut, "the caller's deadline, not the attempt's")
		assert.Equal(t, 1, calls)
		assert.Equal(t, uint64(0), p.Retry().Snapshot().Retries, "no retry after the caller's deadline")
		assert.Equal(t, 0, p.Bulkhead().Snapshot().InFlight)
		assert.Equal(t, timeout.Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutFailed: 1}}, p.Timeout().Snapshot())
	})
}

// deadlineCtx is a caller's context whose deadline passes when expire is called, so that a test
// decides when, without waiting for the wall clock.
type deadlineCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	once     sync.Once
}

func newDeadlineCtx(d time.Time) *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), deadline: d, done: make(chan struct{})}
}

func (c *deadlineCtx) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestPipelineTimeoutIsRetriedWhenIdempotent(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	for _, idempotent := range []bool{false, true} {
		name := fmt.Sprintf("idempotent-%t", idempotent)
		rc := retry.Config{MaxAttempts: 2, Backoff: retry.Backoff{Strategy: retry.None},
			DisableBudget: true, Idempotent: idempotent}
		fake := clock.NewFake(time.Now())
		p, err := reg.Pipeline(name, PipelineConfig{Retry: &rc, Timeout: &timeout.Config{Timeout: time.Second, Clock: fake}})
		require.NoError(t, err)
		calls := 0
		err = p.Do(context.Background(), func(ctx context.Context) error {
			calls++
			fake.Advance(time.Second) // the attempt's own limit passes
			<-ctx.Done()
			return ctx.Err()
		})
		require.ErrorIs(t, err, timeout.ErrTimedOut, name)
		if idempotent {
			assert.Equal(t, 2, calls, name)
		} else {
			assert.Equal(t, 1, calls, "a timeout after the call may have run is not retried: %s", name)
		}
		assert.Equal(t, uint64(calls), p.Timeout().Snapshot().Calls[catalog.TimeoutTimedOut])
	}
}

func TestPipelineValidation(t *testing.T) {
	rc := func(f func(*retry.Config)) *retry.Config {
		c := retry.Config{}
		f(&c)
		return &c
	}
	tests := []struct {
		name  string
		cfg   PipelineConfig
		field string
		value any
		want  string
	}{
		{"order", PipelineConfig{Order: 7}, "Order", 7, `pipeline "p": Order = 7: unknown order`},
		{"attempt timeout twice", PipelineConfig{
			Retry:   rc(func(c *retry.Config) { c.AttemptTimeout = time.Second }),
			Timeout: &timeout.Config{Timeout: time.Second},
		}, "Retry.AttemptTimeout", time.Second, `pipeline "p": Retry.AttemptTimeout = 1s: the Timeout layer already bounds each attempt`},
		// A layer's own configuration error is reported as the pipeline's, the field prefixed
		// by the layer.
		{"retry layer", PipelineConfig{Retry: &retry.Config{MaxAttempts: -1}}, "Retry.MaxAttempts", -1, `pipeline "p": Retry.MaxAttempts = -1: must not be negative`},
		{"breaker layer", PipelineConfig{Breaker: &breaker.Config{WindowSize: -1}}, "Breaker.WindowSize", -1, `pipeline "p": Breaker.WindowSize = -1`},
		{"bulkhead layer", PipelineConfig{Bulkhead: &bulkhead.Config{MaxConcurrent: -1}}, "Bulkhead.MaxConcurrent", -1, `pipeline "p": Bulkhead.MaxConcurrent = -1`},
		{"timeout layer", PipelineConfig{Timeout: &timeout.Config{Timeout: -time.Second}}, "Timeout.Timeout", -time.Second, `pipeline "p": Timeout.Timeout = -1s`},
		{"fallback layer", PipelineConfig{Fallback: &fallback.Config{On: []catalog.Cause{}}}, "Fallback.On", []catalog.Cause{}, `pipeline "p": Fallback.On = []`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := NewRegistry()
			require.NoError(t, err)
			_, err = reg.Pipeline("p", tt.cfg)
			var ce *catalog.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "pipeline", ce.Primitive)
			assert.Equal(t, "p", ce.Name)
			assert.Equal(t, tt.field, ce.Field)
			assert.Equal(t, tt.value, ce.Value)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, reg.Retries(), "nothing is created from an invalid configuration")
			assert.Empty(t, reg.Breakers())
			assert.Empty(t, reg.Bulkheads())
		})
	}
	zero := PipelineConfig{Retry: &retry.Config{}, Breaker: &breaker.Config{}, Bulkhead: &bulkhead.Config{},
		Timeout: &timeout.Config{}, Fallback: &fallback.Config{}}
	require.NoError(t, zero.Validate(), "every layer's zero Config is a working default")
	reg, err := NewRegistry()
	require.NoError(t, err)
	_, err = reg.Pipeline("", PipelineConfig{})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "name", ce.Field)

}

func TestPipelineValidationNeverCallsTheConfiguredFunctions(t *testing.T) {
	// Validation looks at the structure only: functions that would retry everything or count
	// everything as a failure are accepted (the run-time rules make them harmless, see
	// TestPipelineRuntimeRulesHoldWhateverTheFunctionsSay), and no function is called while the
	// pipeline is built — not even one that panics.
	called := 0
	panicky := func() { called++; panic("called at construction") }
	cfgs := map[string]PipelineConfig{
		"RetryIf retries everything": {
			Retry:    &retry.Config{RetryIf: func(error, classify.Verdict) bool { return true }},
			Breaker:  &breaker.Config{},
			Bulkhead: &bulkhead.Config{MaxConcurrent: 1},
		},
		"Classify calls everything retryable": {
			Retry: &retry.Config{Classify: func(error, bool) classify.Verdict {
				return classify.Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassError}
			}},
			Breaker: &breaker.Config{},
		},
		"breaker counts everything as a failure": {
			Breaker:  &breaker.Config{Classify: func(error) catalog.CallKind { return catalog.CallFailed }},
			Bulkhead: &bulkhead.Config{MaxConcurrent: 1},
		},
		"panicking functions": {
			Retry: &retry.Config{
				RetryIf:  func(error, classify.Verdict) bool { panicky(); return false },
				Classify: func(error, bool) classify.Verdict { panicky(); return classify.Verdict{} },
			},
			Breaker:  &breaker.Config{Classify: func(error) catalog.CallKind { panicky(); return 0 }},
			Bulkhead: &bulkhead.Config{MaxConcurrent: 1},
			Fallback: &fallback.Config{Classify: func(error) catalog.Cause { panicky(); return 0 }},
		},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, cfg.Validate())
			reg, err := NewRegistry()
			require.NoError(t, err)
			_, err = reg.Pipeline("p", cfg)
			require.NoError(t, err)
			assert.Zero(t, called, "no configured function runs while the pipeline is built")
		})
	}
}

func TestPipelineRuntimeRulesHoldWhateverTheFunctionsSay(t *testing.T) {
	// A retry told to retry everything and a breaker told to count everything as a failure: the
	// retry still never retries an open breaker or a full bulkhead, and the breaker never counts
	// the bulkhead's rejection.
	retryAll := func(error, classify.Verdict) bool { return true }
	allRetryable := func(error, bool) classify.Verdict {
		return classify.Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassError}
	}
	failAll := func(error) catalog.CallKind { return catalog.CallFailed }
	for _, order := range []Order{BreakerPerAttempt, BreakerPerCall} {
		for _, hook := range []string{"RetryIf", "Classify"} {
			t.Run(order.String()+"/"+hook, func(t *testing.T) {
				reg, err := NewRegistry()
				require.NoError(t, err)
				rc := retry.Config{MaxAttempts: 5, Backoff: retry.Backoff{Strategy: retry.None},
					DisableBudget: true}
				if hook == "RetryIf" {
					rc.RetryIf = retryAll
				} else {
					rc.Classify = allRetryable
				}
				p, err := reg.Pipeline("api", PipelineConfig{Order: order, Retry: &rc,
					Breaker:  &breaker.Config{Classify: failAll, Window: breaker.ConsecutiveFailures, WindowSize: 1},
					Bulkhead: &bulkhead.Config{MaxConcurrent: 1}})
				require.NoError(t, err)

				// A full bulkhead: one attempt, refused, not retried, not a breaker failure.
				release, err := p.Bulkhead().Acquire(context.Background())
				require.NoError(t, err)
				calls := 0
				err = p.Do(context.Background(), func(context.Context) error { calls++; return nil })
				release.Done()
				require.ErrorIs(t, err, bulkhead.ErrFull)
				assert.Zero(t, calls)
				assert.Equal(t, uint64(0), p.Retry().Snapshot().Retries, "a full bulkhead is never retried")
				assert.Equal(t, uint64(1), p.Bulkhead().Snapshot().Calls[catalog.AdmissionRejected])
				bs := p.Breaker().Snapshot()
				assert.Equal(t, uint64(0), bs.Calls[catalog.CallFailed], "a full bulkhead never counts as a breaker failure")
				assert.Equal(t, uint64(1), bs.Calls[catalog.CallIgnored])
				assert.Equal(t, catalog.StateClosed, p.Breaker().State())

				// An open breaker: refused at once, never retried.
				p.Breaker().ForceOpen()
				err = p.Do(context.Background(), func(context.Context) error { calls++; return nil })
				require.ErrorIs(t, err, breaker.ErrOpen)
				assert.Zero(t, calls)
				assert.Equal(t, uint64(0), p.Retry().Snapshot().Retries, "an open breaker is never retried")
			})
		}
	}
}

func TestPipelinePrimitivesComeFromTheRegistry(t *testing.T) {
	reg, err := NewRegistry(WithMaxNames(1))
	require.NoError(t, err)
	rc := retry.Config{}
	cfg := PipelineConfig{Retry: &rc, Breaker: &breaker.Config{}, Bulkhead: &bulkhead.Config{MaxConcurrent: 2},
		Timeout: &timeout.Config{Timeout: time.Second}, Fallback: &fallback.Config{}}
	a, err := reg.Pipeline("payments", cfg)
	require.NoError(t, err)
	b, err := reg.Pipeline("payments", cfg)
	require.NoError(t, err)
	assert.Same(t, a.Retry(), b.Retry(), "one dependency, one set of primitives")
	assert.Same(t, a.Breaker(), b.Breaker())
	assert.Same(t, a.Bulkhead(), b.Bulkhead())
	assert.Same(t, a.Timeout(), b.Timeout())
	assert.Same(t, a.Fallback(), b.Fallback())
	assert.Same(t, a.Breaker(), reg.Breakers()[0].Value)
	assert.Equal(t, 5*time.Second/5, reg.Retries()[0].Value.Config().MinAttemptTime, "MinAttemptTime defaults to the timeout")
	assert.False(t, a.Overflowed())

	c, err := reg.Pipeline("orders", cfg)
	require.NoError(t, err)
	assert.True(t, c.Overflowed())
	assert.Equal(t, catalog.OverflowName, c.Breaker().Name())
	assert.Equal(t, uint64(1), reg.OverflowCount(catalog.CircuitBreaker))
	assert.Equal(t, uint64(1), reg.OverflowCount(catalog.Retry))

	// A zero Timeout layer has the default limit, and so does MinAttemptTime.
	reg2, err := NewRegistry()
	require.NoError(t, err)
	z, err := reg2.Pipeline("zero-timeout", PipelineConfig{Retry: &retry.Config{}, Timeout: &timeout.Config{}})
	require.NoError(t, err)
	assert.Equal(t, timeout.DefaultTimeout, z.Timeout().Config().Timeout)
	assert.Equal(t, timeout.DefaultTimeout, z.Retry().Config().MinAttemptTime)

	none, err := reg.Pipeline("plain", PipelineConfig{})
	require.NoError(t, err)
	assert.Nil(t, none.Retry())
	v, err := Call(context.Background(), none, func(context.Context) (int, error) { return 7, nil })
	require.NoError(t, err)
	assert.Equal(t, 7, v)
}

// statusError reports an HTTP status, as httpx.Error does (classify.StatusError), for an
// idempotent request (classify.IdempotentHint).
type statusError int

func (e statusError) Error() string    { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusError) HTTPStatus() int  { return int(e) }
func (e statusError) Idempotent() bool { return true }

func TestBreakerOutcome(t *testing.T) {
	status := func(code int) error { return statusError(code) }
	tests := []struct {
		name string
		err  error
		want catalog.CallKind
	}{
		{"nil", nil, catalog.CallSuccessful},
		{"404: the dependency answered", status(http.StatusNotFound), catalog.CallSuccessful},
		{"401", status(http.StatusUnauthorized), catalog.CallSuccessful},
		{"501", status(http.StatusNotImplemented), catalog.CallSuccessful},
		{"503", status(http.StatusServiceUnavailable), catalog.CallFailed},
		{"429", status(http.StatusTooManyRequests), catalog.CallFailed},
		{"plain error", errBoom, catalog.CallFailed},
		{"deadline", context.DeadlineExceeded, catalog.CallFailed},
		{"attempt timed out", &timeout.TimedOutError{Name: "x", Err: context.DeadlineExceeded}, catalog.CallFailed},
		{"cancelled", fmt.Errorf("call: %w", context.Canceled), catalog.CallIgnored},
		{"breaker open", &breaker.OpenError{Name: "x"}, catalog.CallIgnored},
		{"bulkhead full", &bulkhead.FullError{Name: "x"}, catalog.CallIgnored},
		{"business", classify.Business(errBoom), catalog.CallIgnored},
		{"business 404: ignored, not a success", classify.Business(status(http.StatusNotFound)), catalog.CallIgnored},
		{"business, wrapped", fmt.Errorf("pay: %w", classify.Business(errBoom)), catalog.CallIgnored},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, breaker.DefaultClassify(tt.err), tt.name)
	}
}

// statusErr reports an HTTP status, as the HTTP middleware's errors do.
type statusErr int

func (e statusErr) Error() string   { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusErr) HTTPStatus() int { return int(e) }

func TestPipelineBusinessErrorMeansTheSameEverywhere(t *testing.T) {
	// classify.Business has one meaning in every composition: the call is not retried, the
	// breaker counts it as ignored (not a failure, not a success), the fallback does not run, and
	// the caller receives the error.
	failAll := func(error) catalog.CallKind { return catalog.CallFailed }
	compositions := []struct {
		name string
		cfg  func(fake *clock.Fake) PipelineConfig
	}{
		{"breaker per attempt", func(fake *clock.Fake) PipelineConfig {
			return PipelineConfig{Order: BreakerPerAttempt, Retry: &retry.Config{Clock: fake}, Breaker: &breaker.Config{Clock: fake},
				Bulkhead: &bulkhead.Config{}, Timeout: &timeout.Config{Clock: fake}, Fallback: &fallback.Config{}}
		}},
		{"breaker per call", func(fake *clock.Fake) PipelineConfig {
			return PipelineConfig{Order: BreakerPerCall, Retry: &retry.Config{Clock: fake}, Breaker: &breaker.Config{Clock: fake},
				Bulkhead: &bulkhead.Config{}, Timeout: &timeout.Config{Clock: fake}, Fallback: &fallback.Config{}}
		}},
		{"breaker classifier that fails everything", func(fake *clock.Fake) PipelineConfig {
			return PipelineConfig{Retry: &retry.Config{Clock: fake}, Breaker: &breaker.Config{Clock: fake, Classify: failAll},
				Fallback: &fallback.Config{}}
		}},
		{"fallback that answers only errors", func(fake *clock.Fake) PipelineConfig {
			return PipelineConfig{Retry: &retry.Config{Clock: fake}, Breaker: &breaker.Config{Clock: fake},
				Fallback: &fallback.Config{On: []catalog.Cause{catalog.CauseError}}}
		}},
		{"no retry", func(fake *clock.Fake) PipelineConfig {
			return PipelineConfig{Breaker: &breaker.Config{Clock: fake}, Fallback: &fallback.Config{}}
		}},
	}
	markers := []struct {
		name string
		err  error
	}{
		{"business", classify.Business(errBoom)},
		{"business, wrapped", fmt.Errorf("pay: %w", classify.Business(errBoom))},
		{"business around a 404", classify.Business(fmt.Errorf("%w: %w", errBoom, statusErr(http.StatusNotFound)))},
		{"business around a 503", classify.Business(fmt.Errorf("%w: %w", errBoom, statusErr(http.StatusServiceUnavailable)))},
	}
	for _, c := range compositions {
		for _, m := range markers {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				fake := clock.NewFake(time.Now())
				reg, err := NewRegistry()
				require.NoError(t, err)
				p, err := reg.Pipeline("payments", c.cfg(fake))
				require.NoError(t, err)
				calls, fallbacks := 0, 0
				fromFallback, err := p.DoWithFallback(context.Background(),
					func(context.Context) error { calls++; return m.err },
					func(context.Context, catalog.Cause, error) error { fallbacks++; return nil })

				assert.Equal(t, 1, calls, "never retried")
				assert.False(t, fromFallback, "never a fallback cause")
				assert.Zero(t, fallbacks)
				require.ErrorIs(t, err, errBoom, "the caller receives the error")
				assert.True(t, classify.IsBusiness(err))
				assert.Equal(t, fallback.Snapshot{}, p.Fallback().Snapshot(), "the fallback counts nothing")
				bs := p.Breaker().Snapshot()
				assert.Equal(t, uint64(1), bs.Calls[catalog.CallIgnored], "the breaker ignores it")
				assert.Equal(t, uint64(0), bs.Calls[catalog.CallFailed])
				assert.Equal(t, uint64(0), bs.Calls[catalog.CallSuccessful])
				if p.Retry() != nil {
					assert.Equal(t, uint64(0), p.Retry().Snapshot().Retries)
				}
			})
		}
	}
}

func TestPipelineFourXXNeverTripsTheBreaker(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	p, err := reg.Pipeline("api", PipelineConfig{Breaker: &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 2}})
	require.NoError(t, err)
	for range 10 {
		err := p.Do(context.Background(), func(context.Context) error { return statusError(404) })
		require.Error(t, err)
	}
	assert.Equal(t, catalog.StateClosed, p.Breaker().State())
	assert.Equal(t, uint64(10), p.Breaker().Snapshot().Calls[catalog.CallSuccessful])
}

func TestPipelinePanicReturnsEveryPermit(t *testing.T) {
	for _, order := range []Order{BreakerPerAttempt, BreakerPerCall} {
		t.Run(order.String(), func(t *testing.T) {
			reg, err := NewRegistry()
			require.NoError(t, err)
			rc := retry.Config{}
			p, err := reg.Pipeline("api", PipelineConfig{Order: order, Retry: &rc, Breaker: &breaker.Config{},
				Bulkhead: &bulkhead.Config{MaxConcurrent: 1}, Timeout: &timeout.Config{Timeout: time.Second}})
			require.NoError(t, err)
			assert.PanicsWithValue(t, "boom", func() {
				_ = p.Do(context.Background(), func(context.Context) error { panic("boom") })
			})
			assert.Equal(t, 0, p.Bulkhead().Snapshot().InFlight)
			assert.Equal(t, timeout.Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutFailed: 1}}, p.Timeout().Snapshot())
			assert.Equal(t, uint64(1), p.Breaker().Snapshot().Calls[catalog.CallIgnored])
			require.NoError(t, p.Do(context.Background(), func(context.Context) error { return nil }), "the permit is back")
		})
	}
}

func TestPipelineHooks(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	rc := retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{Strategy: retry.None}, DisableBudget: true}
	p, err := reg.Pipeline("api", PipelineConfig{Retry: &rc, Breaker: &breaker.Config{},
		Timeout: &timeout.Config{Timeout: time.Hour}, Fallback: &fallback.Config{}})
	require.NoError(t, err)

	type value struct {
		n   int
		ctx context.Context
	}
	var discarded []int
	var released []int
	n := 0
	h := retry.Hooks[*value]{
		Endpoint: "GET api/v1",
		Check: func(v *value, err error) error {
			if err == nil && v.n < 3 {
				return errors.New("not yet") // e.g. a 503 response
			}
			return err
		},
		Discard: func(v *value) { discarded = append(discarded, v.n) },
		Retain: func(v *value, release func()) *value {
			k := v.n
			v.ctx = context.WithValue(v.ctx, "release", func() { released = append(released, k); release() })
			return v
		},
	}
	v, fromFallback, err := CallWith(context.Background(), p, func(ctx context.Context) (*value, error) {
		n++
		return &value{n: n, ctx: ctx}, nil
	}, h, nil)
	require.NoError(t, err)
	assert.False(t, fromFallback)
	assert.Equal(t, 3, v.n)
	assert.Equal(t, []int{1, 2}, discarded, "the values of repeated attempts are discarded")
	assert.NoError(t, v.ctx.Err(), "the retained value's attempt context stays alive")
	v.ctx.Value("release").(func())()
	assert.Equal(t, context.Canceled, v.ctx.Err())
	assert.Equal(t, uint64(2), p.Breaker().Snapshot().Calls[catalog.CallFailed], "the breaker sees Check's verdict")

	// When the fallback replaces the last value, that value is discarded too.
	discarded = nil
	n = -10
	v, fromFallback, err = CallWith(context.Background(), p, func(ctx context.Context) (*value, error) {
		n++
		return &value{n: n, ctx: ctx}, nil
	}, h, func(context.Context, catalog.Cause, error) (*value, error) { return &value{n: 99}, nil })
	require.NoError(t, err)
	assert.True(t, fromFallback)
	assert.Equal(t, 99, v.n)
	assert.Equal(t, []int{-9, -8, -7}, discarded)
}

func TestPipelineSuccessPathAllocations(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	rc := retry.Config{}
	p, err := reg.Pipeline("hot", PipelineConfig{Retry: &rc, Breaker: &breaker.Config{},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 1 << 20}, Timeout: &timeout.Config{Timeout: time.Second},
		Fallback: &fallback.Config{}})
	require.NoError(t, err)
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	vfn := func(context.Context) (int, error) { return 1, nil }
	fb := fallback.Value(0)
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, func() { _ = p.Do(ctx, fn) }), 1.0)
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, func() { _, _ = Call(ctx, p, vfn) }), 1.0)
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, func() { _, _, _ = CallWithFallback(ctx, p, vfn, fb) }), 1.0)
}

func TestPipelineBreakerPerCallRejectsBeforeTheRetry(t *testing.T) {
	_, p, _, tr := newTraced(t, BreakerPerCall, breaker.Config{})
	p.Breaker().ForceOpen()
	calls := 0
	err := p.Do(context.Background(), func(context.Context) error { calls++; return nil })
	require.ErrorIs(t, err, breaker.ErrOpen)
	var rerr *retry.Error
	assert.False(t, errors.As(err, &rerr), "the retry never saw the call")
	assert.Zero(t, calls)
	snap := p.Retry().Snapshot()
	var logical uint64
	for _, n := range snap.Calls {
		logical += n
	}
	assert.Zero(t, logical, "no logical call reached the retry")
	assert.Equal(t, uint64(0), p.Bulkhead().Snapshot().Calls[catalog.AdmissionPermitted])
	assert.Equal(t, []string{"rejected:circuitbreaker"}, tr.get())
}
