package retry

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
)

// call is the state of one logical call of [CallWith], on CallWith's stack. Its methods are the
// steps of CallWith's loop — try an attempt, decide, wait — and the two ways out, succeed and
// end. A new reason to stop retrying is one more line in decide.
//
// The attempt function is not kept in call: escape analysis does not tell call's fields apart, and
// the errors and values kept there reach the heap, so a function stored there would too (and a
// closure passed to Do would cost an allocation per call). What only a failed attempt needs is in
// failures, allocated at the first failure, so that a call whose first attempt succeeds sets up
// as little as possible.
type call[T any] struct {
	r *Retry
	h Hooks[T]
	// ctx is the call's context: the caller's, bounded by MaxDuration, carrying the correlation
	// id once an event was emitted. Attempts run under it (and AttemptTimeout).
	ctx       context.Context
	listening bool // someone listens to retry events
	done      bool // the call returned normally (no panic)
	handed    bool // Hooks.Retain took over the cancel functions

	attempt int       // the attempt running or just finished, 1-based
	v       T         // its value
	err     error     // its error, after Hooks.Check; nil when it succeeded
	start   time.Time // when the call began; set when first needed

	attemptCancel context.CancelFunc // the current attempt's context (AttemptTimeout)
	totalCancel   context.CancelFunc // the call's context (MaxDuration)

	f *failures // nil until an attempt fails
}

// failures is what a call keeps once one of its attempts has failed.
type failures struct {
	info     attemptInfo         // the last failed attempt's classification
	now      time.Time           // when it failed (or, at the end, when the call ended)
	errs     []error             // every failed attempt's error, in order
	first    [3]error            // errs' first backing array: enough for the default 3 attempts
	delay    time.Duration       // before the next attempt
	source   catalog.DelaySource // what set delay
	prev     time.Duration       // the previous backoff delay, for decorrelated jitter
	dl       deadline            // the call's deadline, worked out at the first retry
	retrying bool                // a retrying event was emitted
	dropped  bool                // v was discarded: the call returns the zero value
}

// ending is how a failed call ends.
type ending struct {
	outcome catalog.Outcome
	cause   error // the context's error, when the context ended the call
	wrap    bool  // return an *Error; else the last attempt's error as is
	report  bool  // the decision is reported to listeners: the call was or could have been retried
}

// begin starts the call: the MaxDuration context, the start time when needed, the budget deposit.
func (c *call[T]) begin(ctx context.Context, r *Retry, h Hooks[T]) {
	c.r, c.h = r, h
	c.listening = r.hub != nil && r.hub.Retries.Active()
	if r.cfg.MaxDuration > 0 {
		c.start = r.clk.Now()
		ctx, c.totalCancel = context.WithTimeout(ctx, r.cfg.MaxDuration)
	} else if c.listening {
		c.start = r.clk.Now()
	}
	c.ctx = ctx
	if r.budget != nil {
		r.budget.deposit()
	}
}

// try runs the next attempt of fn, under AttemptTimeout when set, and reports whether it
// succeeded. A failure is classified, counted and remembered.
func (c *call[T]) try(fn func(context.Context) (T, error)) bool {
	c.attempt++
	if c.f != nil {
		c.f.dropped = false // v is the new attempt's
	}
	if c.r.cfg.AttemptTimeout <= 0 {
		c.v, c.err = fn(c.ctx)
	} else {
		// The attempt context's cancel function stays in c: the returned value may still need
		// the context.
		actx, cancel := context.WithTimeout(c.ctx, c.r.cfg.AttemptTimeout)
		c.attemptCancel = cancel
		c.v, c.err = fn(actx)
	}
	if c.h.Check != nil {
		c.err = c.h.Check(c.v, c.err)
	}
	if c.err == nil {
		return true
	}
	if c.f == nil {
		c.f = &failures{}
		c.f.errs = c.f.first[:0]
	}
	f := c.f
	f.info = c.r.classify(c.err)
	c.r.errs[f.info.verdict.Class].Add(1)
	f.errs = append(f.errs, c.err)
	f.now = c.r.clk.Now()
	if c.start.IsZero() {
		c.start = f.now
	}
	return false
}

