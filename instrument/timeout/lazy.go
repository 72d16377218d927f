package timeout

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lazyCtx is the attempt context of a wall-clock Timeout. It knows its deadline from the start
// but creates the context.WithDeadlineCause that enforces it — a timer, a cancel context and a
// link to the parent — only when someone needs it: the first call to Done (every blocking
// operation, net/http among them, calls it), to Err once the deadline or the parent has ended,
// or to derive a context from it. An attempt that never watches its context (a fast in-memory
// call) therefore costs one small allocation and one clock read instead of a timer.
//
// Once created, the inner context answers Done, Err and Value, so context.Cause, derived
// contexts and context.AfterFunc behave exactly as with context.WithTimeoutCause. Before that,
// Value is the parent's (an unwatched attempt context cannot have ended yet without Err
// creating the inner context).
type lazyCtx struct {
	parent context.Context
	at     int64     // the deadline, in nanoseconds since monoBase (monotonic)
	own    bool      // the attempt's own deadline is earlier than the parent's
	pdl    time.Time // the parent's deadline, when it is the attempt's (own == false)
	cause  error     // the Timeout's *TimedOutError, compared by identity

	// The inner context and its cancel, written once under mu before ready is set: read them
	// only after ready.Load() returned true (no allocation of their own).
	inner    context.Context
	cancel   context.CancelFunc
	ready    atomic.Bool
	released atomic.Bool
	mu       sync.Mutex // serialises creating inner
}

// monoBase is the origin of lazyCtx deadlines: reading the monotonic clock alone
// (time.Since) costs about half of time.Now.
var monoBase = time.Now()

func monoNow() int64 { return int64(time.Since(monoBase)) }

// newLazyCtx returns the attempt context of an attempt started at now (monoNow) with limit.
func newLazyCtx(parent context.Context, now int64, limit time.Duration, cause error) *lazyCtx {
	c := &lazyCtx{parent: parent, at: now + int64(limit), own: true, cause: cause}
	if pd, ok := parent.Deadline(); ok {
		if pat := int64(pd.Sub(monoBase)); pat <= c.at {
			c.at, c.own, c.pdl = pat, false, pd
		}
	}
	return c
}

// get returns the inner context, creating it on first use.
func (c *lazyCtx) get() context.Context {
	if c.ready.Load() {
		return c.inner
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready.Load() {
		return c.inner
	}
	if c.own {
		c.inner, c.cancel = context.WithDeadlineCause(c.parent, c.deadline(), c.cause)
	} else { // the parent's deadline is the attempt's: it ends the context, not ours
		c.inner, c.cancel = context.WithCancel(c.parent)
	}
	c.ready.Store(true)
	if c.released.Load() { // released before anyone watched: end it at once
		c.cancel()
	}
	return c.inner
}

func (c *lazyCtx) deadline() time.Time {
	if !c.own {
		return c.pdl
	}
	return monoBase.Add(time.Duration(c.at))
}

// Deadline returns the attempt's deadline: Timeout after its start, or the parent's if earlier.
func (c *lazyCtx) Deadline() (time.Time, bool) { return c.deadline(), true }

// Done returns the channel closed when the attempt's context ends.
func (c *lazyCtx) Done() <-chan struct{} { return c.get().Done() }

// Err returns why the context ended, or nil.
func (c *lazyCtx) Err() error {
	if c.ready.Load() {
		return c.inner.Err()
	}
	if c.released.Load() || c.parent.Err() != nil || monoNow() >= c.at {
		return c.get().Err()
	}
	return nil
}

// Value returns the value for key.
func (c *lazyCtx) Value(key any) any {
	if c.ready.Load() {
		return c.inner.Value(key)
	}
	return c.parent.Value(key)
}

// String describes the context like the standard library's contexts do.
func (c *lazyCtx) String() string { return "timeout.attemptContext" }

// release ends the context (context.Canceled unless it had already ended). Either release sees
// the inner context, or get sees the released flag: it is cancelled in both cases.
func (c *lazyCtx) release() {
	c.released.Store(true)
	if c.ready.Load() {
		c.cancel()
	}
}

// ownFired reports whether the attempt's own deadline (not the parent's) ended the context, or
// would have if anyone had been watching it.
func (c *lazyCtx) ownFired() bool {
	if c.ready.Load() {
		return context.Cause(c.inner) == c.cause
	}
	return c.own && monoNow() >= c.at
}
