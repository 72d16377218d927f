package history

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Dependency is the name of the dependency behind the full pipeline.
const Dependency = "payments"

// Second is the name of the second dependency that [WithMoreNames] adds: a plain breaker and
// retry.
const Second = "inventory"

// MaxNames is the registry's cardinality guard under [WithMoreNames]: Dependency, Second and
// one more name per primitive kind; the other breakers share the _overflow instance.
const MaxNames = 3

// guard bounds every wait of the scripted history.
const guard = 10 * time.Second

// epoch is where the history's fake clock starts.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Configuration of the scripted dependency.
const (
	attemptTimeout = 2 * time.Second        // the attempt's time limit
	slowCall       = time.Second            // the breaker's slow-call duration
	openDuration   = 10 * time.Second       // the breaker's open duration
	backoff        = 100 * time.Millisecond // the retry's constant backoff
	bulkheadWait   = 100 * time.Millisecond // the bulkhead's MaxWait
)

// History is a registry holding [Dependency] behind a full pipeline on a fake clock, with a
// script ([History.EveryPath]) that drives the clock through retries, timeouts and bulkhead
// waits. Its methods must be called from the test's goroutine.
type History struct {
	tb        testing.TB
	reg       *instrument.Registry
	p         *instrument.Pipeline
	clk       *clock.Fake
	retrying  chan events.Retry
	moreNames bool
}

// Option configures a History.
type Option func(*History)

// WithMoreNames gives the registry a cardinality guard of [MaxNames] names and makes
// [History.EveryPath], after the pipeline's paths, call [Second] through a plain breaker and
// retry (default configurations: no slow-call detection) and force its breaker open, then
// register three more breakers, of which the guard refuses two.
func WithMoreNames() Option {
	return func(h *History) { h.moreNames = true }
}

// New returns a fresh History: a new registry, on a fake clock, holding [Dependency] behind a
// full pipeline — a retry of 3 attempts with a constant 100ms backoff and a budget without
// floor or decay, a breaker (window 20, at least 10 calls, failure rate 50%, slow calls from
// 1s, open for 10s without jitter, one probe), a bulkhead of one permit waiting at most 100ms,
// a 2s timeout and a fallback. No call has been made.
func New(tb testing.TB, opts ...Option) *History {
	tb.Helper()
	h := &History{tb: tb, clk: clock.NewFake(epoch), retrying: make(chan events.Retry, 16)}
	for _, o := range opts {
		o(h)
	}
	var regOpts []instrument.RegistryOption
	if h.moreNames {
		regOpts = append(regOpts, instrument.WithMaxNames(MaxNames))
	}
	reg, err := instrument.NewRegistry(regOpts...)
	require.NoError(tb, err)
	h.reg = reg
	rc := retry.Config{MaxAttempts: 3, Clock: h.clk,
		Backoff: retry.Backoff{Strategy: retry.Constant, Base: backoff},
		Budget:  retry.BudgetConfig{DisableFloor: true, DisableDecay: true}}
	h.p, err = reg.Pipeline(Dependency, instrument.PipelineConfig{
		Retry: &rc,
		Breaker: &breaker.Config{WindowSize: 20, MinCalls: 10, FailureRateThreshold: 0.5, SlowCallDuration: slowCall,
			OpenDuration: openDuration, DisableJitter: true, HalfOpenCalls: 1, Clock: h.clk},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 1, MaxWait: bulkheadWait, Clock: h.clk},
		Timeout:  &timeout.Config{Timeout: attemptTimeout, Clock: h.clk},
		Fallback: &fallback.Config{},
	})
	require.NoError(tb, err)
	reg.Events().Retries.Add(func(e events.Retry) {
		// Only the pipeline's retry waits are the script's to let pass.
		if e.Name == Dependency && e.Outcome == catalog.OutcomeRetrying {
			h.retrying <- e
		}
	})
	return h
}

// Registry returns the history's registry.
func (h *History) Registry() *instrument.Registry { return h.reg }