// decide, after a failed attempt, ends the call or sets the delay before the next attempt.
func (c *call[T]) decide() (ending, bool) {
	if cerr := c.ctx.Err(); cerr != nil { // the caller cancelled, or the total deadline passed
		return ending{outcome: contextOutcome(cerr), cause: cerr, wrap: c.attempt > 1 || !errors.Is(c.err, cerr), report: c.attempt > 1 || c.f.info.verdict.Retryable}, true
	}
	retryable := c.retryable()
	if !retryable || c.attempt >= c.r.cfg.MaxAttempts {
		return ending{outcome: catalog.OutcomeGaveUp, wrap: c.attempt > 1, report: c.attempt > 1 || (retryable && c.r.cfg.MaxAttempts > 1)}, true
	}
	c.f.delay, c.f.source = c.nextDelay()
	if !c.timeLeft() {
		return ending{outcome: catalog.OutcomeGaveUp, wrap: true, report: true}, true
	}
	if c.r.budget != nil && !c.r.budget.tryRetry() {
		return ending{outcome: catalog.OutcomeBudgetExhausted, wrap: true, report: true}, true
	}
	return ending{}, false
}

// retryable is the classifier's verdict on the failed attempt, or RetryIf's where the rules let
// it decide.
func (c *call[T]) retryable() bool {
	if c.r.cfg.RetryIf != nil && !c.f.info.never {
		return c.r.cfg.RetryIf(c.err, c.f.info.verdict)
	}
	return c.f.info.verdict.Retryable
}

// nextDelay returns the delay before the next attempt: the one the failed attempt's error asks
// for ([classify.RetryAfterHint]), clamped and jittered, else the backoff strategy's.
func (c *call[T]) nextDelay() (time.Duration, catalog.DelaySource) {
	r := c.r
	if !r.cfg.DisableRetryAfter {
		if h, ok := findHint[classify.RetryAfterHint](c.err); ok {
			if wait, ok := h.RetryAfter(c.f.now); ok {
				return r.cfg.RetryAfter.delay(wait, r.rnd), catalog.SourceRetryAfter
			}
		}
	}
	c.f.prev = r.cfg.Backoff.Delay(c.attempt, c.f.prev, r.rnd)
	return c.f.prev, catalog.SourceBackoff
}

// timeLeft clamps the delay to the time left before the call's deadline, and reports whether an
// attempt after the delay would still have its least useful time: MinAttemptTime, else
// AttemptTimeout, else a tenth of the time left.
func (c *call[T]) timeLeft() bool {
	f := c.f
	if !f.dl.known {
		f.dl = c.r.deadline(c.ctx, c.start, f.now)
	}
	if !f.dl.ok {
		return true
	}
	remaining := f.dl.at.Sub(f.now)
	f.delay = min(f.delay, max(remaining, 0))
	minUseful := cmp.Or(c.r.cfg.MinAttemptTime, c.r.cfg.AttemptTimeout, remaining/10)
	return remaining > 0 && remaining-f.delay >= minUseful
}

// wait reports the retry, drops the failed attempt's value and waits for the delay; the call
// ends there when its context ends first.
func (c *call[T]) wait() (ending, bool) {
	f := c.f
	if c.listening {
		c.emit(catalog.OutcomeRetrying, f.delay, f.source)
		f.retrying = true
	}
	if c.h.Discard != nil {
		c.h.Discard(c.v)
	}
	var zero T
	c.v, f.dropped = zero, true
	if c.attemptCancel != nil {
		c.attemptCancel()
		c.attemptCancel = nil
	}
	if cerr := c.r.sleep(c.ctx, f.delay); cerr != nil {
		f.now = c.r.clk.Now()
		return ending{outcome: contextOutcome(cerr), cause: cerr, wrap: true, report: f.retrying}, true
	}
	c.r.backoff[f.source].Observe(f.delay)
	c.r.attempts.Add(1)
	return ending{}, false
}

