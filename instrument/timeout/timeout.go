// Package timeout bounds each attempt of a call with its own deadline.
//
// A [Timeout] runs the attempt under a context whose deadline is Timeout from now (or the
// caller's deadline, if that is earlier) and counts the outcome:
//
//   - successful — the attempt returned no error;
//   - timed_out — the attempt returned an error after the attempt's own deadline fired;
//   - aborted — the attempt returned an error after the caller cancelled its context: the
//     caller's cancellation is never a failure (the caller left; nothing is known about the
//     dependency);
//   - failed — any other error, including one after the caller's own deadline passed (the
//     call did not finish in the time the caller gave it, but not because of this timeout).
//
// The counts are read with [Timeout.Snapshot], indexed by catalog.TimeoutKind.
//
// A timed-out attempt's error is a [*TimedOutError]. It satisfies errors.Is(err, [ErrTimedOut])
// and errors.Is(err, context.DeadlineExceeded), reports Timeout() == true (like net.Error) and the
// fallback cause timeout, and unwraps to the error the attempt returned — so a classifier
// that looks for deadlines or net timeouts files it as a timeout, and the caller can still tell it
// from its own deadline with errors.Is(err, ErrTimedOut).
//
// Deadlines run on the configured clock. With the wall clock (the default) the attempt's context
// behaves like one from context.WithTimeoutCause, which it creates lazily: an attempt that never
// calls Done on its context (nor derives one from it) costs one small allocation and no timer;
// with any other clock (such as clock.Fake in tests) it is a
// context of this package that fires when that clock's timer fires, so tests decide exactly when
// an attempt times out.
package timeout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// ErrTimedOut is the sentinel of attempts stopped by their own deadline:
// errors.Is(err, ErrTimedOut) holds for the error a [Timeout] returns in that case (and, with the
// wall clock, for context.Cause of the attempt's context once its deadline fired).
var ErrTimedOut = errors.New("attempt timed out")

// DefaultTimeout is the time limit of a zero Config.Timeout (resilience4j's default too).
const DefaultTimeout = time.Second

// Config configures a [Timeout]. The zero Config is a working default: a 1 s limit on the wall
// clock. A negative Timeout makes [New] return a [*catalog.ConfigError] naming the field and its value.
type Config struct {
	// Timeout is each attempt's time limit (default 1 s).
	Timeout time.Duration
	// Clock runs the deadline. nil means the wall clock.
	Clock clock.Clock
}

// TimedOutError is the error of an attempt whose own deadline fired before it returned.
type TimedOutError struct {
	Name  string        // the timeout's name
	Limit time.Duration // the configured limit
	Err   error         // what the attempt returned; nil in the context's cause
}

