package hedge

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// race is one hedged call: the first attempt on the caller's goroutine, hedges on goroutines of
// their own, and the decision of which result the caller gets. The call returns only once every
// hedge it started has ended (and been counted), so no attempt outlives its call. The fields
// below mu are guarded by it.
//
// A call that ends before its delay costs this one allocation (the first attempt's context is
// part of it, and must stay valid after the call: a result may still read through it) and, on
// the wall clock, a pooled timer: no goroutine, no channel, no cancelable context.
type race[T any] struct {
	first   attemptCtx // the first attempt's context
	h       *Hedge
	parent  context.Context
	fn      func(context.Context) (T, error) // nil when errFn is set
	errFn   func(context.Context) error      // Do's function (saves a closure per call)
	discard func(T)                          // receives the values the call does not return; may be nil
	delay   time.Duration
	self    launcher       // the race as what a pooled timer launches
	hedges  sync.WaitGroup // hedges started and not yet counted

	mu       sync.Mutex
	pooled   *hedgeTimer          // the armed pooled timer of the first hedge, or nil
	timer    clock.Timer          // else the next hedge's timer
	cancels  []context.CancelFunc // one per hedge started
	started  int                  // hedges started
	closed   bool                 // no further hedge may start
	decided  bool                 // an attempt's result was accepted: the others are cancelled
	hedgeWon bool                 // the accepted result is a hedge's: v, err
	v        T
	err      error
}

// launcher is what a timer starts a hedge of.
type launcher struct{ r interface{ launch() } }

type atomicLauncher = atomic.Pointer[launcher]

// hedgeTimer is a reusable wall-clock timer: a call arms it for its first hedge and gives it
// back when it stops it before it fired (a fired one is left to the collector: its function
// may still be running).
type hedgeTimer struct {
	t      *time.Timer
	target atomicLauncher
}

var timerPool = sync.Pool{New: func() any {
	ht := &hedgeTimer{}
	ht.t = time.AfterFunc(time.Hour, ht.fire)
	ht.t.Stop()
	return ht
}}

func (ht *hedgeTimer) fire() {
	if l := ht.target.Load(); l != nil {
		l.r.launch()
	}
}

// run runs the first attempt with a hedge scheduled after delay, and returns the call's result.
func (r *race[T]) run(delay time.Duration) (T, error) {
	r.delay = delay
	r.first.init(r.parent)
	r.mu.Lock()
	r.arm()
	r.mu.Unlock()
	start := r.h.now()
	returned := false
	defer func() {
		if !returned { // the first attempt panicked: end the race, let the panic go on
			r.decide()
			r.hedges.Wait()
		}
	}()
	v, err := r.call(&r.first)
	returned = true
	r.h.observe(start, r.first.wasCancelled())
	return r.firstDone(v, err)
}

// arm schedules the next hedge: on the wall clock with a pooled timer for the first one.
func (r *race[T]) arm() {
	if r.started == 0 && r.h.realClock {
		ht := timerPool.Get().(*hedgeTimer)
		r.self.r = r
		ht.target.Store(&r.self)
		r.pooled = ht
		ht.t.Reset(r.delay)
		return
	}
	r.timer = clock.AfterFunc(r.h.clk, r.delay, r.launch)
}

// stopTimer keeps the armed timer from starting a hedge. Called with mu held.
func (r *race[T]) stopTimer() {
	if ht := r.pooled; ht != nil {
		r.pooled = nil
		if ht.t.Stop() {
			ht.target.Store(nil)
			timerPool.Put(ht)
		}
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
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
	r.stopTimer()
	for _, c := range r.cancels {
		c()
	}
	r.mu.Unlock()
}

// firstDone decides the call once the first attempt has returned, waits for the hedges and
// returns the accepted result: a hedge's, or else the first attempt's.
func (r *race[T]) firstDone(v T, err error) (T, error) {
	r.mu.Lock()
	r.closed = true
	r.stopTimer()
	hedged := r.started > 0
	r.mu.Unlock()
	if !hedged {
		return v, err
	}
	if r.h.accept(err) || r.parent.Err() != nil { // accepted, or the caller left
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

// launch starts a hedge when the timer fires, unless the call is decided or the budget refuses.
// It runs on the timer's goroutine and runs the hedge there.
func (r *race[T]) launch() {
	r.mu.Lock()
	r.pooled = nil // it fired: it is not reused
	if r.closed {
		r.mu.Unlock()
		return
	}
	if !r.h.budget.SpendToken() {
		r.h.count(catalog.HedgeBudgetDenied)
		r.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(r.parent)
	idx := len(r.cancels)
	r.cancels = append(r.cancels, cancel)
	r.started++
	r.hedges.Add(1)
	if r.started < r.h.cfg.MaxHedges {
		r.arm()
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
	case r.decided || r.parent.Err() != nil: // another attempt won, or the caller left
		r.h.count(catalog.HedgeCancelled)
		r.drop(v)
	case r.h.accept(err):
		r.h.count(catalog.HedgeWon)
		r.decided, r.closed, r.hedgeWon = true, true, true
		r.v, r.err = v, err
		r.stopTimer()
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
