// Package retry repeats failed calls with backoff, honouring delays a server asks for, within
// three bounds (attempts, per-attempt timeout, total deadline) and a per-dependency retry budget.
// It knows no protocol: protocol adapters (package httpx for HTTP) tell it what they know about
// a failed attempt through the attempt's error (see "Protocol adapters" below).
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
// Every failed attempt is classified by package classify (or Config.Classify). Never retried:
// the caller's cancellation, stormwatch's own rejections (an open breaker, a full bulkhead), what
// the classifier calls non-retryable (a 4xx, a TLS certificate error, a timeout of a
// non-idempotent operation), an attempt whose error says not to retry ([classify.DoNotRetryHint]), and
// anything once attempts, time or budget run out. Config.RetryIf can refuse retries the
// classifier allows and allow ones it refuses, except for the cancellation, the rejections and
// the do-not-retry signal.
//
// # Delays
//
// Before each retry the retry waits: the delay a server asked for ([classify.RetryAfterHint]), clamped to
// [RetryAfterConfig.Min, RetryAfterConfig.Max] plus up to RetryAfterConfig.Jitter, or else the
// [Backoff] strategy's delay. Either is clamped to the time left before the deadline (the
// context's or MaxDuration's, whichever is earlier), and the retry gives up (outcome gave_up)
// when what is left after the delay is less than the least useful attempt time (MinAttemptTime).
// No delay follows the last attempt.
//
// # Protocol adapters
//
// This is the one way a protocol adapter talks to the retry: the attempt's error carries what
// the protocol knows, through small interfaces that the retry finds with errors.As anywhere in
// the error's chain. An adapter implements those it has; an error implementing none is
// classified as it is.
//
//   - [classify.RetryAfterHint]: RetryAfter(now) (time.Duration, bool) — a delay the server asked for
//     (HTTP's Retry-After on a 429 or 503, gRPC's grpc-retry-pushback-ms). When it reports true
//     the delay comes from it (delay source retry_after), clamped and jittered by
//     Config.RetryAfter; otherwise the backoff sets it. now is the reading of the retry's clock,
//     for hints given as a point in time (an HTTP-date).
//   - [classify.DoNotRetryHint]: DoNotRetry() bool — true forbids retrying the attempt, whatever the
//     classifier or RetryIf say: the server signalled that its own retries are exhausted (HTTP's
//     Retry-Disabled: true, a negative gRPC pushback), or repeating the request is unsafe (a
//     request body that cannot be sent again).
//   - [classify.IdempotentHint]: Idempotent() bool — whether the operation may run twice safely. It
//     replaces Config.Idempotent for this attempt; the classifier uses it to decide whether a
//     timeout after the request was sent (or a 504) may be retried.
//   - classify.StatusError: HTTPStatus() int — the response's HTTP status, which the classifier
//     classifies (classify.Status) and the events report (events.Retry.HTTPStatus, the retry
//     log's http_status). Errors of other protocols leave it out: their class says what failed.
//   - classify.VerdictError: Verdict(idempotent) classify.Verdict — the attempt's classification,
//     decided by the adapter that knows its protocol's codes (package grpcx's error does this for
//     gRPC status codes). The default classifier (classify.ClassifyError) returns it, and so do a
//     circuit breaker's and a pipeline's, so one error carries one verdict to every layer
//     without a Classify option per layer.
//
// The rest stays in the adapter: parsing headers or metadata, naming the operation for events
// and logs (Hooks.Endpoint — never a query string or credentials), releasing the values of
// dropped attempts (Hooks.Discard) and keeping the returned one usable (Hooks.Retain). Package
// httpx is the reference: its Error implements the first four interfaces and its RetryHooks
// fills in the Hooks; see the adapter example.
//
// # Values, hooks and contexts
//
// An attempt that produced a value reports it through [CallWith]'s [Hooks]: Check turns the
// attempt's (value, error) into the error the retry classifies, and Discard releases a value the
// retry drops before retrying. The value of the last attempt is returned to the caller
// untouched, even on failure, so that an HTTP client can hand the final 503 to its caller. The
// attempt function always receives the "attempt context": the caller's context (with the
// correlation id once a retry event was emitted) bounded by AttemptTimeout and MaxDuration. Retain
// keeps that context alive for the returned value until the caller releases it (for HTTP:
// closes the body or reads it to the end).
//
// # Events and correlation ids
//
// With a listener on Config.Events' Retries (for instance the retrylog package), every retry
// decision emits an events.Retry: retrying, gave_up, aborted or budget_exhausted after a failed
// attempt, succeeded after a successful retry. A decision about a single attempt that could not
// have been retried anyway (a 404, MaxAttempts 1) emits nothing. Before its first event a call
// whose context has no correlation id gets a generated one (events.WithCorrelationID), which the
// later attempts' contexts carry too, so every event of one logical call shares it. Nothing is
// emitted or allocated when nobody listens.
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
	"sync/atomic"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
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
	budget *budget // nil when disabled

	calls    [catalog.NumRetryKinds]atomic.Uint64
	attempts atomic.Uint64
	errs     [catalog.NumClasses]atomic.Uint64 // by catalog.Class; ClassNone unused
	backoff  [catalog.NumDelaySources]histogram.Histogram
}

