// Package fallback answers a failed call with a degraded result — cached data, a default, an
// empty list — and counts why it had to (seed notes CB-97, CO-11).
//
// A [Fallback] is the named, counted part: it decides from the call's error whether the fallback
// runs (only for the causes it is configured for) and counts each invocation by cause. The
// generic helper [Call] (and [Fallback.Do] for error-only calls) run the call and, when it fails
// for a chosen cause, the fallback function, and report whether the result came from the
// fallback, so a degraded value is never mistaken for real data:
//
//	v, fromFallback, err := fallback.Call(ctx, fb, fetchPrices,
//		func(ctx context.Context, cause fallback.Cause, err error) (Prices, error) {
//			return cachedPrices(), nil
//		})
//
// # Causes
//
// The cause of an error is one of [CauseCircuitOpen], [CauseBulkheadFull], [CauseTimeout],
// [CauseRetriesExhausted] and [CauseError] — the values of the fallback metric's `cause` label.
// [DefaultClassify] derives it without importing the other primitives: it takes the first error
// in the chain (errors.As order, outermost first) that has a method
//
//	FallbackCause() string
//
// returning one of the cause strings. stormwatch's errors implement it: the breaker's open-circuit
// rejection ("circuit_open"), the bulkhead's [bulkhead.FullError] ("bulkhead_full"), the
// timeout's [timeout.TimedOutError] ("timeout") and the retry's exhausted error
// ("retries_exhausted"). Without such an error in the chain, context.DeadlineExceeded means
// "timeout" and anything else "error". Supply Config.Classify to decide differently.
//
// [bulkhead.FullError]: https://pkg.go.dev/github.com/stormwatch-go/stormwatch/instrument/bulkhead#FullError
// [timeout.TimedOutError]: https://pkg.go.dev/github.com/stormwatch-go/stormwatch/instrument/timeout#TimedOutError
package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Cause says why a fallback ran. Its values are the `cause` label values of the fallback metric.
type Cause string

// The causes.
const (
	CauseCircuitOpen      Cause = "circuit_open"      // the circuit breaker refused the call
	CauseBulkheadFull     Cause = "bulkhead_full"     // the bulkhead refused the call
	CauseTimeout          Cause = "timeout"           // the call ran out of time
	CauseRetriesExhausted Cause = "retries_exhausted" // every retry failed, or the retry budget or deadline ran out
	CauseError            Cause = "error"             // any other error
)

// Causes lists every cause, in the metric catalog's order.
var Causes = []Cause{CauseCircuitOpen, CauseBulkheadFull, CauseTimeout, CauseRetriesExhausted, CauseError}

func (c Cause) index() int {
	switch c {
	case CauseCircuitOpen:
		return 0
	case CauseBulkheadFull:
		return 1
	case CauseTimeout:
		return 2
	case CauseRetriesExhausted:
		return 3
	case CauseError:
		return 4
	}
	return -1
}

// Valid reports whether c is one of [Causes].
func (c Cause) Valid() bool { return c.index() >= 0 }

// Causer is implemented by errors that know which fallback cause they represent. The method
// returns one of the [Causes] as a string; other strings are ignored.
type Causer interface {
	FallbackCause() string
}

// DefaultClassify returns the cause of err: the FallbackCause of the outermost error in err's
// chain that implements [Causer] with a valid cause; otherwise [CauseTimeout] when err is
// context.DeadlineExceeded, else [CauseError]. A nil err has no cause; DefaultClassify returns
// [CauseError] for it, but a fallback never classifies nil.
func DefaultClassify(err error) Cause {
	if cause, ok := causeIn(err); ok {
		return cause
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return CauseTimeout
	}
	return CauseError
}

