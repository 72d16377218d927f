// Package bulkhead limits how many calls to one dependency run at the same time, so that a slow
// dependency consumes only its own quota of goroutines, connections and memory (a semaphore
// bulkhead).
//
// A [Bulkhead] hands out at most MaxConcurrent permits. A caller that finds every permit taken
// waits up to MaxWait for one (0, the default, rejects at once); waiters are admitted strictly in
// arrival order (FIFO) and stop waiting when their context ends. A rejected call fails with an
// error for which errors.Is(err, [ErrFull]) holds; it is stormwatch's own rejection, never worth
// retrying and never a sign of the dependency's health.
//
// Every Acquire is counted once, by its admission (catalog.Admission): permitted; rejected — no
// permit within MaxWait, or before the caller's deadline passed (the call was refused without
// running either way, and the error is a [*FullError]); or aborted — the caller cancelled its
// context while waiting, which is never a rejection nor a failure (the caller left; the bulkhead
// refused nothing) and emits no Rejection event.
//
// Three ways to use it:
//
//	err := b.Do(ctx, func(ctx context.Context) error { ... })          // closure
//	v, err := bulkhead.Call(ctx, b, func(ctx context.Context) (T, error) { ... }) // generic
//	p, err := b.Acquire(ctx); if err == nil { defer p.Done(); ... }    // two-step (middleware)
//
// The uncontended path (a permit is free and nobody waits) is one compare-and-swap to take the
// permit, one atomic add to count it and one compare-and-swap to give it back; it allocates
// nothing. A mutex and a FIFO queue are used only when a caller has to wait.
//
// [Bulkhead.Snapshot] reads the gauges, the admission counts (indexed by catalog.Admission) and
// the wait-time distribution (a histogram.Snapshot) without blocking calls.
package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

// ErrFull is the sentinel of bulkhead rejections: errors.Is(err, ErrFull) reports whether a call
// was refused because every permit was taken (after waiting up to MaxWait).
var ErrFull = errors.New("bulkhead full")

// DefaultMaxConcurrent is the number of permits of a zero Config.MaxConcurrent (resilience4j's
// default too).
const DefaultMaxConcurrent = 25

// Config configures a [Bulkhead]. The zero Config is a working default: 25 permits, rejection at
// once when they are all taken, the wall clock, no events. Negative or impossible values make
// [New] return a [*catalog.ConfigError] naming the field and its value.
type Config struct {
	// MaxConcurrent is the number of permits: calls allowed to run at the same time (default 25;
	// at most math.MaxInt32).
	MaxConcurrent int
	// MaxWait is how long a caller waits for a permit when all are taken. 0 (the default) rejects
	// at once; negative values are invalid. The caller's context can end the wait earlier.
	MaxWait time.Duration
	// Clock measures waits and runs the MaxWait timer. nil means the wall clock.
	Clock clock.Clock
	// Events receives a Rejection event (Primitive catalog.Bulkhead) for every rejected call. nil
	// means no events.
	Events *events.Hub
}

// FullError is the error of a rejected call. It satisfies errors.Is(err, ErrFull), reports
// Rejected() == true (stormwatch's own rejection: classified rejected, never retried, not a
// breaker failure) and the fallback cause bulkhead_full. When the caller's deadline ended the
// wait, Err is the context's error (errors.Is(err, context.DeadlineExceeded) holds too); a
// bulkhead otherwise returns the same *FullError for every rejection. Treat it as read-only.
type FullError struct {
	Name          string        // the bulkhead's name
	MaxConcurrent int           // its permits
	MaxWait       time.Duration // how long the caller waited at most
	Err           error         // the caller's context error when its deadline ended the wait; else nil
}

// Error describes the rejection.
func (e *FullError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("bulkhead %q full: %d calls in flight, no permit before the caller's deadline: %v", e.Name, e.MaxConcurrent, e.Err)
	}
	if e.MaxWait > 0 {
		return fmt.Sprintf("bulkhead %q full: %d calls in flight, no permit within %s", e.Name, e.MaxConcurrent, e.MaxWait)
	}
	return fmt.Sprintf("bulkhead %q full: %d calls in flight", e.Name, e.MaxConcurrent)
}

