// Package retry repeats failed calls with backoff, honouring Retry-After, within three bounds
// (attempts, per-attempt timeout, total deadline) and a per-dependency retry budget.
//
// A [Retry] is named after the dependency it protects and is safe for concurrent use. Its counts
// (logical calls by outcome, retries, failed attempts by class, delays by source, budget tokens
// and denials) live in atomics that the collector package reads at scrape time; a call that
// succeeds on its first attempt costs a few atomic adds and allocates nothing.
//
//	r, err := retry.New("payments-api", retry.Config{}) // the zero Config is the default
//	err = r.Do(ctx, func(ctx context.Context) error { return pay(ctx) })
//	v, err := retry.Call(ctx, r, func(ctx context.Context) (Receipt, error) { return pay(ctx) })
//
// # What is retried
//
// Every failed attempt is classified by package classify. Never retried: the caller's
// cancellation, stormwatch's own rejections (an open breaker, a full bulkhead), what the
// classifier calls non-retryable (4xx, 501, TLS certificate errors, a timeout or 504 of a
// non-idempotent request), and anything once attempts, time or budget run out.
//
// # HTTP and other value-returning calls
//
// An attempt that produced a response reports it through [CallWith]'s [Hooks]: Check turns the
// attempt's (value, error) into the error the retry classifies — [HTTPResult] does this for
// HTTP, yielding an [*HTTPError] that carries the status, the Retry-After header and the
// request's idempotency — and Discard releases a value the retry drops before retrying
// ([DiscardResponse] drains and closes a response body). The value of the last attempt is
// returned to the caller untouched, even on failure, so an HTTP middleware can hand the final 503
// to its caller. The attempt function always receives the "attempt context": the caller's context
// (with the correlation id once a retry event was emitted) bounded by AttemptTimeout and
// MaxDuration. Bind keeps that context alive for the returned value until the caller releases it
// (for HTTP: closes the body); Status reports a successful value's HTTP status to the events.
//
// # Events and correlation ids
//
// With a listener on Config.Events' Retries (for instance the retrylog package), every retry
// decision emits an events.Retry: retrying, gave_up, aborted or budget_exhausted after a failed
// attempt, succeeded after a successful retry. A decision about a single attempt that could not
// have been retried anyway (a 404, MaxAttempts 1) emits nothing. Before its first event a call
// whose context has no correlation id gets a generated one ([WithCorrelationID]), which the later
// attempts' contexts carry too, so every event of one logical call shares it. Nothing is emitted
// or allocated when nobody listens.
//
// # Errors
//
// When a retry decision ends the call — attempts exhausted, deadline, budget, cancellation — the
// returned error is an [*Error]: it says how many attempts were made, unwraps to the last
// attempt's error (and to the context's error when aborted) and keeps every attempt's error. A
// call that made a single attempt whose error was not retryable returns that error unchanged.
package retry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

// Retry repeats failed calls (see the package documentation). Create one with [New] or get the
// one shared by name from an instrument.Registry.
type Retry struct {
	name   string
	cfg    Config
	clk    clock.Clock
	rnd    clock.Rand
	hub    *events.Hub
	budget *Budget

	calls    [catalog.NumRetryKinds]atomic.Uint64
	attempts atomic.Uint64
	errs     [catalog.NumClasses]atomic.Uint64 // by catalog.Class; ClassNone unused
	backoff  [catalog.NumDelaySources]histogram.Histogram
}

// New returns a Retry called name, configured by cfg (the zero Config is the default
// configuration). An invalid field is a [*ConfigError] naming it and its value.
func New(name string, cfg Config) (*Retry, error) {
	if name == "" {
		return nil, &ConfigError{Primitive: string(catalog.Retry), Field: "name", Value: "", Reason: "must not be empty"}
	}
	if err := cfg.validate(); err != nil {
		return nil, named(name, err)
	}
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts)
	cfg.Backoff = cfg.Backoff.withDefaults()
	cfg.RetryAfter = cfg.RetryAfter.withDefaults()
	r := &Retry{name: name, cfg: cfg, clk: clock.Or(cfg.Clock), rnd: clock.RandOr(cfg.Rand), hub: cfg.Events}
	if !cfg.Budget.Disabled {
		b, err := NewBudget(cfg.Budget, r.clk)
		if err != nil {
			return nil, named(name, err)
		}
		r.budget = b
	}
	return r, nil
}

