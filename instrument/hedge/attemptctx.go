package hedge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// attemptCtx is the context of a call's first attempt: the caller's context, cancelled besides
// when a hedge wins. It makes no cancellable context until the attempt asks for one (Done, Err
// or a context derived from it), so a call that ends before its hedge delay and never selects
// on its context pays nothing for it. Once made, the inner context is a standard cancelable
// context, so contexts derived from this one attach to it without a goroutine.
//
// It is never cancelled when the first attempt's result wins: what the result still reads
// through the context (an HTTP body) stays readable. It ends with the caller's context then.
type attemptCtx struct {
	parent context.Context

	inner     atomic.Pointer[context.Context] // made on first use
	mu        sync.Mutex
	cancel    context.CancelFunc // the inner context's
	cancelled atomic.Bool        // a hedge won: the attempt is cancelled (set with mu held)
}

// ctx returns the inner context, making it on first use.
func (c *attemptCtx) ctx() context.Context {
	if p := c.inner.Load(); p != nil {
		return *p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.inner.Load(); p != nil {
		return *p
	}
	inner, cancel := context.WithCancel(c.parent)
	if c.cancelled.Load() {
		cancel()
	}
	c.cancel = cancel
	c.inner.Store(&inner)
	return inner
}

// cancelAttempt cancels the first attempt because a hedge won.
func (c *attemptCtx) cancelAttempt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelled.Store(true)
	if c.cancel != nil {
		c.cancel()
	}
}

// wasCancelled reports whether a hedge won and cancelled the attempt.
func (c *attemptCtx) wasCancelled() bool { return c.cancelled.Load() }

func (c *attemptCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *attemptCtx) Done() <-chan struct{}       { return c.ctx().Done() }
func (c *attemptCtx) Err() error                  { return c.ctx().Err() }

// Value returns the parent's values — and, once the inner context exists, its own, so that
// contexts derived from this one find the inner cancelable context and attach to it.
func (c *attemptCtx) Value(key any) any {
	if p := c.inner.Load(); p != nil {
		return (*p).Value(key)
	}
	return c.parent.Value(key)
}

// AfterFunc arranges for f to run after the context is done (context.AfterFunc's hook), without
// a goroutine waiting for it.
func (c *attemptCtx) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(c.ctx(), f) }