// Is reports whether target is [ErrFull].
func (e *FullError) Is(target error) bool { return target == ErrFull }

// Unwrap returns the caller's context error when its deadline ended the wait, else nil.
func (e *FullError) Unwrap() error { return e.Err }

// Rejected reports true: the call was refused by stormwatch itself, without running.
func (e *FullError) Rejected() bool { return true }

// FallbackCause returns catalog.CauseBulkheadFull, the fallback cause of this rejection.
func (e *FullError) FallbackCause() (catalog.Cause, bool) { return catalog.CauseBulkheadFull, true }

// state packs the permits in use (low 32 bits) and the number of queued waiters (high 32 bits)
// into one word, so that the uncontended path is a single compare-and-swap: a value below
// MaxConcurrent means "nobody waits and a permit is free".
const (
	waiterOne    = uint64(1) << 32
	waiterDec    = ^(waiterOne - 1) // adding it subtracts one waiter
	inflightMask = waiterOne - 1
)

// Bulkhead is a named concurrency limiter. Create it with [New]; it is safe for concurrent use.
type Bulkhead struct {
	name    string
	max     uint64
	maxWait time.Duration
	clock   clock.Clock
	hub     *events.Hub
	full    *FullError

	// Invariant: waiters > 0 implies inflight == max (nobody queues while a permit is free, and a
	// release hands its permit to the first waiter instead of freeing it).
	state atomic.Uint64
	calls [catalog.NumAdmissions]atomic.Uint64

	mu         sync.Mutex // guards the waiter queue and every change of the waiter count
	head, tail *waiter

	// waited holds the waits of the decisions that queued; the decisions made at once are added
	// as zero waits when it is read (see Snapshot), so that the fast path does not observe.
	waited histogram.Histogram
}

type waiter struct {
	prev, next *waiter
	ready      chan struct{} // closed when the waiter is handed a permit
	granted    bool          // guarded by mu
}

// Permit is a permit taken with [Bulkhead.Acquire]. Give it back exactly once with Done, when
// the guarded work is over (typically with defer). The zero Permit is inert.
type Permit struct{ b *Bulkhead }

// Done gives the permit back: to the first waiter if anyone waits, otherwise to the pool.
func (p Permit) Done() {
	if p.b != nil {
		p.b.releasePermit()
	}
}

