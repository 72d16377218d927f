package otelx

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
)

// Span event names and attribute keys of a [Tracer].
const (
	EventRetry     = "stormwatch.retry"     // a retry decision
	EventRejection = "stormwatch.rejection" // a call refused by a breaker or a bulkhead
	EventFallback  = "stormwatch.fallback"  // a fallback answered the call
	SpanTransition = "stormwatch.circuitbreaker.transition"
	// The attributes that name what the metrics label are the catalog's label names, and the
	// retry decision's are the retry log's field names (catalog.Field…), so a span event, a log
	// line and a series of one event read the same.
	AttrName        = catalog.LabelName        // the primitive's name (the dependency)
	AttrAttempt     = catalog.FieldAttempt     // the attempt that just finished, 1-based
	AttrOutcome     = catalog.FieldOutcome     // retrying, succeeded, gave_up, aborted, budget_exhausted
	AttrErrorType   = "error.type"             // the attempt's failure class (http_5xx, conn_refused, …)
	AttrDelay       = "delay"                  // seconds waited before the next attempt
	AttrDelaySource = catalog.FieldDelaySource // backoff or retry_after
	AttrPrimitive   = catalog.LabelPrimitive   // circuitbreaker or bulkhead
	AttrState       = catalog.LabelState       // the breaker's state at a rejection
	AttrCause       = catalog.LabelCause       // a fallback's cause; a trip's cause
	AttrFrom        = catalog.LabelFrom        // a transition's previous state
	AttrTo          = catalog.LabelTo          // a transition's new state
	AttrReason      = "reason"                 // why a transition happened, in a few words
	// AttrHTTPStatus is the semantic-convention attribute of a retried attempt's response
	// status.
	AttrHTTPStatus = "http.response.status_code"
	// AttrResendCount is the semantic-convention attribute of a retried HTTP request's client
	// span: how many times it had been sent before.
	AttrResendCount = "http.request.resend_count"
)

// Tracer records stormwatch's events on trace spans: every retry decision, rejection and
// fallback as an event of the span in the context of the call it belongs to (when that
// context carries a recording span), and, with [WithTransitionSpans], every circuit breaker
// transition as a span of its own. It listens to an events hub ([Tracer.Attach]), usually a
// registry's: nothing is recorded while no tracer is attached, and an attached tracer costs
// the calls that are not traced a context lookup per event.
//
// What carries a call's context: retry decisions (the logical call's context), bulkhead
// rejections and fallbacks. A circuit breaker admits calls without a context, so its
// rejections are recorded from the retry decision about the refused attempt: a retry wrapping
// the breaker (the pipeline's default order) reports the refusal of any attempt after the
// first; the refusal of a call's first attempt ends the call without a retry decision, and the
// span shows it as the fallback's cause (circuit_open) or the call's error. Transitions are
// committed by the breaker outside any call's context — by time, by an operator, or as a
// consequence of an outcome — hence spans of their own.
//
// A Tracer is safe for concurrent use. Its zero value records call events only.
type Tracer struct {
	transitions trace.Tracer
}

// TracerOption configures a Tracer.
type TracerOption func(*Tracer)

// WithTransitionSpans records every circuit breaker transition as a span of its own, named
// [SpanTransition], started and ended at the transition's time, from tp's tracer of scope
// [ScopeName]: attributes name, from, to, reason, and cause for trips.
func WithTransitionSpans(tp trace.TracerProvider) TracerOption {
	return func(t *Tracer) {
		if tp != nil {
			t.transitions = tp.Tracer(ScopeName)
		}
	}
}

// NewTracer returns a Tracer.
func NewTracer(opts ...TracerOption) *Tracer {
	t := &Tracer{}
	for _, o := range opts {
		if o != nil {
			o(t)
		}
	}
	return t
}

// Attach registers t on hub's events. The returned function detaches it. A nil hub has no
// events: Attach does nothing.
func (t *Tracer) Attach(hub *events.Hub) (detach func()) {
	if hub == nil {
		return func() {}
	}
	removes := []func(){
		hub.Retries.Add(t.Retry),
		hub.Rejections.Add(t.Rejection),
		hub.Fallbacks.Add(t.Fallback),
	}
	if t.transitions != nil {
		removes = append(removes, hub.Transitions.Add(t.Transition))
	}
	return func() {
		for _, r := range removes {
			r()
		}
	}
}

