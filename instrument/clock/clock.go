// Package clock is the time source of stormwatch's primitives. Every time-dependent decision
// (open durations, windows, backoff waits, deadlines, bulkhead waits) goes through a [Clock], so
// tests drive time with a [Fake] and never sleep.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now. d ≤ 0 fires at once.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, like *time.Timer.
type Timer interface {
	// C returns the channel the time is delivered on.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped it.
	Stop() bool
}

// AfterFuncer is implemented by clocks that call a function once d has passed without a goroutine
// waiting for it, like time.AfterFunc ([Real] and [Fake] do). The returned timer's C is nil; Stop
// reports whether it kept f from being called. [AfterFunc] falls back to a goroutine and a timer
// for clocks without it.
type AfterFuncer interface {
	AfterFunc(d time.Duration, f func()) Timer
}

// AfterFunc calls f in its own goroutine once d has passed on c, and returns a timer whose Stop
// cancels the call.
func AfterFunc(c Clock, d time.Duration, f func()) Timer {
	if a, ok := c.(AfterFuncer); ok {
		return a.AfterFunc(d, f)
	}
	t := &goTimer{t: c.NewTimer(d), stop: make(chan struct{})}
	go func() {
		select {
		case <-t.t.C():
			f()
		case <-t.stop:
		}
	}()
	return t
}

// goTimer is AfterFunc's timer for clocks that are not AfterFuncers.
type goTimer struct {
	t    Timer
	once sync.Once
	stop chan struct{}
}

func (t *goTimer) C() <-chan time.Time { return nil }

func (t *goTimer) Stop() bool {
	stopped := t.t.Stop()
	t.once.Do(func() { close(t.stop) })
	return stopped
}

// Real is the wall clock. Its zero value is ready to use.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc returns time.AfterFunc(d, f).
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Or returns c, or the wall clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Fake is a manually advanced clock for tests. Its timers fire when [Fake.Advance] moves time to
// or past their deadline. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the set of timers changes
}

// NewFake returns a fake clock reading t.
func NewFake(t time.Time) *Fake {
	return &Fake{now: t, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer firing when the fake time reaches Now()+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		t.fired = true
		return t
	}
	f.timers = append(f.timers, t)
	f.notify()
	return t
}

// AfterFunc calls f in a goroutine of its own when the fake time reaches Now()+d (at once for
// d ≤ 0).
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), fn: fn}
	if d <= 0 {
		t.fired = true
		go fn()
		return t
	}
	f.timers = append(f.timers, t)
	f.notify()
	return t
}

// Advance moves the fake time forward by d and fires every timer that is due, in deadline order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	kept := f.timers[:0]
	for _, t := range f.timers {
		if !t.at.After(f.now) {
			t.fired = true
			if t.fn != nil {
				go t.fn()
			} else {
				t.c <- t.at
			}
			continue
		}
		kept = append(kept, t)
	}
	f.timers = kept
	f.notify()
}

// Set moves the fake time to t (forward only; an earlier t is ignored) and fires due timers.
func (f *Fake) Set(t time.Time) {
	if d := t.Sub(f.Now()); d > 0 {
		f.Advance(d)
	}
}

// Timers returns the number of pending (unfired, unstopped) timers.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitForTimers blocks until at least n timers are pending — that is, until the code under test
// has started waiting — or until done is closed; it reports whether n timers were reached. Tests
// use it instead of sleeping.
func (f *Fake) WaitForTimers(n int, done <-chan struct{}) bool {
	return f.waitTimers(func(pending int) bool { return pending >= n }, done)
}

// WaitForTimersAtMost blocks until at most n timers are pending — that is, until goroutines the
// code under test left behind (a cancelled attempt, say) have stopped theirs — or until done is
// closed; it reports whether the count came down to n.
func (f *Fake) WaitForTimersAtMost(n int, done <-chan struct{}) bool {
	return f.waitTimers(func(pending int) bool { return pending <= n }, done)
}

func (f *Fake) waitTimers(reached func(pending int) bool, done <-chan struct{}) bool {
	for {
		f.mu.Lock()
		if reached(len(f.timers)) {
			f.mu.Unlock()
			return true
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

// notify wakes WaitForTimers callers. Called with mu held.
func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	f     *Fake
	at    time.Time
	c     chan time.Time // nil for AfterFunc timers
	fn    func()         // AfterFunc's function, else nil
	fired bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.fired {
		return false
	}
	for i, x := range t.f.timers {
		if x == t {
			t.f.timers = append(t.f.timers[:i], t.f.timers[i+1:]...)
			t.f.notify()
			return true
		}
	}
	return false
}