// New returns a bulkhead called name, configured by cfg (the zero Config is a working default).
// An invalid field is a [*catalog.ConfigError] naming it and its value.
func New(name string, cfg Config) (*Bulkhead, error) {
	bad := func(field string, value any, reason string) error {
		return &catalog.ConfigError{Primitive: string(catalog.Bulkhead), Name: name, Field: field, Value: value, Reason: reason}
	}
	if name == "" {
		return nil, bad("name", "", "must not be empty")
	}
	if cfg.MaxConcurrent < 0 || cfg.MaxConcurrent > math.MaxInt32 {
		return nil, bad("MaxConcurrent", cfg.MaxConcurrent, fmt.Sprintf("must be between 1 and %d (0 means the default, %d)", math.MaxInt32, DefaultMaxConcurrent))
	}
	if cfg.MaxWait < 0 {
		return nil, bad("MaxWait", cfg.MaxWait, "must not be negative (0 rejects at once)")
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	b := &Bulkhead{
		name:    name,
		max:     uint64(cfg.MaxConcurrent),
		maxWait: cfg.MaxWait,
		clock:   clock.Or(cfg.Clock),
		hub:     cfg.Events,
		full:    &FullError{Name: name, MaxConcurrent: cfg.MaxConcurrent, MaxWait: cfg.MaxWait},
	}
	return b, nil
}

// Name returns the bulkhead's name.
func (b *Bulkhead) Name() string { return b.name }

// Config returns the bulkhead's configuration with defaults applied.
func (b *Bulkhead) Config() Config {
	return Config{MaxConcurrent: int(b.max), MaxWait: b.maxWait, Clock: b.clock, Events: b.hub}
}

// Acquire is the two-step form of [Bulkhead.Do], for middleware where a closure cannot fit: it
// takes a permit, waiting up to MaxWait (and no longer than ctx allows) when all are in use. On
// success give the permit back with [Permit.Done], exactly once, when the guarded work is over
// (typically with defer). On failure the Permit is the inert zero Permit and err is
//
//   - a [*FullError] (errors.Is(err, ErrFull)) when no permit became free in time (rejected) —
//     within MaxWait, or before ctx's deadline (then errors.Is(err, context.DeadlineExceeded)
//     holds too): the call was refused without running, whichever limit came first; or
//   - the context's error, wrapped, when ctx was cancelled while waiting (aborted).
//
// Acquire does not check ctx when a permit is free at once.
func (b *Bulkhead) Acquire(ctx context.Context) (Permit, error) {
	for s := b.state.Load(); s < b.max; s = b.state.Load() {
		if b.state.CompareAndSwap(s, s+1) {
			b.calls[catalog.AdmissionPermitted].Add(1)
			return Permit{b}, nil
		}
	}
	return b.acquireSlow(ctx)
}

// Do runs fn under a permit and returns its error, or the admission error without running fn.
// The permit is given back when fn returns or panics.
func (b *Bulkhead) Do(ctx context.Context, fn func(context.Context) error) error {
	p, err := b.Acquire(ctx)
	if err != nil {
		return err
	}
	defer p.Done()
	return fn(ctx)
}

// Call runs fn under a permit of b and returns its result, or the zero value and the admission
// error without running fn. The permit is given back when fn returns or panics.
func Call[T any](ctx context.Context, b *Bulkhead, fn func(context.Context) (T, error)) (T, error) {
	p, err := b.Acquire(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer p.Done()
	return fn(ctx)
}

func (b *Bulkhead) acquireSlow(ctx context.Context) (Permit, error) {
	b.mu.Lock()
	for {
		s := b.state.Load()
		if s < b.max {
			if b.state.CompareAndSwap(s, s+1) {
				b.mu.Unlock()
				b.calls[catalog.AdmissionPermitted].Add(1)
				return Permit{b}, nil
			}
			continue
		}
		if b.maxWait == 0 {
			b.mu.Unlock()
			return Permit{}, b.reject(ctx, -1)
		}
		if err := ctx.Err(); err != nil {
			b.mu.Unlock()
			return Permit{}, b.abandon(ctx, -1)
		}
		if b.state.CompareAndSwap(s, s+waiterOne) {
			break
		}
	}
	w := &waiter{ready: make(chan struct{})}
	if b.tail == nil {
		b.head, b.tail = w, w
	} else {
		w.prev, b.tail.next, b.tail = b.tail, w, w
	}
	b.mu.Unlock()

	start := b.clock.Now()
	timer := b.clock.NewTimer(b.maxWait)
	var ctxDone bool
	select {
	case <-w.ready:
		timer.Stop()
		return b.admitWaiter(start), nil
	case <-timer.C():
	case <-ctx.Done():
		timer.Stop()
		ctxDone = true
	}

	b.mu.Lock()
	if w.granted { // a release handed us a permit while the timer or ctx fired
		b.mu.Unlock()
		if !ctxDone {
			return b.admitWaiter(start), nil
		}
		b.releasePermit()
		return Permit{}, b.abandon(ctx, b.clock.Now().Sub(start))
	}
	b.unlink(w)
	b.state.Add(waiterDec)
	b.mu.Unlock()
	if ctxDone {
		return Permit{}, b.abandon(ctx, b.clock.Now().Sub(start))
	}
	return Permit{}, b.reject(ctx, b.clock.Now().Sub(start))
}

func (b *Bulkhead) admitWaiter(start time.Time) Permit {
	b.waited.Observe(b.clock.Now().Sub(start))
	b.calls[catalog.AdmissionPermitted].Add(1)
	return Permit{b}
}

// unlink removes w from the queue. Called with mu held.
func (b *Bulkhead) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		b.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		b.tail = w.prev
	}
	w.prev, w.next = nil, nil
}

