// Package fallback answers a failed call with a degraded result — cached data, a default, an
// empty list — and counts why it had to.
//
// A [Fallback] is the named, counted part: it decides from the call's error whether the fallback
// runs (only for the causes it is configured for) and counts each invocation by cause. The
// generic helper [Call] (and [Fallback.Do] for error-only calls) run the call and, when it fails
// for a chosen cause, the fallback function, and report whether the result came from the
// fallback, so a degraded value is never mistaken for real data:
//
//	v, fromFallback, err := fallback.Call(ctx, fb, fetchPrices,
//		func(ctx context.Context, cause catalog.Cause, err error) (Prices, error) {
//			return cachedPrices(), nil
//		})
//
// # Causes
//
// The cause of an error is a catalog.Cause — catalog.CauseCircuitOpen, CauseBulkheadFull,
// CauseTimeout, CauseRetriesExhausted or CauseError, the values of the fallback metric's `cause`
// label. [DefaultClassify] derives it without importing the other primitives: it takes the first
// error in the chain (errors.As order, outermost first) that implements [Causer] and reports a
// cause. stormwatch's errors implement it: the breaker's open-circuit rejection (circuit_open),
// the bulkhead's [bulkhead.FullError] (bulkhead_full), the timeout's [timeout.TimedOutError]
// (timeout) and the retry's exhausted error (retries_exhausted). Without such an error in the
// chain, context.DeadlineExceeded means timeout and anything else error. Supply Config.Classify
// to decide differently.
//
// Two kinds of error are never a fallback cause, whatever the classifier says: business errors
// (marked with classify.Business — the caller gets the dependency's answer) and the caller's
// cancellation (nobody is waiting for a degraded result). The fallback returns them as they are
// and counts nothing.
//
// Counts are read with [Fallback.Snapshot], indexed by catalog.Cause.
//
// [bulkhead.FullError]: https://pkg.go.dev/github.com/stormwatch-go/stormwatch/instrument/bulkhead#FullError
// [timeout.TimedOutError]: https://pkg.go.dev/github.com/stormwatch-go/stormwatch/instrument/timeout#TimedOutError
package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Causer is implemented by errors that know which fallback cause they represent. FallbackCause
// reports the cause and true, or false to let the search continue down the error chain (the
// retry's error of an aborted call does that). A cause outside catalog.Causes is ignored.
type Causer interface {
	FallbackCause() (catalog.Cause, bool)
}

// DefaultClassify returns the cause of err: the cause reported by the outermost error in err's
// chain that implements [Causer]; otherwise catalog.CauseTimeout when err is
// context.DeadlineExceeded, else catalog.CauseError. A fallback never classifies a nil err.
func DefaultClassify(err error) catalog.Cause {
	if cause, ok := causeIn(err); ok {
		return cause
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return catalog.CauseTimeout
	}
	return catalog.CauseError
}

func validCause(c catalog.Cause) bool { return c < catalog.NumCauses }