// Name returns the retry's name.
func (r *Retry) Name() string { return r.name }

// Config returns the configuration in use, defaults filled in.
func (r *Retry) Config() Config { return r.cfg }

// Budget returns the retry's budget, or nil when it is disabled.
func (r *Retry) Budget() *Budget { return r.budget }

// Hooks let a caller whose attempts return values (HTTP responses) tell the retry how an attempt
// went and what to do with values it drops. The zero Hooks treat a nil error as success.
type Hooks[T any] struct {
	// Endpoint names the operation in events and logs, e.g. "GET api.example.com/v1/orders"
	// (see [Endpoint]); it must not carry a query string or credentials.
	Endpoint string
	// Check maps an attempt's value and error to the error the retry classifies; nil means the
	// attempt succeeded. For HTTP use [HTTPResult]. Nil Check: the attempt's error as is.
	Check func(v T, err error) error
	// Discard releases the value of an attempt the retry is about to repeat (for HTTP,
	// [DiscardResponse]). The last attempt's value is never discarded: it is returned.
	Discard func(v T)
	// Status returns the HTTP status of a successful value, for the "succeeded" event (failed
	// attempts report theirs through [HTTPError]). Nil: no status.
	Status func(v T) int
	// Bind receives the value CallWith returns and the function that cancels the contexts the
	// retry created for it (AttemptTimeout, MaxDuration); it must arrange for release to be called
	// once the value is no longer used, and returns the value to hand out. HTTPHooks wraps the
	// response body so that closing it releases. Nil: the contexts are cancelled when CallWith
	// returns — fine for values that do not read from the attempt's context afterwards.
	Bind func(v T, release func()) T
}

// Do calls fn until it succeeds or a retry decision ends the call; see the package documentation.
func (r *Retry) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	_, err := CallWith(ctx, r, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) }, Hooks[struct{}]{})
	return err
}

// Call is [Retry.Do] for a function that returns a value.
func Call[T any](ctx context.Context, r *Retry, fn func(ctx context.Context) (T, error)) (T, error) {
	return CallWith(ctx, r, fn, Hooks[T]{})
}

