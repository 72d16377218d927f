package otelx

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

func newRecorder(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return sr, tp
}

// event is a span event's name and attributes, as strings.
type event struct {
	Name  string
	Attrs map[string]string
}

func eventsOf(s sdktrace.ReadOnlySpan) []event {
	var out []event
	for _, e := range s.Events() {
		out = append(out, event{e.Name, kvs(e.Attributes)})
	}
	return out
}

func kvs(attrs []attribute.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range attrs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

func TestTracerRecordsRetriesRejectionsAndFallbacksOnTheCallsSpan(t *testing.T) {
	sr, tp := newRecorder(t)
	clk := clock.NewFake(epoch)
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	rc := retry.Config{MaxAttempts: 3, Clock: clk, Backoff: retry.Backoff{Strategy: retry.None}, DisableBudget: true}
	payments, err := reg.Pipeline("payments", instrument.PipelineConfig{
		Retry: &rc, Breaker: &breaker.Config{Clock: clk}, Fallback: &fallback.Config{Clock: clk}})
	require.NoError(t, err)
	// search's breaker trips on its first failure.
	search, err := reg.Pipeline("search", instrument.PipelineConfig{
		Retry: &rc, Breaker: &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1, Clock: clk},
		Fallback: &fallback.Config{Clock: clk}})
	require.NoError(t, err)
	detach := NewTracer(WithTransitionSpans(tp)).Attach(reg.Events())
	fb := func(context.Context, catalog.Cause, error) error { return nil }
	reset := errors.New("connection reset by peer")

	// A call whose first attempt fails, on a span of its own.
	ctx, span := tp.Tracer("test").Start(context.Background(), "payments call")
	n := 0
	_, err = payments.DoWithFallback(ctx, func(context.Context) error {
		if n++; n == 1 {
			return reset
		}
		return nil
	}, fb)
	require.NoError(t, err)
	// A call refused by the (forced open) breaker at once, answered by the fallback.
	payments.Breaker().ForceOpen()
	fromFallback, err := payments.DoWithFallback(ctx, func(context.Context) error { return nil }, fb)
	require.NoError(t, err)
	require.True(t, fromFallback)
	span.End()

	// A call whose failure trips the breaker, which refuses the retry.
	ctx, span = tp.Tracer("test").Start(context.Background(), "search call")
	fromFallback, err = search.DoWithFallback(ctx, func(context.Context) error { return reset }, fb)
	require.NoError(t, err)
	require.True(t, fromFallback)
	span.End()

	// A bulkhead rejection carries the caller's context.
	bh, err := reg.Bulkhead("inventory", bulkhead.Config{MaxConcurrent: 1, Clock: clk})
	require.NoError(t, err)
	release, err := bh.Acquire(context.Background())
	require.NoError(t, err)
	ctx, span = tp.Tracer("test").Start(context.Background(), "inventory call")
	_, err = bh.Acquire(ctx)
	require.ErrorIs(t, err, bulkhead.ErrFull)
	span.End()
	release.Done()

	// Calls without a recording span record nothing; a detached tracer records nothing.
	_, _ = payments.DoWithFallback(context.Background(), func(context.Context) error { return nil }, fb)
	detach()
	ctx, span = tp.Tracer("test").Start(context.Background(), "after detach")
	_, _ = payments.DoWithFallback(ctx, func(context.Context) error { return nil }, fb)
	span.End()

	spans := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		spans[s.Name()] = append(spans[s.Name()], s)
	}
	require.Len(t, spans["payments call"], 1)
	assert.Equal(t, []event{
		{EventRetry, map[string]string{"name": "payments", "attempt": "1", "outcome": "retrying", "error.type": "error",
			"delay": "0", "delay_source": "backoff"}},
		{EventRetry, map[string]string{"name": "payments", "attempt": "2", "outcome": "succeeded"}},
		{EventFallback, map[string]string{"name": "payments", "cause": "circuit_open"}},
	}, eventsOf(spans["payments call"][0]))
	for _, e := range spans["payments call"][0].Events() {
		assert.Equal(t, epoch, e.Time, "at the event's time, by the primitive's clock")
	}
	require.Len(t, spans["search call"], 1)
	assert.Equal(t, []event{
		{EventRetry, map[string]string{"name": "search", "attempt": "1", "outcome": "retrying", "error.type": "error",
			"delay": "0", "delay_source": "backoff"}},
		{EventRejection, map[string]string{"primitive": "circuitbreaker", "name": "search", "state": "open"}},
		{EventRetry, map[string]string{"name": "search", "attempt": "2", "outcome": "gave_up", "error.type": "rejected"}},
		{EventFallback, map[string]string{"name": "search", "cause": "retries_exhausted"}},
	}, eventsOf(spans["search call"][0]))
	require.Len(t, spans["inventory call"], 1)
	assert.Equal(t, []event{{EventRejection, map[string]string{"primitive": "bulkhead", "name": "inventory"}}},
		eventsOf(spans["inventory call"][0]))
	require.Len(t, spans["after detach"], 1)
	assert.Empty(t, spans["after detach"][0].Events())

	// The transitions: spans of their own.
	var transitions []map[string]string
	for _, tr := range spans[SpanTransition] {
		transitions = append(transitions, kvs(tr.Attributes()))
		assert.Equal(t, epoch, tr.StartTime())
		assert.False(t, tr.Parent().IsValid(), "a root span: the breaker commits transitions outside any call")
	}
	require.Len(t, transitions, 2)
	assert.Equal(t, map[string]string{"name": "payments", "from": "closed", "to": "forced_open", "cause": "forced", "reason": "forced open"},
		transitions[0])
	assert.Equal(t, "search", transitions[1]["name"])
	assert.Equal(t, "consecutive_failures", transitions[1]["cause"])
}

func TestTracerWithoutTransitionSpansIgnoresTransitions(t *testing.T) {
	sr, _ := newRecorder(t)
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	defer NewTracer().Attach(reg.Events())()
	br, err := reg.Breaker("payments", breaker.Config{})
	require.NoError(t, err)
	br.ForceOpen()
	assert.Empty(t, sr.Ended())
	assert.NotPanics(t, func() { NewTracer().Attach(nil)() })
}

// attemptSpans is a base RoundTripper that starts a client span per attempt, as HTTP client
// instrumentation (otelhttp) does, and sends the request through next with it.
type attemptSpans struct {
	tracer trace.Tracer
	next   http.RoundTripper
}

func (a attemptSpans) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := a.tracer.Start(req.Context(), "HTTP GET", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	return a.next.RoundTrip(req.WithContext(ctx))
}

func TestResendCountOnEachRetriedAttemptsSpan(t *testing.T) {
	sr, tp := newRecorder(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	inner := &http.Transport{}
	defer inner.CloseIdleConnections()
	tr, err := httpx.NewTransport(attemptSpans{tp.Tracer("test"), ResendCountTransport(inner)},
		httpx.WithPipeline(instrument.PipelineConfig{Retry: &retry.Config{MaxAttempts: 3,
			Backoff: retry.Backoff{Strategy: retry.None}, DisableBudget: true}}))
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	httpx.DiscardResponse(resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var counts []string
	for _, s := range sr.Ended() {
		counts = append(counts, kvs(s.Attributes())[AttrResendCount])
	}
	assert.Equal(t, []string{"", "1", "2"}, counts, "none on the first attempt's span, then 1 and 2")
}
