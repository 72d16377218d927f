package hedge

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// race is one hedged call: the first attempt on the caller's goroutine, hedges on goroutines of
// their own, and the decision of which result the caller gets. The call returns only once every
// hedge it started has ended (and been counted), so no attempt outlives its call. The fields
// below mu are guarded by it.
type race[T any] struct {
	first   attemptCtx // the first attempt's context
	h       *Hedge
	parent  context.Context
	fn      func(context.Context) (T, error)
	discard func(T) // receives the values the call does not return; may be nil
	delay   time.Duration
	hedges  sync.WaitGroup // hedges started and not yet counted

	mu       sync.Mutex
	timer    clock.Timer          // the next hedge's timer
	cancels  []context.CancelFunc // one per hedge started
	started  int                  // hedges started
	closed   bool                 // no further hedge may start
	decided  bool                 // an attempt's result was accepted: the others are cancelled
	hedgeWon bool                 // the accepted result is a hedge's: v, err
	v        T
	err      error
}

func newRace[T any](ctx context.Context, h *Hedge, fn func(context.Context) (T, error), discard func(T)) *race[T] {
	r := &race[T]{h: h, parent: ctx, fn: fn, discard: discard}
	r.first.init(ctx)
	return r
}

// run runs the first attempt with a hedge scheduled after delay, and returns the call's result.
func (r *race[T]) run(delay time.Duration) (T, error) {
	r.delay = delay
	r.mu.Lock()
	r.timer = clock.AfterFunc(r.h.clk, delay, r.launch)
	r.mu.Unlock()
	start := r.h.clk.Now()
	returned := false
	defer func() {
		if !returned { // the first attempt panicked: end the race, let the panic go on
			r.decide()
			r.hedges.Wait()
		}
	}()
	v, err := r.fn(&r.first)
	returned = true
	r.first.mu.Lock()
	cut := r.first.cancelled
	r.first.mu.Unlock()
	r.h.observe(start, cut)
	return r.firstDone(v, err)
}

// decide ends the race on the first attempt's behalf: no further hedge, every hedge cancelled.
func (r *race[T]) decide() {
	r.mu.Lock()
	r.closed, r.decided = true, true
	r.timer.Stop()
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
	r.timer.Stop()
	hedged := r.started > 0
	final := !hedged || r.h.accept(err) || r.parent.Err() != nil // no race, accepted, or the caller left
	r.mu.Unlock()
	if !hedged {
		return v, err
	}
	if final {
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
		r.timer = clock.AfterFunc(r.h.clk, r.delay, r.launch)
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
	return r.fn(ctx)
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
		r.timer.Stop()
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