// CallWith is [Call] with hooks that classify values and release dropped ones. It returns the
// last attempt's value and, on failure, the error as described in the package documentation.
func CallWith[T any](ctx context.Context, r *Retry, fn func(ctx context.Context) (T, error), h Hooks[T]) (T, error) {
	// A panic in fn or a hook propagates to the caller; the logical call is still counted, as a
	// failure of the attempt that panicked.
	var cs callState
	defer r.settle(&cs)
	listening := r.hub != nil && r.hub.Retries.Active()
	var start time.Time
	if r.cfg.MaxDuration > 0 {
		start = r.clk.Now()
		ctx, cs.totalCancel = context.WithTimeout(ctx, r.cfg.MaxDuration)
	} else if listening {
		start = r.clk.Now()
	}
	if r.budget != nil {
		r.budget.Deposit()
	}

	var (
		errs     []error
		prev     time.Duration // previous backoff delay, for decorrelated jitter
		dl       deadline
		attempt  = 1
		v        T
		err      error
		info     attemptInfo
		now      time.Time
		retrying bool // a retry event was emitted for this call
	)
	for ; ; attempt++ {
		cs.attempt = attempt
		v, err = runAttempt(ctx, r.cfg.AttemptTimeout, fn, &cs)
		if h.Check != nil {
			err = h.Check(v, err)
		}
		if err == nil {
			if attempt == 1 {
				r.calls[catalog.RetrySuccessfulWithoutRetry].Add(1)
				cs.done = true
				v = bind(h, v, &cs)
				return v, nil
			}
			r.calls[catalog.RetrySuccessfulWithRetry].Add(1)
			if listening {
				now = r.clk.Now()
				var ok attemptInfo
				if h.Status != nil {
					ok.status = h.Status(v)
				}
				ctx = r.emit(ctx, h.Endpoint, attempt, start, now, 0, 0, ok, catalog.OutcomeSucceeded, nil)
			}
			cs.done = true
			v = bind(h, v, &cs)
			return v, nil
		}

		info = r.classify(err)
		r.errs[info.verdict.Class].Add(1)
		errs = append(errs, err)
		now = r.clk.Now()
		if start.IsZero() {
			start = now
		}
		if cerr := ctx.Err(); cerr != nil { // the caller cancelled or the total deadline passed
			outcome := catalog.OutcomeAborted
			if errors.Is(cerr, context.DeadlineExceeded) {
				outcome = catalog.OutcomeGaveUp
			}
			emit := listening && (attempt > 1 || info.verdict.Retryable)
			wrap := attempt > 1 || !errors.Is(err, cerr)
			cs.done = true
			v = bind(h, v, &cs)
			return v, r.finish(ctx, errs, cerr, outcome, wrap, emit, h.Endpoint, attempt, start, now, info)
		}
		retryable := info.verdict.Retryable
		if r.cfg.RetryIf != nil && !info.never {
			retryable = r.cfg.RetryIf(err, info.verdict)
		}
		if !retryable || attempt >= r.cfg.MaxAttempts {
			emit := listening && (attempt > 1 || (retryable && r.cfg.MaxAttempts > 1))
			cs.done = true
			v = bind(h, v, &cs)
			return v, r.finish(ctx, errs, nil, catalog.OutcomeGaveUp, attempt > 1, emit, h.Endpoint, attempt, start, now, info)
		}

		delay, source := r.nextDelay(attempt, prev, info, now)
		if source == catalog.SourceBackoff {
			prev = delay
		}
		if !dl.known {
			dl = r.deadline(ctx, start, now)
		}
		if dl.ok {
			remaining := dl.at.Sub(now)
			delay = min(delay, max(remaining, 0))
			minUseful := r.cfg.MinAttemptTime
			if minUseful == 0 {
				minUseful = r.cfg.AttemptTimeout
			}
			if minUseful == 0 {
				minUseful = remaining / 10
			}
			if remaining <= 0 || remaining-delay < minUseful {
				cs.done = true
				v = bind(h, v, &cs)
				return v, r.finish(ctx, errs, nil, catalog.OutcomeGaveUp, true, listening, h.Endpoint, attempt, start, now, info)
			}
		}
		if r.budget != nil && !r.budget.TryRetry() {
			cs.done = true
			v = bind(h, v, &cs)
			return v, r.finish(ctx, errs, nil, catalog.OutcomeBudgetExhausted, true, listening, h.Endpoint, attempt, start, now, info)
		}
		if listening {
			ctx = r.emit(ctx, h.Endpoint, attempt, start, now, delay, source, info, catalog.OutcomeRetrying, err)
			retrying = true
		}
		if h.Discard != nil {
			h.Discard(v)
		}
		if cs.attemptCancel != nil {
			cs.attemptCancel()
			cs.attemptCancel = nil
		}
		if cerr := r.wait(ctx, delay); cerr != nil {
			var zero T
			outcome := catalog.OutcomeAborted
			if errors.Is(cerr, context.DeadlineExceeded) {
				outcome = catalog.OutcomeGaveUp
			}
			cs.done = true
			return zero, r.finish(ctx, errs, cerr, outcome, true, listening && retrying, h.Endpoint, attempt, start, r.clk.Now(), info)
		}
		r.backoff[source].Observe(delay)
		r.attempts.Add(1)
	}
}

// callState is what CallWith's deferred settle needs: the attempt reached, whether the call
// returned normally, and the cancel functions of the contexts it created.
type callState struct {
	attempt       int
	done          bool
	handed        bool               // Hooks.Bind took over the cancel functions
	attemptCancel context.CancelFunc // the current attempt's (AttemptTimeout)
	totalCancel   context.CancelFunc // the logical call's (MaxDuration)
}

