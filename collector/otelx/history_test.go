package otelx

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// historyGuard bounds every wait of the scripted history.
const historyGuard = 10 * time.Second

// Configuration of the scripted dependency.
const (
	histTimeout     = 2 * time.Second
	histSlow        = time.Second
	histOpen        = 10 * time.Second
	histBackoff     = 100 * time.Millisecond
	histBulkheadMax = 100 * time.Millisecond
)

// history is a registry holding a dependency behind a full pipeline on a fake clock, a plain
// breaker and retry of a second dependency, and names refused by the cardinality guard; its
// script drives the clock through retries, timeouts and bulkhead waits.
type history struct {
	t        testing.TB
	reg      *instrument.Registry
	p        *instrument.Pipeline
	clk      *clock.Fake
	retrying chan events.Retry
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newHistory(t testing.TB, clk *clock.Fake) *history {
	t.Helper()
	h := &history{t: t, clk: clk, retrying: make(chan events.Retry, 16)}
	reg, err := instrument.NewRegistry(instrument.WithMaxNames(3))
	require.NoError(t, err)
	h.reg = reg
	rc := retry.Config{MaxAttempts: 3, Clock: clk,
		Backoff: retry.Backoff{Strategy: retry.Constant, Base: histBackoff},
		Budget:  retry.BudgetConfig{NoFloor: true, NoDecay: true}}
	h.p, err = reg.Pipeline("payments", instrument.PipelineConfig{
		Retry: &rc,
		Breaker: &breaker.Config{WindowSize: 20, MinCalls: 10, FailureRateThreshold: 0.5, SlowCallDuration: histSlow,
			OpenDuration: histOpen, NoJitter: true, HalfOpenCalls: 1, Clock: clk},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 1, MaxWait: histBulkheadMax, Clock: clk},
		Timeout:  &timeout.Config{Timeout: histTimeout, Clock: clk},
		Fallback: &fallback.Config{},
	})
	require.NoError(t, err)
	reg.Events().Retries.Add(func(e events.Retry) {
		if e.Outcome == catalog.OutcomeRetrying {
			h.retrying <- e
		}
	})
	return h
}

// start runs fn through the pipeline with a fallback in a goroutine.
func (h *history) start(fn func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.p.DoWithFallback(context.Background(), fn, func(context.Context, catalog.Cause, error) error { return nil })
		done <- err
	}()
	return done
}

// call runs fn through the pipeline, letting every retry wait pass on the fake clock.
func (h *history) call(fn func(context.Context) error) error {
	h.t.Helper()
	done := h.start(fn)
	for {
		select {
		case err := <-done:
			return err
		case e := <-h.retrying:
			require.True(h.t, h.clk.WaitForTimers(1, nil))
			h.clk.Advance(e.Delay)
		case <-time.After(historyGuard):
			h.t.Fatal("the call did not finish")
		}
	}
}

func (h *history) takes(d time.Duration, err error) func(context.Context) error {
	return func(context.Context) error {
		h.clk.Advance(d)
		return err
	}
}

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
	err504           = httpx.Result(postPay, &http.Response{StatusCode: http.StatusGatewayTimeout}, nil)
)

// everyPath runs every path of the full pipeline (successes, a slow success, retries after
// Retry-After and after backoff, exhausted retries, a budget denial, a timed-out attempt,
// non-retryable failures, a bulkhead wait and rejection, a trip, rejections, a failed probe and
// a successful one, a fallback of every cause), then calls of a second dependency through a
// plain breaker and retry, and names the cardinality guard refuses.
func (h *history) everyPath() {
	t := h.t
	t.Helper()
	ok := func(context.Context) error { return nil }
	p := h.p
	for range 40 {
		require.NoError(t, h.call(ok))
	}
	hold, release := make(chan struct{}), make(chan struct{})
	holder := h.start(func(context.Context) error { close(hold); <-release; return nil })
	<-hold
	waiter := h.start(ok)
	require.True(t, h.clk.WaitForTimers(2, nil))
	h.clk.Advance(50 * time.Millisecond)
	close(release)
	require.NoError(t, <-holder)
	require.NoError(t, <-waiter)
	hold, release = make(chan struct{}), make(chan struct{})
	holder = h.start(func(context.Context) error { close(hold); <-release; return nil })
	<-hold
	rejected := h.start(ok)
	require.True(t, h.clk.WaitForTimers(2, nil))
	h.clk.Advance(histBulkheadMax)
	require.NoError(t, <-rejected)
	close(release)
	require.NoError(t, <-holder)

	require.NoError(t, h.call(h.takes(histSlow+500*time.Millisecond, nil)))
	require.NoError(t, h.call(sequence(err503RetryAfter)))
	require.NoError(t, h.call(sequence(err503)))
	for range 10 {
		require.NoError(t, h.call(ok))
	}
	for i := 0; p.Retry().Snapshot().BudgetDenied == 0; i++ {
		require.Less(t, i, 5, "the budget never denied a retry")
		require.NoError(t, h.call(sequence(err503, err503, err503)))
	}
	for range 10 {
		require.NoError(t, h.call(ok))
	}
	done := h.start(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	require.True(t, h.clk.WaitForTimers(1, nil))
	h.clk.Advance(histTimeout)
	require.NoError(t, <-done)
	require.NoError(t, h.call(sequence(err504)))
	for i := 0; p.Breaker().State() != catalog.StateOpen; i++ {
		require.Less(t, i, 20, "the breaker never tripped")
		require.NoError(t, h.call(sequence(err504)))
	}
	require.NoError(t, h.call(ok))
	require.NoError(t, h.call(ok))
	h.clk.Advance(histOpen)
	require.NoError(t, h.call(sequence(err504)))
	require.Equal(t, catalog.StateOpen, p.Breaker().State())
	h.clk.Advance(histOpen)
	require.NoError(t, h.call(ok))
	require.Equal(t, catalog.StateClosed, p.Breaker().State())

	// A second dependency through a default breaker and retry (no slow-call detection), forced
	// open and left open: a visited state and a manual trip.
	b2, err := h.reg.Breaker("inventory", breaker.Config{Clock: h.clk})
	require.NoError(t, err)
	r2, err := h.reg.Retry("inventory", retry.Config{Clock: h.clk, Backoff: retry.Backoff{Strategy: retry.None}})
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
	require.NotZero(t, h.reg.Overflowed(catalog.CircuitBreaker))
}
