package breaker

import (
	"math"
	"time"
)

// Snapshot is a consistent-enough, read-only view of a breaker for exporters and tests (the
// fields of CB-99 and more). Counters are read one by one, so a snapshot taken during calls may
// mix values from a few nanoseconds apart. Taking one changes nothing and allocates nothing.
type Snapshot struct {
	Name string
	// State is the effective state (see [Breaker.State]); StoredState the committed one.
	State, StoredState State
	// Transitions counts committed transitions: Transitions[from][to].
	Transitions [NumStates][NumStates]uint64
	// TrippedSince is the trip that began the current open / half-open / forced-open episode;
	// zero while closed, disabled or metrics-only.
	TrippedSince time.Time
	// OpenUntil is when the current open period ends and OpenPeriod its drawn length; zero
	// unless the stored state is Open.
	OpenUntil  time.Time
	OpenPeriod time.Duration
	// Calls counts permitted calls by outcome kind; NotPermitted counts rejections.
	Calls        [NumCallKinds]uint64
	NotPermitted uint64
	// Durations are the call duration histograms by kind: [0] successful (incl. slow), [1]
	// failed (incl. slow). Ignored calls are not observed.
	Durations [2]DurationHistogram
	// WindowCalls, WindowFailures and WindowSlow are what the window holds now; for a
	// ConsecutiveFailures window, the current runs of failures and slow calls.
	WindowCalls, WindowFailures, WindowSlow int64
	// FailureRate and SlowCallRate are the window's rates, NaN below MinCalls. For a
	// ConsecutiveFailures window they are the runs relative to WindowSize (trip at 1).
	FailureRate, SlowCallRate float64
	// FailureRateThreshold and SlowCallRateThreshold are the configured thresholds (1 for a
	// ConsecutiveFailures window).
	FailureRateThreshold, SlowCallRateThreshold float64
	// OpenDuration is the configured base open duration.
	OpenDuration time.Duration
	// HalfOpenProbes is the number of half-open permits in use or spent in the current epoch.
	HalfOpenProbes int
}

// DurationHistogram is a snapshot of one call duration histogram. Counts are per bucket (not
// cumulative): Counts[i] holds durations ≤ DurationBuckets[i] and above the previous bound;
// Counts[NumDurationBuckets] those above the last bound.
type DurationHistogram struct {
	Counts [NumDurationBuckets + 1]uint64
	Sum    time.Duration
}

// Count returns the number of observations.
func (h *DurationHistogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Snapshot returns the breaker's current view.
func (b *Breaker) Snapshot() Snapshot {
	e, s := b.cur.Load(), b.set.Load()
	now := b.now()
	sn := Snapshot{Name: b.name, StoredState: e.state, State: b.effectiveAt(e, s, now)}
	for f := range NumStates {
		for t := range NumStates {
			sn.Transitions[f][t] = b.transitions[f][t].Load()
		}
	}
	if e.tripped >= 0 {
		sn.TrippedSince = b.wall(e.tripped)
	}
	if e.state == Open {
		sn.OpenUntil = b.wall(e.until)
		sn.OpenPeriod = time.Duration(e.period)
	}
	for k := range NumCallKinds {
		sn.Calls[k] = b.calls[k].Load()
	}
	sn.NotPermitted = b.notPermitted.Load()
	sn.Durations[0] = b.Durations(false)
	sn.Durations[1] = b.Durations(true)
	if e.win != nil {
		sn.WindowCalls, sn.WindowFailures, sn.WindowSlow = e.win.counts(now)
		sn.FailureRate, sn.SlowCallRate = rates(e.win, now, s)
	} else {
		sn.FailureRate, sn.SlowCallRate = math.NaN(), math.NaN()
	}
	sn.FailureRateThreshold, sn.SlowCallRateThreshold = s.effectiveThresholds()
	sn.OpenDuration = time.Duration(s.openBase)
	sn.HalfOpenProbes = int(e.probes.Load())
	return sn
}

func (b *Breaker) effectiveAt(e *epoch, s *settings, now int64) State {
	if e.state != Open && e.state != HalfOpen {
		return e.state
	}
	p, _, _ := walk(e.phase(), s, now, nil)
	return p.state
}

// The accessors below read one value each, without locking or allocating; the collector uses
// them at scrape time.

// Calls returns the number of permitted calls of kind k.
func (b *Breaker) Calls(k CallKind) uint64 { return b.calls[k].Load() }

// NotPermitted returns the number of rejected calls.
func (b *Breaker) NotPermitted() uint64 { return b.notPermitted.Load() }

// Transitions returns the number of committed transitions from → to.
func (b *Breaker) Transitions(from, to State) uint64 { return b.transitions[from][to].Load() }

// TrippedSince returns the start of the current not-closed episode (see Snapshot), zero when
// there is none.
func (b *Breaker) TrippedSince() time.Time {
	if e := b.cur.Load(); e.tripped >= 0 {
		return b.wall(e.tripped)
	}
	return time.Time{}
}

// Rates returns the window's failure and slow-call rates (see Snapshot).
func (b *Breaker) Rates() (failure, slow float64) {
	e, s := b.cur.Load(), b.set.Load()
	if e.win == nil {
		return math.NaN(), math.NaN()
	}
	var now int64
	if e.win.needsTime() {
		now = b.now()
	}
	return rates(e.win, now, s)
}

// Thresholds returns the failure and slow-call rate thresholds as exported (1 for a
// ConsecutiveFailures window) and the base open duration.
func (b *Breaker) Thresholds() (failure, slow float64, open time.Duration) {
	s := b.set.Load()
	f, sl := s.effectiveThresholds()
	return f, sl, time.Duration(s.openBase)
}

// DurationHistogramEnabled reports whether the breaker records call durations.
func (b *Breaker) DurationHistogramEnabled() bool { return b.set.Load().hist }

// Durations returns the duration histogram of failed calls (failed = true) or successful ones.
func (b *Breaker) Durations(failed bool) DurationHistogram {
	h := &b.hist[0]
	if failed {
		h = &b.hist[1]
	}
	var out DurationHistogram
	for i := range h.counts {
		out.Counts[i] = h.counts[i].Load()
	}
	out.Sum = time.Duration(h.sum.Load())
	return out
}