// settle runs deferred in CallWith. It cancels the contexts the call created, unless a Bind hook
// took them over; and when the call did not return normally (a panic is propagating), it counts
// the call as failed. It does not recover the panic.
func (r *Retry) settle(cs *callState) {
	if !cs.handed {
		if cs.attemptCancel != nil {
			cs.attemptCancel()
		}
		if cs.totalCancel != nil {
			cs.totalCancel()
		}
	}
	if cs.done {
		return
	}
	r.errs[catalog.ClassError].Add(1)
	if cs.attempt <= 1 {
		r.calls[catalog.RetryFailedWithoutRetry].Add(1)
	} else {
		r.calls[catalog.RetryFailedWithRetry].Add(1)
	}
}

// bind hands the value CallWith returns to Hooks.Bind together with the cancel functions of its
// contexts, so that the value (a response body) stays readable until it is released.
func bind[T any](h Hooks[T], v T, cs *callState) T {
	if h.Bind == nil || (cs.attemptCancel == nil && cs.totalCancel == nil) {
		return v
	}
	a, t := cs.attemptCancel, cs.totalCancel
	cs.handed = true
	return h.Bind(v, func() {
		if a != nil {
			a()
		}
		if t != nil {
			t()
		}
	})
}

// runAttempt runs one attempt, under AttemptTimeout when set. The attempt context's cancel
// function is left in cs for the caller: the returned value may still need the context.
func runAttempt[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error), cs *callState) (T, error) {
	if timeout <= 0 {
		return fn(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	cs.attemptCancel = cancel
	return fn(actx)
}

// wait blocks for d on the retry's clock, or until ctx is done (it then returns ctx's error).
func (r *Retry) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := r.clk.NewTimer(d)
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// finish ends a failed logical call: it counts it, emits the final decision and builds the error.
func (r *Retry) finish(ctx context.Context, errs []error, cause error, outcome catalog.Outcome, wrap, emit bool,
	endpoint string, attempt int, start, now time.Time, info attemptInfo) error {
	switch {
	case outcome == catalog.OutcomeAborted:
		r.calls[catalog.RetryAborted].Add(1)
	case attempt == 1:
		r.calls[catalog.RetryFailedWithoutRetry].Add(1)
	default:
		r.calls[catalog.RetryFailedWithRetry].Add(1)
	}
	last := errs[len(errs)-1]
	if emit {
		r.emit(ctx, endpoint, attempt, start, now, 0, 0, info, outcome, last)
	}
	if !wrap {
		return last
	}
	return &Error{name: r.name, outcome: outcome, errs: errs, cause: cause}
}

type deadline struct {
	known, ok bool
	at        time.Time // in the retry clock's frame
}

// deadline works out the logical call's deadline in the clock's frame: the context's (converted
// from the wall clock once) or start+MaxDuration, whichever is earlier.
func (r *Retry) deadline(ctx context.Context, start, now time.Time) deadline {
	d := deadline{known: true}
	if at, ok := ctx.Deadline(); ok {
		d.ok, d.at = true, now.Add(time.Until(at))
	}
	if r.cfg.MaxDuration > 0 {
		if md := start.Add(r.cfg.MaxDuration); !d.ok || md.Before(d.at) {
			d.ok, d.at = true, md
		}
	}
	return d
}

// nextDelay returns the delay before retry n: Retry-After of a 429 or 503 when present and
// valid, else the backoff strategy.
func (r *Retry) nextDelay(n int, prev time.Duration, info attemptInfo, now time.Time) (time.Duration, catalog.DelaySource) {
	if !r.cfg.RetryAfter.Disabled && info.retryAfter != "" &&
		(info.status == http.StatusTooManyRequests || info.status == http.StatusServiceUnavailable) {
		if wait, ok := ParseRetryAfter(info.retryAfter, now); ok {
			return r.cfg.RetryAfter.Delay(wait, r.rnd), catalog.SourceRetryAfter
		}
	}
	return r.cfg.Backoff.Delay(n, prev, r.rnd), catalog.SourceBackoff
}

// emit sends a retry event, attaching a correlation id to ctx first when it has none, and returns
// the context to use from now on.
func (r *Retry) emit(ctx context.Context, endpoint string, attempt int, start, now time.Time,
	delay time.Duration, source catalog.DelaySource, info attemptInfo, outcome catalog.Outcome, err error) context.Context {
	ctx = ensureCorrelationID(ctx)
	r.hub.Retries.Emit(events.Retry{
		Context:     ctx,
		Name:        r.name,
		Endpoint:    endpoint,
		Attempt:     attempt,
		MaxAttempts: r.cfg.MaxAttempts,
		Elapsed:     now.Sub(start),
		Delay:       delay,
		DelaySource: source,
		ErrorClass:  info.verdict.Class,
		HTTPStatus:  info.status,
		Outcome:     outcome,
		Err:         err,
		At:          now,
	})
	return ctx
}

type attemptInfo struct {
	never      bool // a rule that RetryIf cannot override forbids retrying
	verdict    classify.Verdict
	status     int
	retryAfter string
}

// classify classifies a failed attempt's error. The rules that never retry — the caller's
// cancellation and stormwatch's rejections — hold whatever Config.Classify says.
func (r *Retry) classify(err error) attemptInfo {
	var info attemptInfo
	idempotent := r.cfg.Idempotent
	target := err
	var he *HTTPError
	retryDisabled := false
	if errors.As(err, &he) {
		idempotent, retryDisabled = he.Idempotent, he.RetryDisabled
		info.status, info.retryAfter = he.StatusCode, he.RetryAfter
		if he.Err != nil {
			target = he.Err
		}
	}
	switch {
	case r.cfg.Classify != nil:
		info.verdict = r.cfg.Classify(err, idempotent)
	case he != nil && he.Err == nil:
		info.verdict = classify.Status(he.StatusCode, idempotent)
	default:
		info.verdict = classify.ClassifyError(target, idempotent)
	}
	var rej classify.Rejection
	switch {
	case errors.As(err, &rej) && rej.Rejected():
		info.verdict, info.never = classify.Verdict{Class: catalog.ClassRejected}, true
	case errors.Is(err, context.Canceled):
		info.verdict, info.never = classify.Verdict{Class: catalog.ClassCanceled}, true
	case !info.verdict.Class.Valid(): // ClassNone or outside the closed set
		info.verdict.Class = catalog.ClassError
	}
	if retryDisabled {
		info.verdict.Retryable, info.never = false, true
	}
	return info
}

// Error is returned when a retry decision ended a logical call. It unwraps to the last attempt's
// error and, for a call ended by its context, to the context's error.
type Error struct {
	name    string
	outcome catalog.Outcome
	errs    []error
	cause   error
}

// Error says what ended the call, after how many attempts, and the last attempt's error.
func (e *Error) Error() string {
	n := len(e.errs)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	last := e.errs[n-1]
	switch e.outcome {
	case catalog.OutcomeAborted:
		return fmt.Sprintf("retry %q: aborted after %d attempt%s: %v (last error: %v)", e.name, n, plural, e.cause, last)
	case catalog.OutcomeBudgetExhausted:
		return fmt.Sprintf("retry %q: retry budget exhausted after %d attempt%s: %v", e.name, n, plural, last)
	}
	if e.cause != nil {
		return fmt.Sprintf("retry %q: gave up after %d attempt%s: %v (last error: %v)", e.name, n, plural, e.cause, last)
	}
	return fmt.Sprintf("retry %q: gave up after %d attempt%s: %v", e.name, n, plural, last)
}

// Unwrap returns the last attempt's error and, when the context ended the call, its error.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.errs[len(e.errs)-1], e.cause}
	}
	return []error{e.errs[len(e.errs)-1]}
}