// New returns a Retry called name, configured by cfg (the zero Config is the default
// configuration). An invalid field is a [*catalog.ConfigError] naming it and its value.
func New(name string, cfg Config) (*Retry, error) {
	if name == "" {
		return nil, &catalog.ConfigError{Primitive: string(catalog.Retry), Field: "name", Value: "", Reason: "must not be empty"}
	}
	if err := cfg.validate(); err != nil {
		return nil, named(name, err)
	}
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, defaultMaxAttempts)
	cfg.Backoff = cfg.Backoff.withDefaults()
	cfg.RetryAfter = cfg.RetryAfter.withDefaults()
	if !cfg.DisableBudget {
		cfg.Budget = cfg.Budget.withDefaults()
	}
	r := &Retry{name: name, cfg: cfg, clk: clock.Or(cfg.Clock), rnd: clock.RandOr(cfg.Rand), hub: cfg.Events}
	if !cfg.DisableBudget {
		r.budget = newBudget(cfg.Budget, r.clk)
	}
	return r, nil
}

// Name returns the retry's name.
func (r *Retry) Name() string { return r.name }

// Config returns the configuration in use, defaults filled in (the budget's too, unless it is
// disabled).
func (r *Retry) Config() Config { return r.cfg }

// Hooks let a caller whose attempts return values (HTTP responses) tell the retry how an attempt
// went and what to do with values it drops. The zero Hooks treat a nil error as success.
type Hooks[T any] struct {
	// Endpoint names the operation in events and logs, e.g. "GET api.example.com/v1/orders"; it
	// must not carry a query string or credentials (the retry log removes them anyway).
	Endpoint string
	// Check maps an attempt's value and error to the error the retry classifies; nil means the
	// attempt succeeded. A protocol adapter returns an error carrying its hints (see the package
	// documentation). Nil Check: the attempt's error as is.
	Check func(v T, err error) error
	// Discard releases the value of an attempt the retry is about to repeat (for HTTP: drains and
	// closes the response body). The last attempt's value is never discarded: it is returned.
	Discard func(v T)
	// Status returns the status of a successful value (an HTTP status) for the "succeeded" event;
	// failed attempts report theirs through their error (classify.StatusError). Nil: no status.
	Status func(v T) int
	// Retain receives the value CallWith returns and the function that cancels the contexts the
	// retry created for it (AttemptTimeout, MaxDuration); it must arrange for release to be called
	// once the value is no longer used, and returns the value to hand out (for HTTP: a response
	// whose body releases when closed or read to the end). Nil: the contexts are cancelled when
	// CallWith returns — fine for values that do not read from the attempt's context afterwards.
	Retain func(v T, release func()) T
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
// last attempt's value and, on failure, the error as described in the package documentation. A
// panic in fn or a hook propagates to the caller; the call is still counted, as a failure of the
// attempt that panicked.
func CallWith[T any](ctx context.Context, r *Retry, fn func(ctx context.Context) (T, error), h Hooks[T]) (T, error) {
	var c call[T] // assigned field by field: a composite literal is built in a temporary and copied
	defer c.settle()
	c.begin(ctx, r, h)
	for {
		if c.try(fn) {
			return c.succeed()
		}
		if e, stop := c.decide(); stop {
			return c.end(e)
		}
		if e, stop := c.wait(); stop {
			return c.end(e)
		}
	}
}
