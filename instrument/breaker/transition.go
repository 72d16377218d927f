package breaker

import (
	"fmt"
	"math"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

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
	if cause, reason, ok := e.win.trip(now, s); ok {
		b.transitionLocked(e, catalog.StateOpen, now, reason, cause)
	}
}

// recordProbe counts a half-open probe's result of kind k (not ignored) and decides when the
// probes have. end is when the probe concluded; < 0 means not read yet.
func (b *Breaker) recordProbe(e *epoch, k catalog.CallKind, s *settings, end int64) {
	if s.halfOpenMax > 0 {
		if end < 0 {
			end = b.now()
		}
		if end-e.since >= s.halfOpenMax {
			// A late result: the half-open period expired and the breaker reopened at that
			// instant (committed by the next admission). Counted in calls_total, it decides
			// nothing.
			return
		}
	}
	if isFailed(k) {
		e.hoFail.Add(1)
	} else {
		e.hoOK.Add(1)
	}
	if isSlow(k) {
		e.hoSlw.Add(1)
	}
	if to, reason, cause, ok := probeVerdict(e, s); ok {
		if end < 0 {
			end = b.now()
		}
		b.commit(e, to, end, reason, cause)
	}
}

// probeVerdict says what the probe results recorded in the half-open epoch e decide under s:
// reopen (cause probe_failed) as soon as enough failed or were slow, close once all
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

// transitionLocked installs a new epoch in state to after from, at now. Called with mu held. A
// trip (to open or forced_open) is counted under cause; the first trip of a not-closed episode
// gives the episode its cause. A new open period drawn here is a trip a call (or Reconfigure)
// decided: it draws fresh jitter and seeds the jitter of the reopens that may follow while
// nobody calls (see timeline.go).
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
	if to != catalog.StateOpen && to != catalog.StateForcedOpen {
		cause = noTrip
	}
	b.countTransitions(from.state, to, cause, 1)
	b.emitTransition(s, from.state, to, now, reason, cause)
}

// countTransitions counts n transitions from → to, trips under cause (noTrip when they are not
// trips).
func (b *Breaker) countTransitions(from, to catalog.State, cause catalog.TripCause, n uint64) {
	b.transitions[from][to].Add(n)
	if cause < catalog.NumTripCauses {
		b.trips[cause].Add(n)
	}
}

// emitTransition reports a transition that happened at now to the transition listeners.
func (b *Breaker) emitTransition(s *settings, from, to catalog.State, now int64, reason string, cause catalog.TripCause) {
	if s.hub == nil || !s.hub.Transitions.Active() {
		return
	}
	t := events.Transition{Name: b.name, From: from, To: to, At: b.wall(now), Reason: reason}
	if cause < catalog.NumTripCauses {
		t.Cause = cause
	}
	s.hub.Transitions.Emit(t)
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
		return &catalog.ConfigError{Primitive: string(catalog.CircuitBreaker), Name: b.name, Field: "Clock", Value: fmt.Sprintf("%T", cfg.Clock), Reason: "cannot be changed by Reconfigure"}
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