// Attempts returns every attempt's error, in order; its length is the number of attempts made.
func (e *Error) Attempts() []error { return append([]error(nil), e.errs...) }

// Last returns the last attempt's error.
func (e *Error) Last() error { return e.errs[len(e.errs)-1] }

// Outcome returns the decision that ended the call: catalog.OutcomeGaveUp,
// catalog.OutcomeBudgetExhausted or catalog.OutcomeAborted.
func (e *Error) Outcome() catalog.Outcome { return e.outcome }

// FallbackCause returns catalog.CauseRetriesExhausted — the fallback cause of a call that gave up
// or was refused a retry by the budget — and false for an aborted call, so that a fallback looks
// further down the chain (see package fallback).
func (e *Error) FallbackCause() (catalog.Cause, bool) {
	if e.outcome == catalog.OutcomeAborted {
		return 0, false
	}
	return catalog.CauseRetriesExhausted, true
}

// HTTPError reports a failed HTTP attempt to the retry: the response's status and Retry-After
// header, or the transport error, and whether the request was idempotent. Build it with
// [HTTPResult].
type HTTPError struct {
	StatusCode int    // 0 when no response arrived
	Status     string // e.g. "503 Service Unavailable"
	RetryAfter string // the raw Retry-After header, if any
	Idempotent bool   // the request may be repeated safely (classify.IsIdempotent)
	// RetryDisabled is set when the response carried the do-not-retry signal ([DoNotRetryHeader]:
	// true): the server's own retries are exhausted, so this retry does not add more (RT-23).
	RetryDisabled bool
	Err           error // the transport error; nil when a response arrived
}