// causeIn walks err's chain depth first, outermost first (the errors.As order), and returns the
// first valid cause a [Causer] reports.
func causeIn(err error) (Cause, bool) {
	for err != nil {
		if c, ok := err.(Causer); ok {
			if cause := Cause(c.FallbackCause()); cause.Valid() {
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
			return "", false
		default:
			return "", false
		}
	}
	return "", false
}

// Config configures a [Fallback].
type Config struct {
	// On lists the causes for which the fallback runs; errors of other causes are returned as
	// they are. nil means every cause. An empty, non-nil list is invalid.
	On []Cause
	// Classify derives the cause of a call's error. nil means [DefaultClassify]. A result that
	// is not one of [Causes] is counted as [CauseError].
	Classify func(error) Cause
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
	on       [5]bool
	classify func(error) Cause
	clock    clock.Clock
	hub      *events.Hub
	counts   [5]atomic.Uint64
}

// New returns a fallback called name. It returns an error naming the field and value when cfg is
// invalid.
func New(name string, cfg Config) (*Fallback, error) {
	if name == "" {
		return nil, errors.New("fallback: name must not be empty")
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
			return nil, fmt.Errorf("fallback %q: On = []: list at least one cause, or leave it nil for all", name)
		}
		for _, c := range cfg.On {
			if !c.Valid() {
				return nil, fmt.Errorf("fallback %q: On contains %q: not a cause (want one of %v)", name, string(c), Causes)
			}
			f.on[c.index()] = true
		}
	}
	return f, nil
}

// Name returns the fallback's name.
func (f *Fallback) Name() string { return f.name }

// Handles reports whether the fallback runs for cause.
func (f *Fallback) Handles(cause Cause) bool {
	i := cause.index()
	return i >= 0 && f.on[i]
}

// Decide classifies a call's error and reports whether the fallback should run for it; when it
// should, it counts the invocation and emits a Fallback event, so call it only when you will run
// the fallback if ok. It returns ok == false for a nil err, for a cause the fallback is not
// configured for, and when ctx was cancelled (the caller has gone; nobody would see a degraded
// result). An ended deadline does not prevent the fallback: a degraded answer within the
// deadline's aftermath is its purpose.
//
// [Call] and [Fallback.Do] use it; call it directly to build your own composition.
func (f *Fallback) Decide(ctx context.Context, err error) (cause Cause, ok bool) {
	if err == nil || errors.Is(ctx.Err(), context.Canceled) {
		return "", false
	}
	cause = f.classify(err)
	i := cause.index()
	if i < 0 {
		cause, i = CauseError, CauseError.index()
	}
	if !f.on[i] {
		return cause, false
	}
	f.counts[i].Add(1)
	if f.hub != nil && f.hub.Fallbacks.Active() {
		f.hub.Fallbacks.Emit(events.Fallback{Name: f.name, Cause: string(cause), Err: err, At: f.clock.Now()})
	}
	return cause, true
}

// Func is a fallback function: it receives the call's context, the cause and the call's error,
// and returns the degraded result (or an error of its own).
type Func[T any] func(ctx context.Context, cause Cause, err error) (T, error)

// Value returns a [Func] that always answers v.
func Value[T any](v T) Func[T] {
	return func(context.Context, Cause, error) (T, error) { return v, nil }
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
func (f *Fallback) Do(ctx context.Context, fn func(context.Context) error, fb func(ctx context.Context, cause Cause, err error) error) (fromFallback bool, err error) {
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

// Stats is a point-in-time reading of a fallback's counters.
type Stats struct {
	// Calls counts the fallback's invocations by cause, indexed like [Causes].
	Calls [5]uint64
}

// ByCause returns the count of invocations for cause (0 for an unknown cause).
func (s Stats) ByCause(cause Cause) uint64 {
	if i := cause.index(); i >= 0 {
		return s.Calls[i]
	}
	return 0
}

// Stats reads the counters now.
func (f *Fallback) Stats() Stats {
	var s Stats
	for i := range f.counts {
		s.Calls[i] = f.counts[i].Load()
	}
	return s
}
