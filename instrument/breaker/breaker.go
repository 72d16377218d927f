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
	"math"
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
	// open, half_open: the jitter sequence of the reopens that happen while nobody calls (see
	// walk): its seed, drawn at the last trip a call decided, and how many reopens used it.
	jseed, jn uint64
	win       window

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
			b.settle(e, now) // open → half_open as of e.until, and on if that expired too
		case catalog.StateHalfOpen:
			if s.halfOpenMax > 0 {
				if now := b.now(); now-e.since >= s.halfOpenMax {
					b.settle(e, now) // half_open → open as of the limit
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
		b.recordProbe(e, fail, slow, s, now)
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
	b.tripLocked(e, b.set.Load(), b.now())
}

// tripLocked opens the breaker if the window of e, the current closed epoch, trips under s.
// Called with mu held.
func (b *Breaker) tripLocked(e *epoch, s *settings, now int64) {
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

// recordProbe counts a half-open probe's result and decides when the probes have. now is when
// the probe concluded; < 0 means not read yet.
func (b *Breaker) recordProbe(e *epoch, fail, slow bool, s *settings, now int64) {
	if s.halfOpenMax > 0 {
		if now < 0 {
			now = b.now()
		}
		if now-e.since >= s.halfOpenMax {
			// A late result: the half-open period expired and the breaker reopened at that
			// instant (committed by the next admission). Counted in calls_total, it decides
			// nothing.
			return
		}
	}
	if fail {
		e.hoFail.Add(1)
	} else {
		e.hoOK.Add(1)
	}
	if slow {
		e.hoSlw.Add(1)
	}
	if to, reason, cause, ok := probeVerdict(e, s); ok {
		if now < 0 {
			now = b.now()
		}
		b.commit(e, to, now, reason, cause)
	}
}

// probeVerdict says what the probe results recorded in the half-open epoch e decide under s:
// reopen (trip cause probe_failed) as soon as enough failed or were slow, close once all
// HalfOpenCalls concluded otherwise.
func probeVerdict(e *epoch, s *settings) (to catalog.State, reason string, cause catalog.TripCause, decided bool) {
	f, sl := e.hoFail.Load(), e.hoSlw.Load()
	switch {
	case f >= s.failNeeded:
		return catalog.StateOpen, fmt.Sprintf("%d of %d half-open probes failed", f, s.halfOpen), catalog.TripProbeFailed, true
	case s.slowNs > 0 && sl >= s.slowNeeded:
		return catalog.StateOpen, fmt.Sprintf("%d of %d half-open probes slow", sl, s.halfOpen), catalog.TripProbeFailed, true
	case f+e.hoOK.Load() >= s.halfOpen:
		return catalog.StateClosed, "half-open probes succeeded", noTrip, true
	}
	return 0, "", noTrip, false
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
// episode its cause. A new open period drawn here is a trip a call (or Reconfigure) decided: it
// draws fresh jitter and seeds the jitter of the reopens that may follow while nobody calls.
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
	if to == catalog.StateHalfOpen {
		ne.jseed, ne.jn = from.jseed, from.jn
	}
	if to == catalog.StateOpen {
		r := drawJitter(s)
		ne.jseed = math.Float64bits(r)
		ne.period = openPeriodAt(s, ne.reTrips, r)
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

// An open or half-open breaker changes state with time alone: an open period ends in
// half-open, and a half-open period that outlives HalfOpenMaxDuration ends in open, at that
// instant, with a new open period counted from it. Reading (State, Snapshot) computes these
// steps without changing anything; the next admission (or Reconfigure, or a manual change)
// commits them, each as of the instant it happened, not as of the commit: the committed epoch's
// since and until, the transition events' At and the transitions counters are what they would
// have been had every step been committed on time.
//
// A reopen nobody saw cannot draw from the random source while being read, so its jitter
// comes from a sequence seeded by the last real trip's draw (jseed, jn): every read and the
// eventual commit see the same open periods. The sequence repeats every chainCycle reopens,
// so once the open duration has stopped growing, chainCycle reopens always take the same time
// and walk skips whole rounds of a long idle chain instead of stepping through each.

// chainCycle is the number of reopens after which the idle jitter sequence repeats.
const chainCycle = 16

// phase is the part of an open or half-open epoch that time alone changes.
type phase struct {
	state         catalog.State
	since, until  int64 // until: open only
	period        int64 // open only
	reTrips       int
	jseed, jn     uint64
	skippedRounds uint64 // rounds of chainCycle reopens walk skipped just before this phase
}

func (e *epoch) phase() phase {
	return phase{state: e.state, since: e.since, until: e.until, period: e.period, reTrips: e.reTrips, jseed: e.jseed, jn: e.jn}
}

// next returns the phase after p if p is over by now.
func (p phase) next(s *settings, now int64) (phase, bool) {
	switch p.state {
	case catalog.StateOpen:
		if now < p.until {
			return p, false
		}
		return phase{state: catalog.StateHalfOpen, since: p.until, reTrips: p.reTrips, jseed: p.jseed, jn: p.jn}, true
	case catalog.StateHalfOpen:
		if s.halfOpenMax <= 0 || now-p.since < s.halfOpenMax {
			return p, false
		}
		// Trip cause: max_half_open_duration.
		q := phase{state: catalog.StateOpen, since: p.since + s.halfOpenMax, reTrips: p.reTrips + 1, jseed: p.jseed, jn: p.jn + 1}
		q.period = openPeriodAt(s, q.reTrips, chainJitter(q.jseed, q.jn))
		q.until = q.since + q.period
		return q, true
	}
	return p, false
}

// walk follows p through the phases time has taken it by now and returns the phase current at
// now with the number of open→half_open and half_open→open steps taken. step, when not nil, is
// called for each step walked one by one, in order; steps inside skipped rounds are counted
// but not reported (the phase after them says how many rounds were skipped).
func walk(p phase, s *settings, now int64, step func(from, to phase)) (cur phase, toHalf, toOpen uint64) {
	var round int64 // length of chainCycle reopen cycles once the open duration stopped growing
	for steps := 0; ; steps++ {
		if p.state == catalog.StateHalfOpen && steps >= 2*chainCycle && s.halfOpenMax > 0 {
			if round == 0 && openGrowthDone(s, p.reTrips+1) {
				for i := uint64(1); i <= chainCycle; i++ {
					round += s.halfOpenMax + openPeriodAt(s, p.reTrips+int(i), chainJitter(p.jseed, p.jn+i))
				}
			}
			// Skip all rounds but the last that end by now, so that the steps after a skip
			// are walked (and reported) one by one.
			if n := (now - p.since) / max(round, 1); round > 0 && n > 1 {
				n--
				p.since += n * round
				p.reTrips += int(n) * chainCycle
				p.jn += uint64(n) * chainCycle
				p.skippedRounds = uint64(n)
				toHalf += uint64(n) * chainCycle
				toOpen += uint64(n) * chainCycle
			}
		}
		q, ok := p.next(s, now)
		if !ok {
			return p, toHalf, toOpen
		}
		if q.state == catalog.StateHalfOpen {
			toHalf++
		} else {
			toOpen++
		}
		if step != nil {
			step(p, q)
		}
		p = q
	}
}

// settle commits the steps time has taken epoch e through by now, if e is still current.
func (b *Breaker) settle(e *epoch, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur.Load() != e {
		return
	}
	b.settleLocked(e, b.set.Load(), now)
}

// settleLocked commits the steps time has taken the current epoch e through by now under s, as
// of the instants they happened, and returns the current epoch. Called with mu held.
func (b *Breaker) settleLocked(e *epoch, s *settings, now int64) *epoch {
	if e.state != catalog.StateOpen && e.state != catalog.StateHalfOpen {
		return e
	}
	p, toHalf, toOpen := walk(e.phase(), s, now, nil)
	if toHalf+toOpen == 0 {
		return e
	}
	ne := b.newEpoch(p.state, p.since, s)
	ne.until, ne.period, ne.tripped, ne.cause, ne.reTrips, ne.jseed, ne.jn = p.until, p.period, e.tripped, e.cause, p.reTrips, p.jseed, p.jn
	b.cur.Store(ne)
	b.transitions[catalog.StateOpen][catalog.StateHalfOpen].Add(toHalf)
	b.transitions[catalog.StateHalfOpen][catalog.StateOpen].Add(toOpen)
	b.trips[catalog.TripMaxHalfOpenDuration].Add(toOpen)
	if s.hub != nil && s.hub.Transitions.Active() {
		walk(e.phase(), s, now, func(from, to phase) {
			t := events.Transition{Name: b.name, From: from.state, To: to.state, At: b.wall(to.since), Reason: "open duration elapsed"}
			if to.state == catalog.StateOpen {
				t.Reason, t.Cause = "half-open max duration elapsed", catalog.TripMaxHalfOpenDuration
			}
			if from.skippedRounds > 0 {
				t.Reason += fmt.Sprintf(" (%d earlier idle reopen cycles counted, not reported one by one)", from.skippedRounds*chainCycle)
			}
			s.hub.Transitions.Emit(t)
		})
	}
	return ne
}

// drawJitter draws the jitter of a new open period from the random source: r in [0, 1) spreads
// the period over OpenDuration×[1−j, 1+j).
func drawJitter(s *settings) float64 {
	if s.jitter <= 0 {
		return 0.5
	}
	r := s.rnd.Float64()
	if !(r >= 0 && r < 1) {
		r = 0.5
	}
	return r
}

// chainJitter is the jitter of the n-th reopen of an idle chain seeded by seed: a splitmix64
// hash, in [0, 1), repeating every chainCycle reopens.
func chainJitter(seed, n uint64) float64 {
	x := seed + (n%chainCycle+1)*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// openGrowthDone reports whether the open duration no longer grows after reTrips re-trips:
// growth is off or capped.
func openGrowthDone(s *settings, reTrips int) bool {
	return s.growth <= 1 || float64(s.openBase)*math.Pow(s.growth, float64(reTrips)) >= float64(s.maxOpen)
}

// openPeriodAt is the length of an open period after reTrips consecutive re-trips, with
// jitter r in [0, 1).
func openPeriodAt(s *settings, reTrips int, r float64) int64 {
	d := float64(s.openBase)
	if s.growth > 1 && reTrips > 0 {
		d = min(d*math.Pow(s.growth, float64(reTrips)), float64(s.maxOpen))
	}
	if s.jitter > 0 {
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
// elapsed reports half_open, and a half-open breaker past HalfOpenMaxDuration reports open (and
// half_open again once the new open period, counted from that limit, has elapsed, and so on),
// although the transitions are only committed (and counted) by the next call.
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
	now := b.now()
	// Commit what time alone has changed first, so that the manual transition starts from the
	// state State reported.
	e := b.settleLocked(b.cur.Load(), b.set.Load(), now)
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
// shape without a transition. A ConsecutiveFailures window has no rate threshold to lower: a
// new WindowSize is a new shape and starts a new run.
//
// A kept window is evaluated against the new thresholds and minimum calls at once: a closed
// breaker whose window already trips under them opens now, without waiting for another
// outcome (a metrics_only breaker never trips). Likewise the probe results of a half-open
// breaker are judged by the new rules at once. The current open period keeps its drawn
// length; a new HalfOpenMaxDuration applies to the current half-open period from its start.
// A nil Clock, Rand or Events in cfg keeps the current one; the clock cannot be changed.
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
	now := b.now()
	// What time alone changed happened under the old settings: commit it with them.
	e := b.settleLocked(b.cur.Load(), old, now)
	b.set.Store(s)
	switch {
	case (e.state == catalog.StateClosed || e.state == catalog.StateMetricsOnly) && !old.sameShape(s):
		b.cur.Store(b.newEpoch(e.state, now, s))
	case e.state == catalog.StateClosed:
		// The window's outcomes have not changed, so no call would re-check them: do it now.
		b.tripLocked(e, s, now)
	case e.state == catalog.StateHalfOpen && (s.halfOpenMax == 0 || now-e.since < s.halfOpenMax):
		if to, reason, cause, ok := probeVerdict(e, s); ok {
			b.transitionLocked(e, to, now, reason, cause)
		}
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