// DoNotRetryHeader is the response header of the do-not-retry signal (RT-23): a response with
// "Retry-Disabled: true" is never retried by [HTTPResult]'s consumers.
const DoNotRetryHeader = "Retry-Disabled"

// Error describes the status or the transport error.
func (e *HTTPError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	if e.Status != "" {
		return "HTTP " + e.Status
	}
	return fmt.Sprintf("HTTP %d", e.StatusCode)
}

// Unwrap returns the transport error.
func (e *HTTPError) Unwrap() error { return e.Err }

// HTTPStatus returns the response status, or 0 when no response arrived (a transport error). It
// makes HTTPError a classify.StatusError, so that classify.ClassifyError — and a circuit breaker
// using it — classifies a failed response by its status (a 404 is not a breaker failure).
func (e *HTTPError) HTTPStatus() int {
	if e.Err != nil {
		return 0
	}
	return e.StatusCode
}

// HTTPResult reports one HTTP attempt to the retry: nil when it succeeded (classify.Classify finds
// no failure), else an [*HTTPError] for the transport error or failing response of req. Use it as
// the [Hooks] Check of an HTTP call, or return it from a [Retry.Do] attempt (after closing the
// response body). The request may be nil (resp.Request is used).
func HTTPResult(req *http.Request, resp *http.Response, err error) error {
	if req == nil && resp != nil {
		req = resp.Request
	}
	idempotent := classify.IsIdempotent(req)
	if !classify.Classify(resp, err, idempotent).Failed() {
		return nil
	}
	he := &HTTPError{Idempotent: idempotent, Err: err}
	if resp != nil {
		he.StatusCode, he.Status = resp.StatusCode, resp.Status
		he.RetryAfter = resp.Header.Get("Retry-After")
		he.RetryDisabled = strings.EqualFold(strings.TrimSpace(resp.Header.Get(DoNotRetryHeader)), "true")
	}
	return he
}

// maxDrain bounds how much of a discarded body is read to let the connection be reused.
const maxDrain = 64 << 10

// DiscardResponse drains (up to 64 KiB) and closes the body of a response the retry drops, so the
// connection can be reused. A nil response or body is ignored.
func DiscardResponse(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}

// HTTPHooks returns the hooks for retrying req with [CallWith]: Endpoint from [Endpoint],
// Check from [HTTPResult], Discard from [DiscardResponse], Status from the response, and Bind,
// which keeps the returned response's body readable under AttemptTimeout and MaxDuration until
// the caller closes it.
func HTTPHooks(req *http.Request) Hooks[*http.Response] {
	return Hooks[*http.Response]{
		Endpoint: Endpoint(req),
		Check:    func(resp *http.Response, err error) error { return HTTPResult(req, resp, err) },
		Discard:  DiscardResponse,
		Status:   responseStatus,
		Bind:     bindResponse,
	}
}

// bindResponse makes closing the response body release the attempt's contexts.
func bindResponse(resp *http.Response, release func()) *http.Response {
	if resp == nil || resp.Body == nil {
		release()
		return resp
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp
}

// releasingBody is a response body whose Close also cancels the attempt's context.
type releasingBody struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

func responseStatus(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}
