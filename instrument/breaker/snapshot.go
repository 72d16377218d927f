package breaker

import (
	"math"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
	"github.com/stormwatch-go/stormwatch/instrument/internal/activity"
)

// Snapshot is a read-only view of a breaker: everything an exporter or a test reads. Counters
// are arrays indexed by the catalog's values (Calls[catalog.CallFailed],
// Transitions[catalog.StateClosed][catalog.StateOpen], Trips[catalog.TripSlowCallRate]). They are
// read one by one, so a snapshot taken during calls may mix values from a few nanoseconds apart.
// Taking one changes nothing and allocates nothing.
type Snapshot struct {
	Name string
	// State is the effective state (see [Breaker.State]).
	State catalog.State
	// Transitions counts committed transitions: Transitions[from][to].
	Transitions [catalog.NumStates][catalog.NumStates]uint64
	// Trips counts the transitions to open and to forced_open by cause.
	Trips [catalog.NumTripCauses]uint64
	// TrippedSince is the trip that began the current open / half-open / forced-open episode
	// and TripCause its cause; TrippedSince is zero (and TripCause meaningless) while closed,
	// disabled or metrics-only.
	TrippedSince time.Time
	TripCause    catalog.TripCause
	// OpenUntil is when the current open period ends; zero unless State is open. Like State,
	// it follows the open and half-open periods that time alone has gone through since the
	// last committed transition.
	OpenUntil time.Time
	// Calls counts permitted calls by kind; NotPermitted counts rejections.
	Calls        [catalog.NumCallKinds]uint64
	NotPermitted uint64
	// DurationsRecorded says whether the breaker records call durations (see
	// Config.DisableDurationHistogram). Durations are the call duration histograms indexed by
	// the values of catalog.DurationKinds: Durations[catalog.CallSuccessful] holds successful
	// calls, slow ones included, Durations[catalog.CallFailed] failed ones. Ignored calls are
	// not observed.
	DurationsRecorded bool
	Durations         [len(catalog.DurationKinds)]histogram.Snapshot
	// FailureRate and SlowCallRate are the window's rates, NaN below MinCalls. For a
	// ConsecutiveFailures window they are the runs relative to WindowSize (trip at 1).
	FailureRate, SlowCallRate float64
	// FailureRateThreshold and SlowCallRateThreshold are the configured thresholds (1 for a
	// ConsecutiveFailures window).
	FailureRateThreshold, SlowCallRateThreshold float64
	// OpenDuration is the configured base open duration.
	OpenDuration time.Duration
	// SlowCallDuration is the configured slow-call duration; 0 means slow-call detection is off.
	SlowCallDuration time.Duration
	// HalfOpenProbes is the number of half-open permits in use or spent in the current
	// half-open period (0 in a half-open period no call has reached yet).
	HalfOpenProbes int
}

// Snapshot returns the breaker's current view. It never commits a transition.
func (b *Breaker) Snapshot() Snapshot {
	e, s := b.cur.Load(), b.set.Load()
	now := b.now()
	sn := Snapshot{Name: b.name, State: e.state}
	var walked uint64
	if e.state == catalog.StateOpen || e.state == catalog.StateHalfOpen {
		p, toHalf, toOpen := walk(e.phase(), s, now, nil)
		walked = toHalf + toOpen
		sn.State = p.state
		if p.state == catalog.StateOpen {
			sn.OpenUntil = b.wall(p.until)
		}
	}
	for f := range catalog.NumStates {
		for t := range catalog.NumStates {
			sn.Transitions[f][t] = b.transitions[f][t].Load()
		}
	}
	for c := range catalog.NumTripCauses {
		sn.Trips[c] = b.trips[c].Load()
	}
	if e.tripped >= 0 {
		sn.TrippedSince = b.wall(e.tripped)
		sn.TripCause = e.cause
	}
	for k := range catalog.NumCallKinds {
		sn.Calls[k] = b.calls[k].Load()
	}
	sn.NotPermitted = b.notPermitted.Load()
	sn.DurationsRecorded = s.hist
	for _, k := range catalog.DurationKinds {
		sn.Durations[k] = b.hist[k].Snapshot()
	}
	if e.win != nil {
		sn.FailureRate, sn.SlowCallRate = e.win.rates(now, s)
	} else {
		sn.FailureRate, sn.SlowCallRate = math.NaN(), math.NaN()
	}
	sn.FailureRateThreshold, sn.SlowCallRateThreshold = s.expFailThr, s.expSlowThr
	sn.OpenDuration = time.Duration(s.openBase)
	sn.SlowCallDuration = time.Duration(s.slowNs)
	if walked == 0 {
		sn.HalfOpenProbes = int(e.probes.Load())
	}
	return sn
}

func init() {
	activity.Breaker = func(b any) (uint64, bool) { return b.(*Breaker).activity() }
}

// activity is what a registry's idle eviction reads of a breaker (through package
// instrument/internal/activity), cheaply (a few atomic loads, no allocation): a number that
// moves whenever the breaker completes a call, and whether the breaker is settled — closed,
// with no failure or slow call in its window — so that replacing it with a fresh breaker would
// lose nothing that protects its dependency. Rejections and trips need not move the number:
// they happen only while the breaker is not settled.
func (b *Breaker) activity() (n uint64, settled bool) {
	for k := range b.calls {
		n += b.calls[k].Load()
	}
	e := b.cur.Load()
	if e.state != catalog.StateClosed || e.win == nil {
		return n, false
	}
	var now int64
	if e.winTime {
		now = b.now()
	}
	_, fails, slow := e.win.counts(now)
	return n, fails == 0 && slow == 0
}
