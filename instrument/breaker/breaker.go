// Package breaker is stormwatch's circuit breaker: closed / open / half-open with forced-open,
// disabled and metrics-only (shadow) modes; consecutive, count-based and time-based windows;
// failure-rate and slow-call-rate thresholds; half-open probe permits that are returned on
// panic or cancellation; jittered (and optionally growing) open durations; a classification
// hook; and an injected clock and random source.
//
// Every count a Prometheus exporter needs lives in atomics that [Breaker.Snapshot] reads without
// changing anything; states, call kinds and trip causes are the catalog's values
// (catalog.State, catalog.CallKind, catalog.TripCause), and call durations are recorded in a
// histogram.Histogram. A call through a closed breaker costs a few
// atomic operations and allocates nothing; with a count-based or consecutive window, slow-call
// detection off and the duration histogram off, it does not read the clock either.
//
// Three ways to call through a breaker:
//
//	err := b.Do(ctx, func(ctx context.Context) error { ... })          // closure
//	v, err := breaker.Call(ctx, b, func(ctx context.Context) (T, error) { ... }) // generic
//	done, err := b.Allow(); if err == nil { err = work(); done(err) }  // two-step
//
// Rejections return an error matching errors.Is(err, [ErrOpen]); errors.As with [*OpenError]
// gives the breaker's name, state and remaining open time.
package breaker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

// Breaker is a circuit breaker. Create it with [New] (or a registry); it is safe for concurrent
// use.
type Breaker struct {
	name string
	clk  clock.Clock
	real bool      // clk is the wall clock: read monotonic time with time.Since
	base time.Time // origin of the breaker's monotonic nanoseconds

	cur atomic.Pointer[epoch]
	set atomic.Pointer[settings]
	mu  sync.Mutex // serialises transitions and Reconfigure

	_            pad
	calls        [catalog.NumCallKinds]atomic.Uint64
	_            pad
	notPermitted atomic.Uint64
	_            pad
	transitions  [catalog.NumStates][catalog.NumStates]atomic.Uint64
	trips        [catalog.NumTripCauses]atomic.Uint64
	hist         [len(catalog.DurationKinds)]histogram.Histogram // by catalog.CallSuccessful, catalog.CallFailed
}

// epoch is one stay in one state. A transition installs a new epoch; permits remember the epoch
// that admitted them, so results from an earlier epoch are counted but decide nothing (CB-20).
type epoch struct {
	state   catalog.State
	since   int64 // entered at (breaker monotonic ns)
	until   int64 // open: end of the open period
	period  int64 // open: drawn length of the open period
	tripped int64 // start of the not-closed episode; -1 when none (closed, disabled, metrics_only)
	reTrips int   // consecutive half_open→open re-trips in this episode (open-duration growth)
	win     window

	cause catalog.TripCause // the trip that began the episode (when tripped >= 0)

	probes              atomic.Int32 // half-open permits taken
	hoOK, hoFail, hoSlw atomic.Int32 // half-open probe results

	done func(error) // cached done func for untimed closed/metrics_only/disabled permits
}