// Pipeline returns the pipeline of [Dependency].
func (h *History) Pipeline() *instrument.Pipeline { return h.p }

// Clock returns the fake clock every primitive of the registry runs on.
func (h *History) Clock() *clock.Fake { return h.clk }

// start runs fn through the pipeline with a fallback in a goroutine; the result arrives on the
// returned channel.
func (h *History) start(fn func(context.Context) error) <-chan error {
	return h.startContext(context.Background(), fn)
}

// startContext is start with the caller's context ctx.
func (h *History) startContext(ctx context.Context, fn func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.p.DoWithFallback(ctx, fn, func(context.Context, catalog.Cause, error) error { return nil })
		done <- err
	}()
	return done
}

// call runs fn through the pipeline, letting every retry wait pass on the fake clock, and
// returns the call's error.
func (h *History) call(fn func(context.Context) error) error {
	h.tb.Helper()
	return h.callContext(context.Background(), fn)
}

// callContext is call with the caller's context ctx.
func (h *History) callContext(ctx context.Context, fn func(context.Context) error) error {
	h.tb.Helper()
	done := h.startContext(ctx, fn)
	for {
		select {
		case err := <-done:
			return err
		case e := <-h.retrying:
			// The attempt is over (its time limit stopped): the next timer is the retry's wait.
			require.True(h.tb, h.clk.WaitForTimers(1, nil))
			h.clk.Advance(e.Delay)
		case <-time.After(guard):
			h.tb.Fatal("the call did not finish")
		}
	}
}

// takes returns an attempt that lasts d on the fake clock and returns err.
func (h *History) takes(d time.Duration, err error) func(context.Context) error {
	return func(context.Context) error {
		h.clk.Advance(d)
		return err
	}
}

// sequence returns an attempt function returning errs[i] on its i-th call, then nil.
func sequence(errs ...error) func(context.Context) error {
	i := 0
	return func(context.Context) error {
		defer func() { i++ }()
		if i < len(errs) {
			return errs[i]
		}
		return nil
	}
}

var (
	getPay, _  = http.NewRequest(http.MethodGet, "http://payments.internal/v1/pay", nil)
	postPay, _ = http.NewRequest(http.MethodPost, "http://payments.internal/v1/pay", nil)

	err503RetryAfter = httpx.Result(getPay, &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"1"}}}, nil)
	err503           = httpx.Result(getPay, &http.Response{StatusCode: http.StatusServiceUnavailable}, nil)
	// err504 is a gateway timeout of a request that may not be repeated: a breaker failure the
	// retry does not retry, so the fallback sees it as is (cause error).
	err504 = httpx.Result(postPay, &http.Response{StatusCode: http.StatusGatewayTimeout}, nil)
	// errBusiness is the answer of a dependency that worked: marked with classify.Business.
	errBusiness = errors.New("insufficient funds")
)

