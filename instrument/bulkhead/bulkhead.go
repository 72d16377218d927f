// Package bulkhead limits how many calls to one dependency run at the same time, so that a slow
// dependency consumes only its own quota of goroutines, connections and memory (a semaphore
// bulkhead, seed notes BH-01..BH-10).
//
// A [Bulkhead] hands out at most MaxConcurrent permits. A caller that finds every permit taken
// waits up to MaxWait for one (0, the default, rejects at once); waiters are admitted strictly in
// arrival order (FIFO) and stop waiting when their context ends. A rejected call fails with an
// error for which errors.Is(err, [ErrFull]) holds; it is stormwatch's own rejection, never worth
// retrying and never a sign of the dependency's health.
//
// Three ways to use it:
//
//	err := b.Do(ctx, func(ctx context.Context) error { ... })          // closure
//	v, err := bulkhead.Call(ctx, b, func(ctx context.Context) (T, error) { ... }) // generic
//	release, err := b.Acquire(ctx); if err == nil { defer release(); ... }    // two-step
//
// The uncontended path (a permit is free and nobody waits) is one compare-and-swap to take the
// permit, one atomic add to count it and one compare-and-swap to give it back; it allocates
// nothing. A mutex and a FIFO queue are used only when a caller has to wait.
package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// ErrFull is the sentinel of bulkhead rejections: errors.Is(err, ErrFull) reports whether a call
// was refused because every permit was taken (after waiting up to MaxWait).
var ErrFull = errors.New("bulkhead full")

// DefaultWaitBuckets are the upper bounds, in seconds, of the wait-time histogram when
// Config.WaitBuckets is nil: 1 ms to 10 s. They equal the metric catalog's WaitBuckets (a test in
// package collector checks that); they are repeated here because instrument never imports
// collector.
var DefaultWaitBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Primitive is the primitive name a bulkhead reports in its rejection events.
const Primitive = "bulkhead"

// Config configures a [Bulkhead].
type Config struct {
	// MaxConcurrent is the number of permits: calls allowed to run at the same time. Required, ≥ 1.
	MaxConcurrent int
	// MaxWait is how long a caller waits for a permit when all are taken. 0 (the default) rejects
	// at once; negative values are invalid. The caller's context can end the wait earlier.
	MaxWait time.Duration
	// WaitBuckets are the upper bounds, in seconds, of the wait-time histogram, strictly
	// increasing and positive. nil means [DefaultWaitBuckets].
	WaitBuckets []float64
	// Clock measures waits and runs the MaxWait timer. nil means the wall clock.
	Clock clock.Clock
	// Events receives a Rejection event (Primitive "bulkhead") for every rejected call. nil means
	// no events.
	Events *events.Hub
}

// FullError is the error of a rejected call. It satisfies errors.Is(err, ErrFull), reports
// Rejected() == true (stormwatch's own rejection: classified "rejected", never retried, not a
// breaker failure) and FallbackCause() == "bulkhead_full". A bulkhead returns the same *FullError
// for every rejection; treat it as read-only.
type FullError struct {
	Name          string        // the bulkhead's name
	MaxConcurrent int           // its permits
	MaxWait       time.Duration // how long the caller waited at most
}

// Error describes the rejection.
func (e *FullError) Error() string {
	if e.MaxWait > 0 {
		return fmt.Sprintf("bulkhead %q full: %d calls in flight, no permit within %s", e.Name, e.MaxConcurrent, e.MaxWait)
	}
	return fmt.Sprintf("bulkhead %q full: %d calls in flight", e.Name, e.MaxConcurrent)
}

// Is reports whether target is [ErrFull].
func (e *FullError) Is(target error) bool { return target == ErrFull }

// Rejected reports true: the call was refused by stormwatch itself, without running.
func (e *FullError) Rejected() bool { return true }

// FallbackCause returns "bulkhead_full", the fallback cause of this rejection.
func (e *FullError) FallbackCause() string { return "bulkhead_full" }

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
	release func() // b.releasePermit, bound once so Acquire returns it without allocating

	// Invariant: waiters > 0 implies inflight == max (nobody queues while a permit is free, and a
	// release hands its permit to the first waiter instead of freeing it).
	state     atomic.Uint64
	permitted atomic.Uint64
	rejected  atomic.Uint64

	mu         sync.Mutex // guards the waiter queue and every change of the waiter count
	head, tail *waiter

	bounds  []float64       // histogram upper bounds, seconds
	waited  []atomic.Uint64 // decisions that queued, by bucket (non-cumulative; last = +Inf)
	waitSum atomic.Int64    // nanoseconds waited in total
}