// Error describes the timeout and the attempt's error.
func (e *TimedOutError) Error() string {
	msg := fmt.Sprintf("timeout %q: attempt did not finish within %s", e.Name, e.Limit)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the attempt's error.
func (e *TimedOutError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrTimedOut] or context.DeadlineExceeded.
func (e *TimedOutError) Is(target error) bool {
	return target == ErrTimedOut || target == context.DeadlineExceeded
}

// Timeout reports true, as net.Error does for timeouts.
func (e *TimedOutError) Timeout() bool { return true }

// FallbackCause returns catalog.CauseTimeout, the fallback cause of this error.
func (e *TimedOutError) FallbackCause() (catalog.Cause, bool) { return catalog.CauseTimeout, true }

// Timeout is a named per-attempt time limit. Create it with [New]; it is safe for concurrent use.
type Timeout struct {
	name     string
	limit    time.Duration
	clock    clock.Clock
	wall     bool           // clock is the wall clock: use a lazyCtx
	deadline *TimedOutError // the cause of this timeout's attempt contexts; compared by identity

	calls [catalog.NumTimeoutKinds]atomic.Uint64
}

// New returns a timeout called name, configured by cfg (the zero Config is a working default).
// An invalid field is a [*catalog.ConfigError] naming it and its value.
func New(name string, cfg Config) (*Timeout, error) {
	if name == "" {
		return nil, &catalog.ConfigError{Primitive: string(catalog.Timeout), Field: "name", Value: "", Reason: "must not be empty"}
	}
	if cfg.Timeout < 0 {
		return nil, &catalog.ConfigError{Primitive: string(catalog.Timeout), Name: name, Field: "Timeout", Value: cfg.Timeout,
			Reason: fmt.Sprintf("must not be negative (0 means the default, %v)", DefaultTimeout)}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	c := clock.Or(cfg.Clock)
	_, wall := c.(clock.Real)
	return &Timeout{
		name:     name,
		limit:    cfg.Timeout,
		clock:    c,
		wall:     wall,
		deadline: &TimedOutError{Name: name, Limit: cfg.Timeout},
	}, nil
}

// Name returns the timeout's name.
func (t *Timeout) Name() string { return t.name }

// Config returns the timeout's configuration with defaults applied.
func (t *Timeout) Config() Config { return Config{Timeout: t.limit, Clock: t.clock} }

// Attempt is one attempt started with [Timeout.Start]. End it exactly once: with [Attempt.Done],
// also when the attempt panicked (report a non-nil error), or with [Attempt.Record] and later
// [Attempt.Release] when its result is still read under its context.
type Attempt struct {
	t      *Timeout
	ctx    context.Context
	lazy   *lazyCtx           // wall clock: the attempt context, created lazily
	cancel context.CancelFunc // other clocks
}

// Start begins an attempt: it returns the context the attempt must run under (deadline Timeout
// from now, or the caller's if earlier) and the Attempt to finish. It is the two-step form of
// [Timeout.Do] for code that composes primitives without closures.
func (t *Timeout) Start(ctx context.Context) (context.Context, Attempt) {
	if t.wall {
		c := newLazyCtx(ctx, monoNow(), t.limit, t.deadline)
		return c, Attempt{t: t, ctx: c, lazy: c}
	}
	c := newClockCtx(ctx, t.clock, t.limit)
	return c, Attempt{t: t, ctx: c, cancel: c.stop}
}

// Done ends the attempt with the error it returned: it releases the attempt's context, counts
// the outcome and returns nil, err unchanged (failed), or a [*TimedOutError] wrapping err when
// the attempt's own deadline had fired (timed_out). A nil err is a success even if the deadline
// fired meanwhile: the attempt did return a result.
func (a Attempt) Done(err error) error {
	err = a.Record(err)
	a.Release()
	return err
}

// Record counts the attempt's outcome like [Attempt.Done] and returns the same error, but
// leaves the attempt's context alive, for a result that is still being read under it (an HTTP
// response body). Call [Attempt.Release] once the result is no longer used.
//
// The outcome: successful for a nil err; timed_out when the attempt's own deadline had fired;
// aborted when the caller's context had been cancelled (err is returned unchanged); failed
// otherwise.
func (a Attempt) Record(err error) error {
	switch {
	case err == nil:
		a.t.calls[catalog.TimeoutSuccessful].Add(1)
		return nil
	case a.fired():
		a.t.calls[catalog.TimeoutTimedOut].Add(1)
		return &TimedOutError{Name: a.t.name, Limit: a.t.limit, Err: err}
	case a.callerCanceled():
		a.t.calls[catalog.TimeoutAborted].Add(1)
		return err
	default:
		a.t.calls[catalog.TimeoutFailed].Add(1)
		return err
	}
}

// abandon ends an attempt that did not return (it panicked): it releases the context and counts
// the attempt as failed.
func (a Attempt) abandon() {
	a.Release()
	a.t.calls[catalog.TimeoutFailed].Add(1)
}

// Release ends the attempt's context (context.Canceled unless it had already ended) and frees
// its timer. [Attempt.Done] calls it; after [Attempt.Record], call it
// yourself. Releasing twice is harmless.
func (a Attempt) Release() {
	if a.lazy != nil {
		a.lazy.release()
		return
	}
	a.cancel()
}

// ReleaseFunc returns [Attempt.Release] as a function, for code that hands the attempt's end to
// whoever reads its result last (a response body). It costs no allocation once the attempt's
// context has been watched (its Done was called, as every blocking call does), nor with a clock
// other than the wall clock.
func (a Attempt) ReleaseFunc() func() {
	if a.lazy != nil {
		if a.lazy.ready.Load() {
			// Once the inner context exists, cancelling it is all release does (the released
			// flag only matters before): its cancel function is Release, already allocated.
			return a.lazy.cancel
		}
		return a.Release
	}
	return a.cancel
}

// fired reports whether the attempt's own deadline (not the caller's) ended its context.
func (a Attempt) fired() bool {
	if a.lazy != nil {
		return a.lazy.ownFired()
	}
	if c, ok := a.ctx.(*clockCtx); ok {
		return c.ownFired()
	}
	return context.Cause(a.ctx) == error(a.t.deadline)
}

// callerCanceled reports whether the caller's context — the attempt's parent — was cancelled
// (not merely past its deadline).
func (a Attempt) callerCanceled() bool {
	var parent context.Context
	switch {
	case a.lazy != nil:
		parent = a.lazy.parent
	default:
		if c, ok := a.ctx.(*clockCtx); ok {
			parent = c.parent
		}
	}
	return parent != nil && errors.Is(parent.Err(), context.Canceled)
}

// Do runs fn under the time limit and returns its error, classified as described by
// [Attempt.Done]. fn must return when its context ends; Do does not abandon a running fn. A
// panic in fn is counted as failed and propagates.
func (t *Timeout) Do(ctx context.Context, fn func(context.Context) error) error {
	actx, a := t.Start(ctx)
	done := false
	defer func() {
		if !done {
			a.abandon()
		}
	}()
	err := fn(actx)
	done = true
	return a.Done(err)
}

// Call runs fn under t's time limit and returns its result; the error is classified as
// described by [Attempt.Done]. The value fn returned is passed through even on error.
func Call[T any](ctx context.Context, t *Timeout, fn func(context.Context) (T, error)) (T, error) {
	actx, a := t.Start(ctx)
	done := false
	defer func() {
		if !done {
			a.abandon()
		}
	}()
	v, err := fn(actx)
	done = true
	return v, a.Done(err)
}

// Snapshot is a point-in-time reading of a timeout's counters.
type Snapshot struct {
	// Calls counts attempts by outcome: catalog.TimeoutSuccessful (returned no error),
	// catalog.TimeoutTimedOut (returned an error after their own deadline fired),
	// catalog.TimeoutAborted (returned an error after the caller cancelled) and
	// catalog.TimeoutFailed (any other error, or a panic). Every attempt counts exactly once.
	Calls [catalog.NumTimeoutKinds]uint64
}

// Snapshot reads the counters now. It allocates nothing.
func (t *Timeout) Snapshot() Snapshot {
	var s Snapshot
	for i := range t.calls {
		s.Calls[i] = t.calls[i].Load()
	}
	return s
}

// clockCtx is an attempt context whose deadline runs on a clock.Clock. It behaves like the
// context of context.WithDeadline: Done closes when the deadline passes (Err then returns
// context.DeadlineExceeded), when the parent ends (Err and cause from the parent) or when the
// attempt is over (context.Canceled).
type clockCtx struct {
	parent   context.Context
	deadline time.Time
	done     chan struct{}

	mu    sync.Mutex
	err   error
	own   bool        // the deadline fired
	after func() bool // stops the parent's AfterFunc
	timer clock.Timer
}

func newClockCtx(parent context.Context, clk clock.Clock, d time.Duration) *clockCtx {
	c := &clockCtx{parent: parent, deadline: clk.Now().Add(d), done: make(chan struct{})}
	if pd, ok := parent.Deadline(); ok && pd.Before(c.deadline) {
		c.deadline = pd
	}
	if err := parent.Err(); err != nil {
		c.end(err, false)
		return c
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if parent.Done() != nil {
		c.after = context.AfterFunc(parent, func() { c.end(parent.Err(), false) })
	}
	timer := clk.NewTimer(d)
	c.timer = timer
	go func() {
		select {
		case <-timer.C():
			c.end(context.DeadlineExceeded, true)
		case <-c.done:
		}
	}()
	return c
}

// end ends the context once; later calls do nothing. It stops the timer and the parent watch.
func (c *clockCtx) end(err error, own bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err, c.own = err, own
	close(c.done)
	after, timer := c.after, c.timer
	c.mu.Unlock()
	if after != nil {
		after()
	}
	if timer != nil {
		timer.Stop()
	}
}

func (c *clockCtx) stop() { c.end(context.Canceled, false) }

func (c *clockCtx) ownFired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.own
}

// Deadline returns the attempt's deadline on its clock.
func (c *clockCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done is closed when the attempt's context ends.
func (c *clockCtx) Done() <-chan struct{} { return c.done }

// Err returns why the context ended, or nil.
func (c *clockCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the parent's value for key.
func (c *clockCtx) Value(key any) any { return c.parent.Value(key) }