// Retry records a retry decision as an [EventRetry] event of the span in e.Context: name,
// attempt, outcome, error.type (the failure class; absent on success), delay and delay_source
// (when a retry follows), http.response.status_code (when there was a response). When the
// attempt was refused by a circuit breaker, an [EventRejection] event precedes it.
func (t *Tracer) Retry(e events.Retry) {
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	var open *breaker.OpenError
	if errors.As(e.Err, &open) {
		span.AddEvent(EventRejection, eventOptions(e.At, []attribute.KeyValue{
			attribute.String(AttrPrimitive, string(catalog.CircuitBreaker)),
			attribute.String(AttrName, open.Name),
			attribute.String(AttrState, open.State.String())})...)
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs,
		attribute.String(AttrName, e.Name),
		attribute.Int(AttrAttempt, e.Attempt),
		attribute.String(AttrOutcome, e.Outcome.String()))
	if e.ErrorClass != catalog.ClassNone {
		attrs = append(attrs, attribute.String(AttrErrorType, e.ErrorClass.String()))
	}
	if e.HasDelay() {
		attrs = append(attrs, attribute.Float64(AttrDelay, e.Delay.Seconds()),
			attribute.String(AttrDelaySource, e.DelaySource.String()))
	}
	if e.HTTPStatus != 0 {
		attrs = append(attrs, attribute.Int(AttrHTTPStatus, e.HTTPStatus))
	}
	span.AddEvent(EventRetry, eventOptions(e.At, attrs)...)
}

// Rejection records a rejection whose event carries the refused call's context (a bulkhead's)
// as an [EventRejection] event of its span: primitive, name, and state for a breaker.
func (t *Tracer) Rejection(e events.Rejection) {
	if e.Context == nil {
		return
	}
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(AttrPrimitive, string(e.Primitive)), attribute.String(AttrName, e.Name)}
	if e.Primitive == catalog.CircuitBreaker {
		attrs = append(attrs, attribute.String(AttrState, e.State.String()))
	}
	span.AddEvent(EventRejection, eventOptions(e.At, attrs)...)
}

// Fallback records a fallback as an [EventFallback] event of the span in the call's context:
// name and cause.
func (t *Tracer) Fallback(e events.Fallback) {
	if e.Context == nil {
		return
	}
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(EventFallback, eventOptions(e.At,
		[]attribute.KeyValue{attribute.String(AttrName, e.Name), attribute.String(AttrCause, e.Cause.String())})...)
}

// Transition records a breaker transition as a [SpanTransition] span (see
// [WithTransitionSpans]); without that option it does nothing.
func (t *Tracer) Transition(e events.Transition) {
	if t.transitions == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrName, e.Name),
		attribute.String(AttrFrom, e.From.String()),
		attribute.String(AttrTo, e.To.String()),
		attribute.String(AttrReason, e.Reason),
	}
	if e.Trip() {
		attrs = append(attrs, attribute.String(AttrCause, e.Cause.String()))
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal)}
	if !e.At.IsZero() {
		opts = append(opts, trace.WithTimestamp(e.At))
	}
	_, span := t.transitions.Start(context.Background(), SpanTransition, opts...)
	if e.At.IsZero() {
		span.End()
		return
	}
	span.End(trace.WithTimestamp(e.At))
}

// eventOptions are the options of an event with attrs at the event's time (now when it has
// none).
func eventOptions(at time.Time, attrs []attribute.KeyValue) []trace.EventOption {
	opts := []trace.EventOption{trace.WithAttributes(attrs...)}
	if !at.IsZero() {
		opts = append(opts, trace.WithTimestamp(at))
	}
	return opts
}

// ResendCountTransport returns an http.RoundTripper that sets http.request.resend_count on the
// span in each request's context — the attribute the semantic conventions ask of an HTTP
// client span of a resent request — from the count an httpx.Transport puts on the context of
// its retried attempts (httpx.ResendCount), then sends the request with next (nil:
// http.DefaultTransport). First attempts, and requests not sent by an httpx.Transport, pass
// through untouched.
//
// Put it under the instrumentation that creates a client span per attempt, so that the span in
// the request's context is the attempt's:
//
//	httpx.NewTransport(otelhttp.NewTransport(otelx.ResendCountTransport(http.DefaultTransport)), …)
//
// Without such instrumentation the attribute lands on the span of the caller's context: the
// number of resends of the last attempt.
func ResendCountTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return resendCount{next: next}
}

type resendCount struct{ next http.RoundTripper }

func (r resendCount) RoundTrip(req *http.Request) (*http.Response, error) {
	if n := httpx.ResendCount(req.Context()); n > 0 {
		trace.SpanFromContext(req.Context()).SetAttributes(attribute.Int(AttrResendCount, n))
	}
	return r.next.RoundTrip(req)
}