type waiter struct {
	prev, next *waiter
	ready      chan struct{} // closed when the waiter is handed a permit
	granted    bool          // guarded by mu
}

func noop() {}

// New returns a bulkhead called name. It returns an error naming the field and value when cfg is
// invalid.
func New(name string, cfg Config) (*Bulkhead, error) {
	if name == "" {
		return nil, errors.New("bulkhead: name must not be empty")
	}
	if cfg.MaxConcurrent < 1 || cfg.MaxConcurrent > math.MaxInt32 {
		return nil, fmt.Errorf("bulkhead %q: MaxConcurrent = %d: must be between 1 and %d", name, cfg.MaxConcurrent, math.MaxInt32)
	}
	if cfg.MaxWait < 0 {
		return nil, fmt.Errorf("bulkhead %q: MaxWait = %s: must not be negative (0 rejects at once)", name, cfg.MaxWait)
	}
	bounds := DefaultWaitBuckets
	if cfg.WaitBuckets != nil {
		if err := validateBuckets(cfg.WaitBuckets); err != nil {
			return nil, fmt.Errorf("bulkhead %q: WaitBuckets = %v: %w", name, cfg.WaitBuckets, err)
		}
		bounds = cfg.WaitBuckets
	}
	b := &Bulkhead{
		name:    name,
		max:     uint64(cfg.MaxConcurrent),
		maxWait: cfg.MaxWait,
		clock:   clock.Or(cfg.Clock),
		hub:     cfg.Events,
		full:    &FullError{Name: name, MaxConcurrent: cfg.MaxConcurrent, MaxWait: cfg.MaxWait},
		bounds:  append([]float64(nil), bounds...),
		waited:  make([]atomic.Uint64, len(bounds)+1),
	}
	b.release = b.releasePermit
	return b, nil
}

func validateBuckets(bs []float64) error {
	if len(bs) == 0 {
		return errors.New("must hold at least one bound")
	}
	for i, v := range bs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return fmt.Errorf("bound %v: must be positive and finite", v)
		}
		if i > 0 && v <= bs[i-1] {
			return fmt.Errorf("bound %v after %v: must be strictly increasing", v, bs[i-1])
		}
	}
	return nil
}

// Name returns the bulkhead's name.
func (b *Bulkhead) Name() string { return b.name }

// MaxConcurrent returns the number of permits.
func (b *Bulkhead) MaxConcurrent() int { return int(b.max) }

// MaxWait returns how long a caller waits for a permit at most.
func (b *Bulkhead) MaxWait() time.Duration { return b.maxWait }

// Acquire takes a permit, waiting up to MaxWait (and no longer than ctx allows) when all are in
// use. On success it returns the function that gives the permit back: call it exactly once, when
// the guarded work is over (typically with defer). On failure release is a no-op and err is
//
//   - a [*FullError] (errors.Is(err, ErrFull)) when no permit became free in time, or
//   - the context's error, wrapped, when ctx ended while waiting.
//
// Both count as rejected admissions. Acquire does not check ctx when a permit is free at once.
func (b *Bulkhead) Acquire(ctx context.Context) (release func(), err error) {
	for s := b.state.Load(); s < b.max; s = b.state.Load() {
		if b.state.CompareAndSwap(s, s+1) {
			b.permitted.Add(1)
			return b.release, nil
		}
	}
	return b.acquireSlow(ctx)
}

// Do runs fn under a permit and returns its error, or the admission error without running fn.
// The permit is given back when fn returns or panics.
func (b *Bulkhead) Do(ctx context.Context, fn func(context.Context) error) error {
	release, err := b.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return fn(ctx)
}