// causeIn walks err's chain depth first, outermost first (the errors.As order), and returns the
// first valid cause a [Causer] reports.
func causeIn(err error) (catalog.Cause, bool) {
	for err != nil {
		if c, ok := err.(Causer); ok {
			if cause, ok := c.FallbackCause(); ok && validCause(cause) {
				return cause, true
			}
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range x.Unwrap() {
				if cause, ok := causeIn(inner); ok {
					return cause, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// Config configures a [Fallback]. The zero Config is a working default: the fallback runs for
// every cause, classified by [DefaultClassify], on the wall clock, without events. Invalid
// fields make [New] return a [*catalog.ConfigError] naming the field and its value.
type Config struct {
	// On lists the causes for which the fallback runs; errors of other causes are returned as
	// they are. nil means every cause. An empty, non-nil list is invalid.
	On []catalog.Cause
	// Classify derives the cause of a call's error. nil means [DefaultClassify]. A result that
	// is not one of catalog.Causes is counted as catalog.CauseError.
	Classify func(error) catalog.Cause
	// Clock stamps the Fallback events. nil means the wall clock.
	Clock clock.Clock
	// Events receives a Fallback event for every invocation. nil means no events.
	Events *events.Hub
}

// Fallback is a named fallback policy: the causes it answers and its counts by cause. Create it
// with [New]; it is safe for concurrent use. It is not generic — the fallback function is given
// per call to [Call] or [Fallback.Do] — so one Fallback, and one set of series, serves calls of
// any result type.
type Fallback struct {
	name     string
	on       [catalog.NumCauses]bool
	classify func(error) catalog.Cause
	clock    clock.Clock
	hub      *events.Hub
	calls    [catalog.NumCauses]atomic.Uint64
}

// New returns a fallback called name, configured by cfg (the zero Config is a working default).
// An invalid field is a [*catalog.ConfigError] naming it and its value.
func New(name string, cfg Config) (*Fallback, error) {
	bad := func(field string, value any, reason string) error {
		return &catalog.ConfigError{Primitive: string(catalog.Fallback), Name: name, Field: field, Value: value, Reason: reason}
	}
	if name == "" {
		return nil, bad("name", "", "must not be empty")
	}
	f := &Fallback{name: name, classify: cfg.Classify, clock: clock.Or(cfg.Clock), hub: cfg.Events}
	if f.classify == nil {
		f.classify = DefaultClassify
	}
	if cfg.On == nil {
		for i := range f.on {
			f.on[i] = true
		}
	} else {
		if len(cfg.On) == 0 {
			return nil, bad("On", cfg.On, "list at least one cause, or leave it nil for all")
		}
		for i, c := range cfg.On {
			if !validCause(c) {
				return nil, bad(fmt.Sprintf("On[%d]", i), c, fmt.Sprintf("not a cause (want one of %v)", catalog.Causes))
			}
			f.on[c] = true
		}
	}
	return f, nil
}

// Name returns the fallback's name.
func (f *Fallback) Name() string { return f.name }

// Handles reports whether the fallback runs for cause.
func (f *Fallback) Handles(cause catalog.Cause) bool {
	return validCause(cause) && f.on[cause]
}

// Decide classifies a call's error and reports whether the fallback should run for it; when it
// should, it counts the invocation and emits a Fallback event, so call it only when you will run
// the fallback if ok. It returns ok == false, whatever Config.Classify says, for:
//
//   - a nil err;
//   - a business error, marked with classify.Business: the dependency answered, and the caller
//     receives its answer, never a degraded substitute;
//   - the caller's cancellation — ctx cancelled, or context.Canceled in err: the caller has
//     gone, nobody would see a degraded result, and cancellation is never a failure.
//
// It also returns ok == false for a cause the fallback is not configured for (cause then says
// which); cause is meaningless in the other cases. An ended deadline does not prevent the
// fallback: a degraded answer within the deadline's aftermath is its purpose.
//
// [Call] and [Fallback.Do] use it; call it directly to build your own composition.
func (f *Fallback) Decide(ctx context.Context, err error) (cause catalog.Cause, ok bool) {
	if err == nil || errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled) ||
		classify.IsBusiness(err) {
		return catalog.CauseError, false
	}
	cause = f.classify(err)
	if !validCause(cause) {
		cause = catalog.CauseError
	}
	if !f.on[cause] {
		return cause, false
	}
	f.calls[cause].Add(1)
	if f.hub != nil && f.hub.Fallbacks.Active() {
		f.hub.Fallbacks.Emit(events.Fallback{Name: f.name, Cause: cause, Err: err, At: f.clock.Now(), Context: ctx})
	}
	return cause, true
}

// Func is a fallback function: it receives the call's context, the cause and the call's error,
// and returns the degraded result (or an error of its own).
type Func[T any] func(ctx context.Context, cause catalog.Cause, err error) (T, error)

// Value returns a [Func] that always answers v.
func Value[T any](v T) Func[T] {
	return func(context.Context, catalog.Cause, error) (T, error) { return v, nil }
}

// Call runs fn; when it fails and f decides the fallback should run (see [Fallback.Decide]), it
// runs fb and returns its result with fromFallback == true. Otherwise it returns fn's result with
// fromFallback == false. An error returned together with fromFallback == true is fb's own.
func Call[T any](ctx context.Context, f *Fallback, fn func(context.Context) (T, error), fb Func[T]) (v T, fromFallback bool, err error) {
	v, err = fn(ctx)
	if err == nil {
		return v, false, nil
	}
	cause, ok := f.Decide(ctx, err)
	if !ok {
		return v, false, err
	}
	v, err = fb(ctx, cause, err)
	return v, true, err
}

// Do is [Call] for calls without a result: it runs fn and, when f decides so, fb; it reports
// whether fb ran and returns fb's error in that case, fn's otherwise.
func (f *Fallback) Do(ctx context.Context, fn func(context.Context) error, fb func(ctx context.Context, cause catalog.Cause, err error) error) (fromFallback bool, err error) {
	err = fn(ctx)
	if err == nil {
		return false, nil
	}
	cause, ok := f.Decide(ctx, err)
	if !ok {
		return false, err
	}
	return true, fb(ctx, cause, err)
}

// Snapshot is a point-in-time reading of a fallback's counters.
type Snapshot struct {
	// Calls counts the fallback's invocations by cause.
	Calls [catalog.NumCauses]uint64
}

// Snapshot reads the counters now. It allocates nothing.
func (f *Fallback) Snapshot() Snapshot {
	var s Snapshot
	for i := range f.calls {
		s.Calls[i] = f.calls[i].Load()
	}
	return s
}
