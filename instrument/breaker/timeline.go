package breaker

import (
	"fmt"
	"math"

	"github.com/stormwatch-go/stormwatch/catalog"
)

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
// of the instants they happened, and returns the current epoch. Each reopen at the half-open
// limit is a trip of cause max_half_open_duration; the episode keeps its start and cause.
// Called with mu held.
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
	b.countTransitions(catalog.StateOpen, catalog.StateHalfOpen, noTrip, toHalf)
	b.countTransitions(catalog.StateHalfOpen, catalog.StateOpen, catalog.TripMaxHalfOpenDuration, toOpen)
	if s.hub != nil && s.hub.Transitions.Active() {
		walk(e.phase(), s, now, func(from, to phase) {
			reason, cause := "open duration elapsed", noTrip
			if to.state == catalog.StateOpen {
				reason, cause = "half-open max duration elapsed", catalog.TripMaxHalfOpenDuration
			}
			if from.skippedRounds > 0 {
				reason += fmt.Sprintf(" (%d earlier idle reopen cycles counted, not reported one by one)", from.skippedRounds*chainCycle)
			}
			b.emitTransition(s, from.state, to.state, to.since, reason, cause)
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