// EveryPath runs, on [Dependency] behind its full pipeline: successes, a slow success, retries
// after Retry-After and after backoff, calls that run out of attempts, a retry the budget
// denies, a business error, the caller's cancellation during an attempt and while waiting for
// the bulkhead, a timed-out attempt, a non-retryable failure, a bulkhead wait and a bulkhead
// rejection (ignored by the breaker), a trip, rejections by the open breaker, a failed probe and
// a successful one — and with them a fallback of every cause. It checks that each path ran.
// Under [WithMoreNames] it then runs the calls that option describes. Call it once, on a new
// History.
func (h *History) EveryPath() {
	t := h.tb
	t.Helper()
	ok := func(context.Context) error { return nil }
	p := h.p

	// 40 first-attempt successes earn 4 budget tokens.
	for range 40 {
		require.NoError(t, h.call(ok))
	}

	// The bulkhead: one call holds the only permit; a second waits 50 ms for it; a third waits
	// the whole MaxWait and is rejected (the fallback answers: bulkhead_full).
	hold, release := make(chan struct{}), make(chan struct{})
	holder := h.start(func(context.Context) error { close(hold); <-release; return nil })
	<-hold
	waiter := h.start(ok)
	require.True(t, h.clk.WaitForTimers(2, nil)) // the holder's time limit and the waiter's MaxWait
	h.clk.Advance(50 * time.Millisecond)
	close(release)
	require.NoError(t, <-holder)
	require.NoError(t, <-waiter)
	hold, release = make(chan struct{}), make(chan struct{})
	holder = h.start(func(context.Context) error { close(hold); <-release; return nil })
	<-hold
	rejected := h.start(ok)
	require.True(t, h.clk.WaitForTimers(2, nil))
	h.clk.Advance(bulkheadWait)
	require.NoError(t, <-rejected)
	// A caller cancels while it waits for the permit: the bulkhead counts an aborted admission.
	waitCtx, cancelWait := context.WithCancel(context.Background())
	aborted := h.startContext(waitCtx, ok)
	require.True(t, h.clk.WaitForTimers(2, nil))
	cancelWait()
	require.ErrorIs(t, <-aborted, context.Canceled)
	close(release)
	require.NoError(t, <-holder)

	// One slow success.
	require.NoError(t, h.call(h.takes(slowCall+500*time.Millisecond, nil)))

	// A 503 with Retry-After, then success; a 503, then success after the backoff.
	require.NoError(t, h.call(sequence(err503RetryAfter)))
	require.NoError(t, h.call(sequence(err503)))
	for range 10 {
		require.NoError(t, h.call(ok))
	}
	// 503s until the budget denies a retry: the calls that ran out of attempts and the one
	// denied a retry get the fallback (retries_exhausted).
	for i := 0; p.Retry().Snapshot().BudgetDenied == 0; i++ {
		require.Less(t, i, 5, "the budget never denied a retry")
		require.NoError(t, h.call(sequence(err503, err503, err503)))
	}
	for range 10 {
		require.NoError(t, h.call(ok))
	}
	// A business error: never retried, ignored by the breaker, no fallback: the caller receives
	// it (the retry counts a failed call of class error).
	require.True(t, classify.IsBusiness(h.call(sequence(classify.Business(errBusiness)))))
	// The caller cancels during an attempt: never retried, not a breaker failure, no fallback
	// (the retry counts an aborted call of class canceled, the timeout an aborted attempt).
	ctx, cancel := context.WithCancel(context.Background())
	err := h.callContext(ctx, func(ctx context.Context) error { cancel(); <-ctx.Done(); return ctx.Err() })
	require.ErrorIs(t, err, context.Canceled)
	// An attempt that hangs until its time limit: not retried (the retry is not idempotent),
	// slow and failed for the breaker; the fallback answers (timeout).
	done := h.start(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	require.True(t, h.clk.WaitForTimers(1, nil))
	h.clk.Advance(attemptTimeout)
	require.NoError(t, <-done)
	// A non-retryable failure: the fallback answers (error).
	require.NoError(t, h.call(sequence(err504)))

	// Non-retryable failures until the breaker trips; then two calls it rejects (circuit_open).
	for i := 0; p.Breaker().State() != catalog.StateOpen; i++ {
		require.Less(t, i, 20, "the breaker never tripped")
		require.NoError(t, h.call(sequence(err504)))
	}
	require.NoError(t, h.call(ok))
	require.NoError(t, h.call(ok))
	// A failed probe reopens it; a successful one closes it.
	h.clk.Advance(openDuration)
	require.NoError(t, h.call(sequence(err504)))
	require.Equal(t, catalog.StateOpen, p.Breaker().State())
	h.clk.Advance(openDuration)
	require.NoError(t, h.call(ok))
	require.Equal(t, catalog.StateClosed, p.Breaker().State())

	h.checkEveryPathRan()
	if h.moreNames {
		h.runMoreNames()
	}
}

// checkEveryPathRan asserts that the pipeline's primitives recorded every path.
func (h *History) checkEveryPathRan() {
	t := h.tb
	t.Helper()
	p := h.p
	b, r, bh, to, fb := p.Breaker().Snapshot(), p.Retry().Snapshot(), p.Bulkhead().Snapshot(), p.Timeout().Snapshot(), p.Fallback().Snapshot()
	for _, tr := range [][2]catalog.State{{catalog.StateClosed, catalog.StateOpen}, {catalog.StateOpen, catalog.StateHalfOpen},
		{catalog.StateHalfOpen, catalog.StateOpen}, {catalog.StateHalfOpen, catalog.StateClosed}} {
		assert.NotZero(t, b.Transitions[tr[0]][tr[1]], "transition %s→%s", tr[0], tr[1])
	}
	for _, k := range catalog.CallKinds {
		assert.NotZero(t, b.Calls[k], "breaker calls %s", k)
	}
	assert.NotZero(t, b.NotPermitted, "rejections")
	assert.NotZero(t, b.Trips[catalog.TripProbeFailed], "failed probe")
	for _, src := range catalog.DelaySources {
		assert.NotZero(t, r.Backoff[src].Count, "retry delays of source %s", src)
	}
	assert.NotZero(t, r.BudgetDenied, "budget denial")
	for _, k := range []catalog.RetryKind{catalog.RetrySuccessfulWithoutRetry, catalog.RetrySuccessfulWithRetry,
		catalog.RetryFailedWithoutRetry, catalog.RetryFailedWithRetry} {
		assert.NotZero(t, r.Calls[k], "retry calls %s", k)
	}
	assert.NotZero(t, r.Calls[catalog.RetryAborted], "retry calls aborted (the caller's cancellation)")
	for _, c := range []catalog.Class{catalog.ClassError, catalog.ClassCanceled} {
		assert.NotZero(t, r.Errors[c], "retry errors of class %s", c)
	}
	assert.NotZero(t, to.Calls[catalog.TimeoutAborted], "timeout aborted (the caller's cancellation)")
	for _, a := range []catalog.Admission{catalog.AdmissionPermitted, catalog.AdmissionRejected} {
		assert.NotZero(t, bh.Calls[a], "bulkhead %s", a)
	}
	assert.NotZero(t, bh.Calls[catalog.AdmissionAborted], "bulkhead aborted (the caller's cancellation while waiting)")
	assert.NotZero(t, bh.Wait.Sum, "bulkhead wait")
	for _, k := range []catalog.TimeoutKind{catalog.TimeoutSuccessful, catalog.TimeoutFailed, catalog.TimeoutTimedOut} {
		assert.NotZero(t, to.Calls[k], "timeout %s", k)
	}
	for _, cause := range catalog.Causes {
		assert.NotZero(t, fb.Calls[cause], "fallback cause %s", cause)
	}
}

// runMoreNames runs the calls [WithMoreNames] describes.
func (h *History) runMoreNames() {
	t := h.tb
	t.Helper()
	ok := func(context.Context) error { return nil }
	// A second dependency through a default breaker and retry (no slow-call detection), forced
	// open and left open: a visited state and a manual trip.
	b2, err := h.reg.Breaker(Second, breaker.Config{Clock: h.clk})
	require.NoError(t, err)
	r2, err := h.reg.Retry(Second, retry.Config{Clock: h.clk, Backoff: retry.Backoff{Strategy: retry.None}})
	require.NoError(t, err)
	for range 5 {
		require.NoError(t, r2.Do(context.Background(), func(ctx context.Context) error { return b2.Do(ctx, ok) }))
	}
	require.Error(t, r2.Do(context.Background(), func(context.Context) error { return errors.New("boom") }))
	b2.ForceOpen()
	// Names past the guard (MaxNames 3) share the _overflow breaker.
	for _, n := range []string{"extra-1", "extra-2", "extra-3"} {
		br, err := h.reg.Breaker(n, breaker.Config{Clock: h.clk})
		require.NoError(t, err)
		require.NoError(t, br.Do(context.Background(), ok))
	}
	require.NotZero(t, h.reg.OverflowCount(catalog.CircuitBreaker))
}