// succeed ends a call whose last attempt succeeded.
func (c *call[T]) succeed() (T, error) {
	if c.attempt == 1 {
		c.r.calls[catalog.RetrySuccessfulWithoutRetry].Add(1)
	} else {
		c.r.calls[catalog.RetrySuccessfulWithRetry].Add(1)
		if c.listening {
			c.f.now = c.r.clk.Now()
			c.f.info = attemptInfo{}
			if c.h.Status != nil {
				c.f.info.status = c.h.Status(c.v)
			}
			c.emit(catalog.OutcomeSucceeded, 0, 0)
		}
	}
	c.done = true
	if c.h.Retain == nil { // the common case, without a call
		return c.v, nil
	}
	return c.bind(), nil
}

// end ends a failed call: it counts it, reports the decision and returns the last value (unless
// it was discarded) with the error.
func (c *call[T]) end(e ending) (T, error) {
	switch {
	case e.outcome == catalog.OutcomeAborted:
		c.r.calls[catalog.RetryAborted].Add(1)
	case c.attempt == 1:
		c.r.calls[catalog.RetryFailedWithoutRetry].Add(1)
	default:
		c.r.calls[catalog.RetryFailedWithRetry].Add(1)
	}
	c.done = true
	var v T
	if !c.f.dropped {
		v = c.bind()
	}
	if c.listening && e.report {
		c.emit(e.outcome, 0, 0)
	}
	if !e.wrap {
		return v, c.err
	}
	return v, &Error{name: c.r.name, outcome: e.outcome, errs: c.f.errs, cause: e.cause}
}

// settle runs deferred in CallWith. It cancels the contexts the call created, unless Hooks.Retain
// took them over; and when the call did not return normally (a panic is propagating), it counts
// the call as failed. It does not recover the panic.
func (c *call[T]) settle() {
	if !c.handed {
		if c.attemptCancel != nil {
			c.attemptCancel()
		}
		if c.totalCancel != nil {
			c.totalCancel()
		}
	}
	if c.done {
		return
	}
	c.r.errs[catalog.ClassError].Add(1)
	if c.attempt <= 1 {
		c.r.calls[catalog.RetryFailedWithoutRetry].Add(1)
	} else {
		c.r.calls[catalog.RetryFailedWithRetry].Add(1)
	}
}

// bind hands the value CallWith returns to Hooks.Retain together with the cancel functions of its
// contexts, so that the value (a response body) stays usable until it is released.
func (c *call[T]) bind() T {
	if c.h.Retain == nil || (c.attemptCancel == nil && c.totalCancel == nil) {
		return c.v
	}
	a, t := c.attemptCancel, c.totalCancel
	c.handed = true
	return c.h.Retain(c.v, func() {
		if a != nil {
			a()
		}
		if t != nil {
			t()
		}
	})
}

// emit sends a retry event about the last attempt (c.f is set: an attempt failed), attaching a correlation id to the call's
// context first when it has none, so that the later attempts and events carry it too.
func (c *call[T]) emit(outcome catalog.Outcome, delay time.Duration, source catalog.DelaySource) {
	if events.CorrelationID(c.ctx) == "" {
		c.ctx = events.WithCorrelationID(c.ctx, events.NewCorrelationID())
	}
	c.r.hub.Retries.Emit(events.Retry{
		Context:     c.ctx,
		Name:        c.r.name,
		Endpoint:    c.h.Endpoint,
		Attempt:     c.attempt,
		MaxAttempts: c.r.cfg.MaxAttempts,
		Elapsed:     c.f.now.Sub(c.start),
		Delay:       delay,
		DelaySource: source,
		ErrorClass:  c.f.info.verdict.Class,
		HTTPStatus:  c.f.info.status,
		Outcome:     outcome,
		Err:         c.err,
		At:          c.f.now,
	})
}

// contextOutcome is the outcome of a call ended by its context: gave_up when its deadline
// passed, aborted when the caller cancelled it.
func contextOutcome(cerr error) catalog.Outcome {
	if errors.Is(cerr, context.DeadlineExceeded) {
		return catalog.OutcomeGaveUp
	}
	return catalog.OutcomeAborted
}

// sleep blocks for d on the retry's clock, or until ctx is done (it then returns ctx's error).
func (r *Retry) sleep(ctx context.Context, d time.Duration) error {
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