// reject counts a rejection and returns the FullError. waited < 0 means the caller never queued.
func (b *Bulkhead) reject(ctx context.Context, waited time.Duration) error {
	if waited >= 0 {
		b.waited.Observe(waited)
	}
	b.calls[catalog.AdmissionRejected].Add(1)
	b.emitRejection(ctx)
	return b.full
}

// abandon counts a caller whose context ended before it got a permit. A cancellation is aborted
// and returns the context's error, wrapped; a deadline is a rejection like MaxWait's (the call
// was refused without running) and returns a *FullError wrapping the context's error.
func (b *Bulkhead) abandon(ctx context.Context, waited time.Duration) error {
	if waited >= 0 {
		b.waited.Observe(waited)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		b.calls[catalog.AdmissionAborted].Add(1)
		return fmt.Errorf("bulkhead %q: gave up waiting for a permit: %w", b.name, context.Cause(ctx))
	}
	b.calls[catalog.AdmissionRejected].Add(1)
	b.emitRejection(ctx)
	full := *b.full
	full.Err = context.Cause(ctx)
	return &full
}

func (b *Bulkhead) emitRejection(ctx context.Context) {
	if b.hub != nil && b.hub.Rejections.Active() {
		b.hub.Rejections.Emit(events.Rejection{Primitive: catalog.Bulkhead, Name: b.name, At: b.clock.Now(), Context: ctx})
	}
}

// releasePermit gives a permit back: to the first waiter if anyone waits, otherwise to the pool.
func (b *Bulkhead) releasePermit() {
	for {
		s := b.state.Load()
		if s>>32 != 0 {
			b.mu.Lock()
			if w := b.head; w != nil {
				b.unlink(w)
				b.state.Add(waiterDec) // the permit moves to w: in-flight is unchanged
				w.granted = true
				close(w.ready)
				b.mu.Unlock()
				return
			}
			b.mu.Unlock() // the waiters left meanwhile
			continue
		}
		if s&inflightMask == 0 {
			panic(fmt.Sprintf("bulkhead %q: release called more often than a permit was acquired", b.name))
		}
		if b.state.CompareAndSwap(s, s-1) {
			return
		}
	}
}

// Snapshot is a point-in-time reading of a bulkhead's gauges and counters. Taking one allocates
// nothing and never blocks calls.
type Snapshot struct {
	MaxConcurrent int // configured permits
	InFlight      int // permits in use
	Waiting       int // callers queued for a permit
	// Calls counts admissions since creation, indexed by catalog.Admission: permitted, rejected
	// (full, or the caller's deadline passed while waiting) and aborted (the caller cancelled
	// while waiting).
	Calls [catalog.NumAdmissions]uint64
	// Wait is the distribution of the time admissions took: one observation per call, 0 (the
	// zero bucket) for those decided at once. Its Count
	// therefore tends to the sum of Calls (both are read separately, so a reading taken during
	// calls may differ by the calls in progress).
	Wait histogram.Snapshot
}

// Snapshot reads the bulkhead's state now.
func (b *Bulkhead) Snapshot() Snapshot {
	s := b.state.Load()
	sn := Snapshot{
		MaxConcurrent: int(b.max),
		InFlight:      int(s & inflightMask),
		Waiting:       int(s >> 32),
	}
	for i := range b.calls {
		sn.Calls[i] = b.calls[i].Load()
	}
	sn.Wait = b.waited.Snapshot()
	// Decisions made without queueing waited 0: they count in the zero bucket.
	var decided uint64
	for _, n := range sn.Calls {
		decided += n
	}
	if decided > sn.Wait.Count {
		sn.Wait.ZeroCount += decided - sn.Wait.Count
		sn.Wait.Count = decided
	}
	return sn
}
