// Package events defines the typed events that stormwatch's resilience primitives emit —
// breaker transitions, rejected calls, call outcomes, retry decisions, fallbacks — and a
// lock-free listener set to receive them.
//
// Emitting costs one atomic load when nobody listens: primitives check [Listeners.Active]
// before they build an event, so nothing is allocated or called on the hot path.
package events

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// Listeners is a set of listener functions for events of type E. The zero value is an empty set
// ready to use. It is safe for concurrent use: Emit never blocks on Add or remove.
//
// Listeners are called synchronously, in the emitting goroutine, in the order they were added.
// They must be fast and must not call back into the primitive that emitted the event.
type Listeners[E any] struct {
	mu  sync.Mutex // serialises Add and remove
	fns atomic.Pointer[[]*listener[E]]
}

type listener[E any] struct{ fn func(E) }

// Add registers fn and returns a function that removes it again. Removing twice is harmless.
// A nil fn is ignored.
func (l *Listeners[E]) Add(fn func(E)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	entry := &listener[E]{fn: fn}
	l.mu.Lock()
	var next []*listener[E]
	if cur := l.fns.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, entry)
	l.fns.Store(&next)
	l.mu.Unlock()
	return func() { l.remove(entry) }
}

func (l *Listeners[E]) remove(entry *listener[E]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.fns.Load()
	if cur == nil {
		return
	}
	next := make([]*listener[E], 0, len(*cur))
	for _, e := range *cur {
		if e != entry {
			next = append(next, e)
		}
	}
	if len(next) == 0 {
		l.fns.Store(nil)
		return
	}
	l.fns.Store(&next)
}

// Active reports whether at least one listener is registered. Callers check it before building
// an event so that an unobserved primitive pays one atomic load.
func (l *Listeners[E]) Active() bool {
	if l == nil {
		return false
	}
	cur := l.fns.Load()
	return cur != nil && len(*cur) > 0
}

// Emit calls every registered listener with e.
func (l *Listeners[E]) Emit(e E) {
	if l == nil {
		return
	}
	cur := l.fns.Load()
	if cur == nil {
		return
	}
	for _, entry := range *cur {
		entry.fn(e)
	}
}

// Hub groups the listener sets of every event type. A registry owns one hub and hands it to the
// primitives it creates, so one registration observes every named primitive. A nil *Hub is valid
// and has no listeners.
type Hub struct {
	Transitions Listeners[Transition]
	Rejections  Listeners[Rejection]
	Outcomes    Listeners[CallOutcome]
	Retries     Listeners[Retry]
	Fallbacks   Listeners[Fallback]
}

// Transition is a committed circuit breaker state change.
type Transition struct {
	Name string        // breaker name
	From catalog.State // previous state
	To   catalog.State // new state
	// Cause says why the breaker opened, for trips: To is catalog.StateOpen (failure rate,
	// slow-call rate, consecutive failures, failed probes, half-open limit) or
	// catalog.StateForcedOpen (catalog.TripForced). Not meaningful for other transitions.
	Cause catalog.TripCause
	At    time.Time // when it was committed, by the breaker's clock
	// Reason says why, in a few words ("failure rate 0.62 >= 0.50", "forced", "open duration elapsed").
	Reason string
}

// Trip reports whether the transition opened the breaker (to open or forced open), so that
// Cause is meaningful.
func (t Transition) Trip() bool { return t.To == catalog.StateOpen || t.To == catalog.StateForcedOpen }

// Rejection is a call refused by a primitive without running it: an open breaker or a full
// bulkhead.
type Rejection struct {
	Primitive catalog.Primitive // catalog.CircuitBreaker or catalog.Bulkhead
	Name      string            // primitive name
	// State is the breaker's state at decision time (open, forced_open or half_open); not
	// meaningful for a bulkhead.
	State catalog.State
	At    time.Time // when it was refused
	// Context is the refused call's context when the primitive was handed one (the bulkhead's
	// Acquire and Do); nil for the circuit breaker, whose Acquire takes none. Tracing listeners
	// find the caller's span in it.
	Context context.Context
}

// CallOutcome is the recorded outcome of a call a breaker permitted.
type CallOutcome struct {
	Name     string           // breaker name
	Kind     catalog.CallKind // successful, failed, slow_successful, slow_failed, ignored
	Duration time.Duration    // how long the call took
	Err      error            // the call's error, if any
}

// Retry is one retry decision: after an attempt failed (outcome retrying, gave_up, aborted,
// budget_exhausted) or when a call succeeded after retries (outcome succeeded).
type Retry struct {
	// Context is the logical call's context; it carries the correlation id.
	Context     context.Context
	Name        string        // retry name (the dependency)
	Endpoint    string        // method and route, or host and path; never a query string
	Attempt     int           // the attempt that just finished, 1-based
	MaxAttempts int           // configured bound
	Elapsed     time.Duration // since the logical call began
	Delay       time.Duration // the delay before the next attempt (0 when none follows)
	// DelaySource says what set Delay (backoff or retry_after). It is meaningful only when a
	// delay follows, that is when Outcome is catalog.OutcomeRetrying.
	DelaySource catalog.DelaySource
	// ErrorClass is the failure class of the attempt; catalog.ClassNone on success.
	ErrorClass catalog.Class
	HTTPStatus int             // response status; 0 when there was no response
	Outcome    catalog.Outcome // retrying, succeeded, gave_up, aborted, budget_exhausted
	Err        error           // the attempt's error, if any
	At         time.Time       // when the decision was made
}

// HasDelay reports whether a delay follows the decision (outcome retrying), so that Delay and
// DelaySource are meaningful.
func (r Retry) HasDelay() bool { return r.Outcome == catalog.OutcomeRetrying }

// Fallback is one fallback invocation.
type Fallback struct {
	Name  string        // fallback name
	Cause catalog.Cause // circuit_open, bulkhead_full, timeout, retries_exhausted, error
	Err   error         // the error that caused it
	At    time.Time     // when it ran
	// Context is the call's context (tracing listeners find the caller's span in it).
	Context context.Context
}
