package hedge

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// race is one hedged call: the first attempt on the caller's goroutine, hedges on goroutines of
// their own, and the decision of which result the caller gets. The call returns only once every
// hedge it started has ended (and been counted), so no attempt outlives its call. The fields
// below mu are guarded by it.
//
// A call that ends before its delay reuses a race its hedge's scheduler kept, and allocates
// only its first attempt's context (it must stay valid after the call: a result may still read
// through it); it reads the clock once and takes the scheduler's lock twice (to join its queue
// and to leave it): no goroutine, no channel, no timer of its own, no cancelable context, and
// the race's mu is never taken.
type race[T any] struct {
	first   *attemptCtx // the first attempt's context
	entry   entry       // the call in the hedge's scheduler queue
	h       *Hedge
	fn      func(context.Context) (T, error) // nil when errFn is set
	errFn   func(context.Context) error      // Do's function (saves a closure per call)
	discard func(T)                          // receives the values the call does not return; may be nil
	delay   time.Duration
	hedges  sync.WaitGroup // hedges started and not yet counted

	mu       sync.Mutex
	cancels  []context.CancelFunc // one per hedge started
	started  int                  // hedges started
	closed   bool                 // no further hedge may start
	decided  bool                 // an attempt's result was accepted: the others are cancelled
	hedgeWon bool                 // the accepted result is a hedge's: v, err
	v        T
	err      error
}

// startRace takes a race for a call of h — one its scheduler keeps for reuse, when it has one
// of type T, or a new one — fills it in and queues it for a hedge after delay. It returns the
// race and the call's start.
func startRace[T any](h *Hedge, parent context.Context, delay time.Duration,
	fn func(context.Context) (T, error), errFn func(context.Context) error, discard func(T)) (*race[T], time.Duration) {
	first := &attemptCtx{parent: parent}
	now := h.mono()
	s := &h.sched
	s.mu.Lock()
	r, ok := (*race[T])(nil), false
	if e := s.free; e != nil {
		if r, ok = e.r.(*race[T]); ok {
			s.free, e.next = e.next, nil
			s.nfree--
		}
	}
	if !ok { // none kept, or one of another T (a hedge called with several types)
		r = &race[T]{h: h}
		r.entry.r = r
	}
	r.first, r.fn, r.errFn, r.discard, r.delay = first, fn, errFn, discard, delay
	s.link(&r.entry, now, delay)
	s.mu.Unlock()
	return r, now
}

// leave takes the race out of its scheduler's queue once the first attempt returned, and
// reports whether the scheduler ever took it (a hedge was due). When it did not, no hedge
// started or will: the race is kept for another call, cleared of what it held (the scheduler
// must not keep the call's context, function or first attempt alive). A race the scheduler
// took is never reused: a hedge's goroutine may still hold it.
func (r *race[T]) leave() (taken bool) {
	s := &r.h.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.entry.queued {
		s.unlink(&r.entry)
	}
	if r.entry.taken {
		return true
	}
	r.first, r.fn, r.errFn, r.discard = nil, nil, nil, nil
	if s.nfree < maxFree {
		r.entry.next, s.free = s.free, &r.entry
		s.nfree++
	}
	return false
}

// run runs the first attempt, which started at start, and returns the call's result.
func (r *race[T]) run(start time.Duration) (T, error) {
	returned := false
	defer func() {
		if !returned { // the first attempt panicked: end the race, let the panic go on
			r.decide()
			r.hedges.Wait()
		}
	}()
	v, err := r.call(r.first)
	returned = true
	if r.h.delay != nil {
		r.h.observe(start, r.first.wasCancelled())
	}
	return r.firstDone(v, err)
}

// call runs the function of the call once.
func (r *race[T]) call(ctx context.Context) (T, error) {
	if r.errFn != nil {
		var zero T
		return zero, r.errFn(ctx)
	}
	return r.fn(ctx)
}

// decide ends the race on the first attempt's behalf: no further hedge, every hedge cancelled.
func (r *race[T]) decide() {
	r.mu.Lock()
	r.closed, r.decided = true, true
	r.h.sched.remove(&r.entry)
	for _, c := range r.cancels {
		c()
	}
	r.mu.Unlock()
}

// firstDone decides the call once the first attempt has returned, waits for the hedges and
// returns the accepted result: a hedge's, or else the first attempt's.
func (r *race[T]) firstDone(v T, err error) (T, error) {
	if !r.leave() { // no hedge was due: none started, none will
		return v, err
	}
	r.mu.Lock()
	r.closed = true
	r.h.sched.remove(&r.entry) // a hedge that started may have queued the next
	hedged := r.started > 0
	r.mu.Unlock()
	if !hedged {
		return v, err
	}
	if r.h.accept(err) || r.first.parent.Err() != nil { // accepted, or the caller left
		r.decide() // a no-op on the outcome when a hedge had won already
	}
	r.hedges.Wait() // a failed first attempt waits for the hedges: one of them may answer
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hedgeWon {
		r.drop(v)
		return r.v, r.err
	}
	return v, err
}

// drop hands a value the call does not return to the discard function.
func (r *race[T]) drop(v T) {
	if r.discard != nil {
		r.discard(v)
	}
}

// launch starts a hedge when the scheduler finds it due, unless the call is decided or the
// budget refuses, and runs the hedge on the goroutine it was called on.
func (r *race[T]) launch() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if !r.h.budget.SpendToken() {
		r.h.count(catalog.HedgeBudgetDenied)
		r.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(r.first.parent)
	idx := len(r.cancels)
	r.cancels = append(r.cancels, cancel)
	r.started++
	r.hedges.Add(1)
	if r.started < r.h.cfg.MaxHedges {
		r.h.sched.add(&r.entry, r.h.mono(), r.delay)
	}
	r.mu.Unlock()
	defer r.hedges.Done()
	v, err := r.attempt(ctx)
	if !r.hedgeDone(idx, v, err) {
		cancel() // a winning hedge's context stays live for what its result still reads
	}
}

// attempt runs one hedge; a panic becomes the attempt's error (there is no caller to hand it to
// on this goroutine), so the call goes on with its other attempts.
func (r *race[T]) attempt(ctx context.Context) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hedge %q: hedged attempt panicked: %v", r.h.name, p)
		}
	}()
	return r.call(ctx)
}

// hedgeDone counts hedge idx's outcome and reports whether it won; an accepted result decides
// the call and cancels the other attempts.
func (r *race[T]) hedgeDone(idx int, v T, err error) (won bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.decided || r.first.parent.Err() != nil: // another attempt won, or the caller left
		r.h.count(catalog.HedgeCancelled)
		r.drop(v)
	case r.h.accept(err):
		r.h.count(catalog.HedgeWon)
		r.decided, r.closed, r.hedgeWon = true, true, true
		r.v, r.err = v, err
		r.h.sched.remove(&r.entry)
		r.first.cancelAttempt()
		for i, c := range r.cancels {
			if i != idx {
				c()
			}
		}
		return true
	default:
		r.h.count(catalog.HedgeLost)
		r.drop(v)
	}
	return false
}