// Call runs fn under a permit of b and returns its result, or the zero value and the admission
// error without running fn. The permit is given back when fn returns or panics.
func Call[T any](ctx context.Context, b *Bulkhead, fn func(context.Context) (T, error)) (T, error) {
	release, err := b.Acquire(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer release()
	return fn(ctx)
}

func (b *Bulkhead) acquireSlow(ctx context.Context) (func(), error) {
	b.mu.Lock()
	for {
		s := b.state.Load()
		if s < b.max {
			if b.state.CompareAndSwap(s, s+1) {
				b.mu.Unlock()
				b.permitted.Add(1)
				return b.release, nil
			}
			continue
		}
		if b.maxWait == 0 {
			b.mu.Unlock()
			return noop, b.reject(-1)
		}
		if err := ctx.Err(); err != nil {
			b.mu.Unlock()
			return noop, b.abandon(ctx, -1)
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
		return noop, b.abandon(ctx, b.clock.Now().Sub(start))
	}
	b.unlink(w)
	b.state.Add(waiterDec)
	b.mu.Unlock()
	if ctxDone {
		return noop, b.abandon(ctx, b.clock.Now().Sub(start))
	}
	return noop, b.reject(b.clock.Now().Sub(start))
}

func (b *Bulkhead) admitWaiter(start time.Time) func() {
	b.observeWait(b.clock.Now().Sub(start))
	b.permitted.Add(1)
	return b.release
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
func (b *Bulkhead) reject(waited time.Duration) error {
	if waited >= 0 {
		b.observeWait(waited)
	}
	b.rejected.Add(1)
	b.emitRejection()
	return b.full
}

// abandon counts a caller whose context ended before it got a permit as rejected and returns the
// context's error, wrapped.
func (b *Bulkhead) abandon(ctx context.Context, waited time.Duration) error {
	if waited >= 0 {
		b.observeWait(waited)
	}
	b.rejected.Add(1)
	b.emitRejection()
	return fmt.Errorf("bulkhead %q: gave up waiting for a permit: %w", b.name, context.Cause(ctx))
}

func (b *Bulkhead) emitRejection() {
	if b.hub != nil && b.hub.Rejections.Active() {
		b.hub.Rejections.Emit(events.Rejection{Primitive: Primitive, Name: b.name, At: b.clock.Now()})
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

func (b *Bulkhead) observeWait(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := sort.SearchFloat64s(b.bounds, d.Seconds()) // first bound ≥ d
	b.waited[i].Add(1)
	b.waitSum.Add(int64(d))
}

// Stats is a point-in-time reading of a bulkhead's gauges and counters.
type Stats struct {
	MaxConcurrent int    // configured permits
	InFlight      int    // permits in use
	Waiting       int    // callers queued for a permit
	Permitted     uint64 // admissions granted since creation
	Rejected      uint64 // admissions refused (full, or the caller's context ended while waiting)
	Wait          WaitHistogram
}

// WaitHistogram is the distribution of the time admission decisions took: one observation per
// permitted or rejected call, 0 for those decided at once. Its Count therefore tends to
// Permitted + Rejected (both are read separately, so a reading taken during calls may differ by
// the calls in progress).
type WaitHistogram struct {
	Bounds []float64 // upper bounds in seconds
	Counts []uint64  // cumulative counts: observations ≤ Bounds[i]
	Count  uint64    // all observations
	Sum    float64   // seconds waited in total
}

// Stats reads the bulkhead's state now. It never blocks calls.
func (b *Bulkhead) Stats() Stats {
	s := b.state.Load()
	st := Stats{
		MaxConcurrent: int(b.max),
		InFlight:      int(s & inflightMask),
		Waiting:       int(s >> 32),
		Permitted:     b.permitted.Load(),
		Rejected:      b.rejected.Load(),
	}
	raw := make([]uint64, len(b.waited))
	var queued uint64
	for i := range b.waited {
		raw[i] = b.waited[i].Load()
		queued += raw[i]
	}
	// Decisions made without queueing waited 0: they fall into the first bucket.
	if decided := st.Permitted + st.Rejected; decided > queued {
		raw[0] += decided - queued
	}
	h := WaitHistogram{Bounds: append([]float64(nil), b.bounds...), Counts: make([]uint64, len(b.bounds))}
	var cum uint64
	for i := range b.bounds {
		cum += raw[i]
		h.Counts[i] = cum
	}
	h.Count = cum + raw[len(raw)-1]
	h.Sum = time.Duration(b.waitSum.Load()).Seconds()
	st.Wait = h
	return st
}
