package hedge

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// numBuckets covers 1 ns to 2^40 ns (18 minutes) in quarter octaves; the last bucket,
// cutBucket, counts the first attempts a winning hedge cut short.
const (
	subBuckets = 4
	numBuckets = 41*subBuckets + 1
	cutBucket  = numBuckets - 1
)

// estimator follows a quantile of recent first-attempt latencies. Each latency is counted in a
// log-scale bucket of the current generation (one atomic add), and so is every latency longer
// than the delay in use (the calls a hedge was due for). Every window/2 latencies the delay is
// reconsidered over the current and the previous generation, and the older one is cleared to
// become current:
//
//   - The delay moves only when the share of calls it hedged leaves 1-q by more than the standard
//     error of a share over that many calls. Within that band the delay hedges about 1-q of the
//     calls, as asked; moving it on every window's noise is what makes a quantile estimate
//     unstable. The band matters most for the latencies above the delay: they are cut short
//     (the first attempt is cancelled once a hedge wins), so the q-quantile computed from them
//     is only a lower bound — and a window whose tail is by chance a little over 1-q would
//     raise the delay step by step to the cut-short latencies' end.
//   - When it moves, the delay is the q-quantile ([quantileBucket]) rounded up to its bucket's
//     upper bound (at most 25% above it), and never below floor.
type estimator struct {
	q     float64
	floor time.Duration
	every uint64

	n     atomic.Uint64
	cur   atomic.Uint32
	gens  [2][numBuckets]atomic.Uint32
	over  [2]atomic.Uint32 // per generation: latencies longer than the delay in use
	delay atomic.Int64     // ns; 0 until the first recomputation
	mu    sync.Mutex
}

func newEstimator(q float64, floor time.Duration, window int) *estimator {
	return &estimator{q: q, floor: floor, every: uint64(window / 2)}
}

// bucket returns the index of d's bucket: 4 per octave, by the two bits after the leading one.
func bucket(d time.Duration) int {
	ns := uint64(max(d, 1))
	l := bits.Len64(ns) - 1 // octave
	var sub uint64
	if l >= 2 {
		sub = (ns >> (l - 2)) & 3
	} else {
		sub = (ns << (2 - l)) & 3
	}
	return min(l*subBuckets+int(sub), cutBucket-1)
}

// upper returns the upper bound of bucket i.
func upper(i int) time.Duration {
	l, sub := i/subBuckets, i%subBuckets
	v := math.Ldexp(1+float64(sub+1)/subBuckets, l)
	return time.Duration(math.Ceil(v))
}

// observe counts a first attempt's latency d; cut says a hedge won and cancelled the attempt,
// so that d is only a lower bound of its latency: it is counted as longer than any other.
func (e *estimator) observe(d time.Duration, cut bool) {
	g := e.cur.Load() & 1
	b := cutBucket
	if !cut {
		b = bucket(d)
	}
	e.gens[g][b].Add(1)
	if cur := e.delay.Load(); cur > 0 && int64(d) > cur {
		e.over[g].Add(1)
	}
	if e.n.Add(1)%e.every == 0 {
		e.recompute()
	}
}

// recompute reconsiders the delay from both generations and rotates them. A recomputation
// already under way makes this one unnecessary.
func (e *estimator) recompute() {
	if !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	var counts [numBuckets]uint64
	var total, over uint64
	for g := range e.gens {
		for i := range counts {
			c := uint64(e.gens[g][i].Load())
			counts[i] += c
			total += c
		}
		over += uint64(e.over[g].Load())
	}
	if total > 0 && !e.withinBand(over, total) {
		if b := quantileBucket(&counts, total, e.q); b != cutBucket { // else: no latency tells more
			e.delay.Store(int64(max(upper(b), e.floor)))
		}
	}
	old := 1 - e.cur.Load()&1
	for i := range e.gens[old] {
		e.gens[old][i].Store(0)
	}
	e.over[old].Store(0)
	e.cur.Store(old)
}

// withinBand reports whether a delay that total latencies exceeded over times hedges 1-q of
// the calls, within one standard error. There is no band before the first delay.
func (e *estimator) withinBand(over, total uint64) bool {
	if e.delay.Load() == 0 {
		return false
	}
	p := 1 - e.q
	se := math.Sqrt(p * e.q / float64(total))
	return math.Abs(float64(over)/float64(total)-p) <= se
}

// current returns the delay, and false until it has been computed once.
func (e *estimator) current() (time.Duration, bool) {
	d := e.delay.Load()
	return time.Duration(d), d > 0
}

// gapBuckets is the width of the gap (one octave) that separates a tail from the body of the
// latencies, and 1/gapSlack the share of the latencies the gap may hold.
const (
	gapBuckets = subBuckets
	gapSlack   = 100
)

// quantileBucket returns the bucket of the q-quantile of counts — unless that bucket lies in a
// tail, at least an octave of (almost) no latencies above the body of the distribution: then it
// returns the body's top bucket. Any delay in the gap hedges the same calls, so the lowest is
// the best; and the q-quantile of a distribution whose tail is about 1-q of it would otherwise
// land in the body or in the tail by the luck of each window's draw — a delay that jumps from
// just above the body to past the tail, which hedges nothing.
func quantileBucket(counts *[numBuckets]uint64, total uint64, q float64) int {
	rank := uint64(math.Ceil(q * float64(total)))
	b := numBuckets - 1
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			b = i
			break
		}
	}
	slack, passed := total/gapSlack, uint64(0)
	lo := b
	for i := b - 1; i >= 0 && passed+counts[i] <= slack; i-- {
		passed += counts[i]
		lo = i
	}
	if b-lo >= gapBuckets && lo > 0 {
		return lo - 1
	}
	return b
}
