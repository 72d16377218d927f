// Package breaker is stormwatch's circuit breaker: closed / open / half-open with forced-open,
// disabled and metrics-only (shadow) modes; consecutive, count-based and time-based windows;
// failure-rate and slow-call-rate thresholds; half-open probe permits that are returned on
// panic or cancellation; jittered (and optionally growing) open durations; a classification
// hook; and an injected clock and random source.
//
// Every count a Prometheus exporter needs lives in atomics that [Breaker.Snapshot] reads without
// changing anything; states, call kinds and trip causes are the catalog's values
// (catalog.State, catalog.CallKind, catalog.TripCause), and call durations are recorded in a
// histogram.Histogram. A call through a closed breaker costs a few atomic operations and
// allocates nothing; with a count-based or consecutive window, slow-call detection off and the
// duration histogram off, it does not read the clock either. On the wall clock a call's duration
// (for the histogram and slow-call detection) is measured with the CPU's time-stamp counter
// where the kernel keeps time with it (linux/amd64, clocksource tsc; calibrated once, within
// 0.1 %), which costs about half of a monotonic clock read; elsewhere, and for everything that
// decides by time, the breaker reads the monotonic clock.
//
// Three ways to call through a breaker:
//
//	err := b.Do(ctx, func(ctx context.Context) error { ... })          // closure
//	v, err := breaker.Call(ctx, b, func(ctx context.Context) (T, error) { ... }) // generic
//	p, err := b.Acquire(); if err == nil { err = work(); p.Done(err) }  // two-step (middleware)
//
// Rejections return an error matching errors.Is(err, [ErrOpen]); errors.As with [*OpenError]
// gives the breaker's name, state and remaining open time.
//
// # Time
//
// An open breaker becomes half-open when its open period ends, and a half-open breaker whose
// probes have not concluded within HalfOpenMaxDuration reopens at that instant, with a freshly
// drawn open period counted from it. Reading ([Breaker.State], [Breaker.Snapshot]) reports these
// changes as they happen but never commits them; the next call (or a manual change, or
// Reconfigure) does, each as of the instant it happened.
//
// # Business errors
//
// Errors marked with classify.Business are returned to the caller unchanged and counted as
// ignored: they say nothing about the dependency's health.
package breaker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
	"github.com/stormwatch-go/stormwatch/instrument/internal/ticks"
)

// Breaker is a circuit breaker. Create it with [New] (or a registry); it is safe for concurrent
// use.
type Breaker struct {
	name string
	clk  clock.Clock
	real bool      // clk is the wall clock: read monotonic time with time.Since
	tsc  bool      // real, and call durations are measured with the time-stamp counter (package ticks)
	base time.Time // origin of the breaker's monotonic nanoseconds

	cur atomic.Pointer[epoch]
	set atomic.Pointer[settings]
	mu  sync.Mutex // serialises transitions and Reconfigure

	// The metrics. Per-call counts are added in record (call.go), transitions in
	// countTransitions (transition.go); Snapshot reads them all.
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
// that admitted them, so results from an earlier epoch are counted but decide nothing. The
// fields above the window never change once the epoch is installed.
type epoch struct {
	state   catalog.State
	since   int64             // entered at (breaker monotonic ns)
	until   int64             // open: end of the open period
	period  int64             // open: drawn length of the open period
	tripped int64             // start of the not-closed episode; -1 when none (closed, disabled, metrics_only)
	cause   catalog.TripCause // the trip that began the episode (when tripped >= 0)
	reTrips int               // consecutive half_open→open re-trips in this episode (open-duration growth)
	// open, half_open: the jitter sequence of the reopens that happen while nobody calls (see
	// timeline.go): its seed, drawn at the last trip a call decided, and how many reopens used it.
	jseed, jn uint64

	win     window // closed, metrics_only
	winTime bool   // win.needsTime()

	probes              atomic.Int32 // half-open permits taken
	hoOK, hoFail, hoSlw atomic.Int32 // half-open probe results
}

// New returns a closed breaker called name, configured by cfg (see [Config] for the defaults).
// An invalid field yields a [*catalog.ConfigError] naming it and its value.
func New(name string, cfg Config) (*Breaker, error) {
	s, err := newSettings(name, cfg)
	if err != nil {
		return nil, err
	}
	b := &Breaker{name: name, clk: clock.Or(cfg.Clock)}
	if _, ok := b.clk.(clock.Real); ok {
		b.real = true
		b.base = time.Now()
		b.tsc = ticks.Enabled()
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
	if st == catalog.StateClosed || st == catalog.StateMetricsOnly {
		e.win = s.newWindow()
		e.winTime = e.win.needsTime()
	}
	return e
}

// State returns the effective state, a pure read: an open breaker whose open period has
// elapsed reports half_open, and a half-open breaker past HalfOpenMaxDuration reports open (and
// half_open again once the new open period, counted from that limit, has elapsed, and so on),
// although the transitions are only committed (and counted) by the next call.
func (b *Breaker) State() catalog.State {
	e := b.cur.Load()
	if e.state != catalog.StateOpen && e.state != catalog.StateHalfOpen {
		return e.state
	}
	s := b.set.Load()
	if e.state == catalog.StateHalfOpen && s.halfOpenMax == 0 {
		return e.state
	}
	p, _, _ := walk(e.phase(), s, b.now(), nil)
	return p.state
}

// Config returns the breaker's configuration with defaults applied.
func (b *Breaker) Config() Config {
	c := b.set.Load().cfg
	c.Clock = b.clk
	return c
}