// New returns a closed breaker called name, configured by cfg (see [Config] for the defaults).
// An invalid field yields a [*ConfigError] naming it and its value.
func New(name string, cfg Config) (*Breaker, error) {
	s, err := newSettings(name, cfg)
	if err != nil {
		return nil, err
	}
	b := &Breaker{name: name, clk: clock.Or(cfg.Clock)}
	if _, ok := b.clk.(clock.Real); ok {
		b.real = true
		b.base = time.Now()
	} else {
		b.base = b.clk.Now()
	}
	b.set.Store(s)
	b.cur.Store(b.newEpoch(catalog.StateClosed, 0, s))
	return b, nil
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// now returns the breaker's monotonic time: nanoseconds since its creation.
func (b *Breaker) now() int64 {
	if b.real {
		return int64(time.Since(b.base))
	}
	return int64(b.clk.Now().Sub(b.base))
}

// wall converts breaker monotonic time to a time.Time.
func (b *Breaker) wall(t int64) time.Time { return b.base.Add(time.Duration(t)) }

func (b *Breaker) newEpoch(st catalog.State, now int64, s *settings) *epoch {
	e := &epoch{state: st, since: now, tripped: -1}
	switch st {
	case catalog.StateClosed, catalog.StateMetricsOnly:
		e.win = s.newWindow()
		e.done = func(err error) { b.finish(e, false, err, 0, false) }
	case catalog.StateDisabled:
		e.done = func(error) {}
	}
	return e
}

// Permit is a call admitted by [Breaker.Acquire]. Report its outcome exactly once, with Done or
// DoneDuration. The zero Permit is inert.
type Permit struct {
	b     *Breaker
	e     *epoch
	start int64
	timed bool
	probe bool
}

// Acquire asks the breaker to admit one call. On success the caller runs the call and reports
// its outcome with [Permit.Done] (or [Permit.DoneDuration]) — exactly once, also when the call
// panics or is cancelled (report the ctx error: it is ignored and a half-open permit is
// returned). On refusal the error matches [ErrOpen]. Acquire and Permit never allocate on the
// closed path.
func (b *Breaker) Acquire() (Permit, error) {
	s := b.set.Load()
	for {
		e := b.cur.Load()
		switch e.state {
		case catalog.StateClosed, catalog.StateMetricsOnly:
			p := Permit{b: b, e: e}
			if s.timed || s.outcomes.Active() {
				p.timed, p.start = true, b.now()
			}
			return p, nil
		case catalog.StateDisabled:
			return Permit{b: b, e: e}, nil
		case catalog.StateForcedOpen:
			return Permit{}, b.reject(e, -1, s)
		case catalog.StateOpen:
			now := b.now()
			if now < e.until {
				return Permit{}, b.reject(e, now, s)
			}
			b.commit(e, catalog.StateHalfOpen, now, "open duration elapsed", noTrip)
		case catalog.StateHalfOpen:
			if s.halfOpenMax > 0 {
				if now := b.now(); now-e.since >= s.halfOpenMax {
					b.commit(e, catalog.StateOpen, now, "half-open max duration elapsed", catalog.TripMaxHalfOpenDuration)
					continue
				}
			}
			if e.probes.Add(1) > s.halfOpen {
				e.probes.Add(-1)
				return Permit{}, b.reject(e, -1, s)
			}
			p := Permit{b: b, e: e, probe: true}
			if s.timed || s.outcomes.Active() {
				p.timed, p.start = true, b.now()
			}
			return p, nil
		}
	}
}

// Done reports the outcome of the permitted call: a nil error is a success; other errors go
// through the breaker's classifier. When the breaker measures durations (slow-call detection,
// the duration histogram or an outcome listener), the duration runs from Acquire to Done.
func (p Permit) Done(err error) {
	if p.b == nil || p.e.state == catalog.StateDisabled {
		return
	}
	if p.timed {
		now := p.b.now()
		p.b.finishAt(p.e, p.probe, err, now-p.start, true, now)
		return
	}
	p.b.finish(p.e, p.probe, err, 0, false)
}

// DoneDuration reports the outcome of the permitted call with a duration the caller measured.
// The duration decides whether the call was slow and goes into the histogram.
func (p Permit) DoneDuration(err error, d time.Duration) {
	if p.b == nil || p.e.state == catalog.StateDisabled {
		return
	}
	p.b.finish(p.e, p.probe, err, int64(d), true)
}

// abandon records a permitted call that ended without an outcome (a panic or runtime.Goexit):
// it is counted as ignored and a half-open permit is returned.
func (p Permit) abandon() {
	if p.b == nil || p.e.state == catalog.StateDisabled {
		return
	}
	p.b.calls[catalog.CallIgnored].Add(1)
	if p.probe {
		p.e.probes.Add(-1)
	}
	s := p.b.set.Load()
	if s.outcomes.Active() {
		var d time.Duration
		if p.timed {
			d = time.Duration(p.b.now() - p.start)
		}
		s.outcomes.Emit(events.CallOutcome{Name: p.b.name, Kind: catalog.CallIgnored, Duration: d})
	}
}

// Allow is the two-step form of [Breaker.Do]: it admits one call (or returns an error matching
// [ErrOpen]) and returns done, which the caller must call exactly once with the call's error.
// Allow allocates nothing on the closed path unless the breaker measures durations; use
// [Breaker.Acquire] for the allocation-free form in every case, and [Permit.DoneDuration] to
// report a duration measured by the caller.
func (b *Breaker) Allow() (done func(err error), err error) {
	p, err := b.Acquire()
	if err != nil {
		return nil, err
	}
	if !p.timed && !p.probe && p.e.done != nil {
		return p.e.done, nil
	}
	return p.Done, nil
}

// Do runs fn through the breaker: it returns an error matching [ErrOpen] without calling fn
// when the breaker refuses the call, and otherwise fn's error, unchanged. A panic in fn is
// counted as ignored, returns a half-open permit and propagates.
func (b *Breaker) Do(ctx context.Context, fn func(context.Context) error) error {
	if e := b.cur.Load(); e.state == catalog.StateClosed {
		if s := b.set.Load(); !s.outcomes.Active() {
			if s.timed {
				return b.doClosedTimed(ctx, e, fn)
			}
			return b.doClosed(ctx, e, fn)
		}
	}
	p, err := b.Acquire()
	if err != nil {
		return err
	}
	completed := false
	defer func() {
		if !completed {
			p.abandon()
		}
	}()
	err = fn(ctx)
	completed = true
	p.Done(err)
	return err
}

// doClosed is Do's path for a closed breaker that measures no durations: what Acquire and
// Permit.Done would do, without building a Permit.
func (b *Breaker) doClosed(ctx context.Context, e *epoch, fn func(context.Context) error) error {
	completed := false
	defer func() {
		if !completed {
			Permit{b: b, e: e}.abandon()
		}
	}()
	err := fn(ctx)
	completed = true
	b.finish(e, false, err, 0, false)
	return err
}

// doClosedTimed is doClosed for a breaker that measures durations.
func (b *Breaker) doClosedTimed(ctx context.Context, e *epoch, fn func(context.Context) error) error {
	start := b.now()
	completed := false
	defer func() {
		if !completed {
			Permit{b: b, e: e, timed: true, start: start}.abandon()
		}
	}()
	err := fn(ctx)
	completed = true
	end := b.now()
	b.finishAt(e, false, err, end-start, true, end)
	return err
}

// Call runs fn through b and returns its value: like [Breaker.Do] for functions with a result.
// A slow success still returns its value; it only counts as slow for the breaker.
func Call[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (T, error) {
	if e := b.cur.Load(); e.state == catalog.StateClosed {
		if s := b.set.Load(); !s.outcomes.Active() {
			// The closed path of Do, without building a Permit.
			p := Permit{b: b, e: e, timed: s.timed}
			if p.timed {
				p.start = b.now()
			}
			completed := false
			defer func() {
				if !completed {
					p.abandon()
				}
			}()
			v, err := fn(ctx)
			completed = true
			if p.timed {
				end := b.now()
				b.finishAt(e, false, err, end-p.start, true, end)
			} else {
				b.finish(e, false, err, 0, false)
			}
			return v, err
		}
	}
	p, err := b.Acquire()
	if err != nil {
		var zero T
		return zero, err
	}
	completed := false
	defer func() {
		if !completed {
			p.abandon()
		}
	}()
	v, err := fn(ctx)
	completed = true
	p.Done(err)
	return v, err
}

// finish records an outcome, reading the clock only when the window needs it.
func (b *Breaker) finish(e *epoch, probe bool, err error, d int64, haveD bool) {
	now := int64(-1)
	if !probe && e.win.needsTime() {
		now = b.now()
	}
	b.finishAt(e, probe, err, d, haveD, now)
}

// finishAt records an outcome; now < 0 means not read.
func (b *Breaker) finishAt(e *epoch, probe bool, err error, d int64, haveD bool, now int64) {
	s := b.set.Load()
	o := OutcomeSuccess
	if err != nil {
		o = s.classify(err)
	}
	if o == OutcomeIgnored {
		b.calls[catalog.CallIgnored].Add(1)
		if probe {
			e.probes.Add(-1)
		}
		if s.outcomes.Active() {
			b.emitOutcome(s, catalog.CallIgnored, d, err)
		}
		return
	}
	fail := o == OutcomeFailure
	slow := haveD && s.slowNs > 0 && d > s.slowNs
	kind := catalog.CallSuccessful
	if fail {
		kind = catalog.CallFailed
	}
	if slow {
		kind += catalog.CallSlowSuccessful
	}
	b.calls[kind].Add(1)
	if haveD && s.hist {
		if fail {
			b.hist[catalog.CallFailed].Observe(time.Duration(d))
		} else {
			b.hist[catalog.CallSuccessful].Observe(time.Duration(d))
		}
	}
	if probe {
		b.recordProbe(e, fail, slow, s)
	} else if e.win.record(fail, slow, now, s) && e.state == catalog.StateClosed {
		b.tripFromClosed(e)
	}
	if s.outcomes.Active() {
		b.emitOutcome(s, kind, d, err)
	}
}

func (b *Breaker) emitOutcome(s *settings, k catalog.CallKind, d int64, err error) {
	s.outcomes.Emit(events.CallOutcome{Name: b.name, Kind: k, Duration: time.Duration(d), Err: err})
}

// tripFromClosed opens the breaker if e is still current and its window still trips.
func (b *Breaker) tripFromClosed(e *epoch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur.Load() != e {
		return
	}
	s := b.set.Load()
	now := b.now()
	calls, fails, slow := e.win.counts(now)
	var reason string
	var cause catalog.TripCause
	if s.window == ConsecutiveFailures {
		switch {
		case fails >= int64(s.size):
			reason, cause = fmt.Sprintf("%d consecutive failures", fails), catalog.TripConsecutiveFailures
		case s.slowNs > 0 && slow >= int64(s.size):
			reason, cause = fmt.Sprintf("%d consecutive slow calls", slow), catalog.TripSlowCallRate
		default:
			return
		}
	} else {
		if !tripCondition(calls, fails, slow, s) {
			return
		}
		fr, sr := float64(fails)/float64(calls), float64(slow)/float64(calls)
		if fr >= s.failThr {
			reason, cause = fmt.Sprintf("failure rate %.2f >= %.2f over %d calls", fr, s.failThr, calls), catalog.TripFailureRate
		} else {
			reason, cause = fmt.Sprintf("slow-call rate %.2f >= %.2f over %d calls", sr, s.slowThr, calls), catalog.TripSlowCallRate
		}
	}
	b.transitionLocked(e, catalog.StateOpen, now, reason, cause)
}

// recordProbe counts a half-open probe's result and decides when the probes have.
func (b *Breaker) recordProbe(e *epoch, fail, slow bool, s *settings) {
	if fail {
		e.hoFail.Add(1)
	} else {
		e.hoOK.Add(1)
	}
	if slow {
		e.hoSlw.Add(1)
	}
	f, sl := e.hoFail.Load(), e.hoSlw.Load()
	switch {
	case f >= s.failNeeded:
		b.commit(e, catalog.StateOpen, b.now(), fmt.Sprintf("%d of %d half-open probes failed", f, s.halfOpen), catalog.TripProbeFailed)
	case s.slowNs > 0 && sl >= s.slowNeeded:
		b.commit(e, catalog.StateOpen, b.now(), fmt.Sprintf("%d of %d half-open probes slow", sl, s.halfOpen), catalog.TripProbeFailed)
	case f+e.hoOK.Load() >= s.halfOpen:
		b.commit(e, catalog.StateClosed, b.now(), "half-open probes succeeded", noTrip)
	}
}

// noTrip is the cause argument of transitions that are not trips (to neither open nor
// forced_open).
const noTrip = catalog.TripCause(catalog.NumTripCauses)

// commit moves the breaker from epoch e to state to if e is still current. cause says why a
// trip (to open) happened; noTrip otherwise.
func (b *Breaker) commit(e *epoch, to catalog.State, now int64, reason string, cause catalog.TripCause) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur.Load() != e {
		return
	}
	b.transitionLocked(e, to, now, reason, cause)
}

// transitionLocked installs a new epoch in state to after from. Called with mu held. A trip (to
// open or forced_open) is counted under cause; the first trip of a not-closed episode gives the
// episode its cause.
func (b *Breaker) transitionLocked(from *epoch, to catalog.State, now int64, reason string, cause catalog.TripCause) {
	s := b.set.Load()
	ne := b.newEpoch(to, now, s)
	switch to {
	case catalog.StateOpen, catalog.StateHalfOpen, catalog.StateForcedOpen:
		if from.tripped >= 0 {
			ne.tripped, ne.cause = from.tripped, from.cause
		} else {
			ne.tripped, ne.cause = now, cause
		}
	}
	if to == catalog.StateOpen || to == catalog.StateHalfOpen {
		ne.reTrips = from.reTrips
		if to == catalog.StateOpen && from.state == catalog.StateHalfOpen {
			ne.reTrips++
		}
	}
	if to == catalog.StateOpen {
		ne.period = b.openPeriod(s, ne.reTrips)
		ne.until = now + ne.period
	}
	b.cur.Store(ne)
	b.transitions[from.state][to].Add(1)
	trip := to == catalog.StateOpen || to == catalog.StateForcedOpen
	if trip && cause < catalog.NumTripCauses {
		b.trips[cause].Add(1)
	}
	if s.hub != nil && s.hub.Transitions.Active() {
		t := events.Transition{Name: b.name, From: from.state, To: to, At: b.wall(now), Reason: reason}
		if trip {
			t.Cause = cause
		}
		s.hub.Transitions.Emit(t)
	}
}

// openPeriod draws the length of an open period after reTrips consecutive re-trips.
func (b *Breaker) openPeriod(s *settings, reTrips int) int64 {
	d := float64(s.openBase)
	if s.growth > 1 {
		for i := 0; i < reTrips && d < float64(s.maxOpen); i++ {
			d *= s.growth
		}
		d = min(d, float64(s.maxOpen))
	}
	if s.jitter > 0 {
		r := s.rnd.Float64()
		if r < 0 || r >= 1 {
			r = 0.5
		}
		d *= 1 - s.jitter + 2*s.jitter*r
	}
	return max(int64(d), 1)
}

// reject counts and reports a refused call. now < 0 means not read yet.
func (b *Breaker) reject(e *epoch, now int64, s *settings) error {
	b.notPermitted.Add(1)
	var remaining time.Duration
	if e.state == catalog.StateOpen {
		remaining = time.Duration(e.until - now)
	}
	if s.hub != nil && s.hub.Rejections.Active() {
		if now < 0 {
			now = b.now()
		}
		s.hub.Rejections.Emit(events.Rejection{Primitive: catalog.CircuitBreaker, Name: b.name, State: e.state, At: b.wall(now)})
	}
	return &OpenError{Name: b.name, State: e.state, Remaining: remaining}
}

// State returns the effective state, a pure read: an open breaker whose open period has
// elapsed reports half_open, and a half-open breaker past HalfOpenMaxDuration reports open,
// although the transition is only committed (and counted) by the next call.
func (b *Breaker) State() catalog.State {
	return b.effective(b.cur.Load(), b.set.Load())
}

func (b *Breaker) effective(e *epoch, s *settings) catalog.State {
	if e.state != catalog.StateOpen && (e.state != catalog.StateHalfOpen || s.halfOpenMax == 0) {
		return e.state
	}
	return b.effectiveAt(e, s, b.now())
}

// manual moves the breaker to state to, recording the transition; a no-op when it is already
// there (except Reset, which always empties the window).
func (b *Breaker) manual(to catalog.State, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.cur.Load()
	now := b.now()
	if e.state == to {
		if to == catalog.StateClosed {
			b.cur.Store(b.newEpoch(catalog.StateClosed, now, b.set.Load()))
		}
		return
	}
	cause := noTrip
	if to == catalog.StateForcedOpen {
		cause = catalog.TripForced
	}
	b.transitionLocked(e, to, now, reason, cause)
}

// ForceOpen makes the breaker reject every call until Reset, Disable or MetricsOnly.
func (b *Breaker) ForceOpen() { b.manual(catalog.StateForcedOpen, "forced open") }

// Disable makes the breaker permit every call and record nothing.
func (b *Breaker) Disable() { b.manual(catalog.StateDisabled, "disabled") }

// MetricsOnly puts the breaker in shadow mode: it permits every call and keeps its counts and
// window rates current, but never trips.
func (b *Breaker) MetricsOnly() { b.manual(catalog.StateMetricsOnly, "metrics only") }

// Reset closes the breaker with an empty window.
func (b *Breaker) Reset() { b.manual(catalog.StateClosed, "reset") }

// Reconfigure replaces the configuration at run time. cfg is validated like New's; on error
// nothing changes. Cumulative counts are kept, and so is the window when its kind and size are
// unchanged; otherwise a closed (or metrics_only) breaker starts a new, empty window of the new
// shape without a transition. The current open period keeps its drawn length. A nil Clock,
// Rand or Events in cfg keeps the current one; the clock cannot be changed.
func (b *Breaker) Reconfigure(cfg Config) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.set.Load()
	if cfg.Clock != nil && !sameClock(cfg.Clock, b.clk) {
		return &ConfigError{Primitive: string(catalog.CircuitBreaker), Name: b.name, Field: "Clock", Value: fmt.Sprintf("%T", cfg.Clock), Reason: "cannot be changed by Reconfigure"}
	}
	if cfg.Rand == nil && old.cfg.Rand != nil {
		cfg.Rand = old.cfg.Rand
	}
	if cfg.Events == nil {
		cfg.Events = old.cfg.Events
	}
	cfg.Clock = old.cfg.Clock
	s, err := newSettings(b.name, cfg)
	if err != nil {
		return err
	}
	b.set.Store(s)
	if e := b.cur.Load(); !old.sameShape(s) && (e.state == catalog.StateClosed || e.state == catalog.StateMetricsOnly) {
		b.cur.Store(b.newEpoch(e.state, b.now(), s))
	}
	return nil
}

func sameClock(a, b clock.Clock) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// Config returns the breaker's configuration with defaults applied.
func (b *Breaker) Config() Config {
	c := b.set.Load().cfg
	c.Clock = b.clk
	return c
}
