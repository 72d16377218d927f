package hedge

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// numBuckets covers 1 ns to 2^40 ns (18 minutes) in quarter octaves.
const (
	subBuckets = 4
	numBuckets = 41 * subBuckets
)

// estimator follows a quantile of recent latencies: each latency is counted in a log-scale
// bucket of the current generation (one atomic add); every window/2 latencies the quantile is
// recomputed over the current and the previous generation, and the older one is cleared to
// become current. The delay is therefore the quantile of the last window/2 to window latencies,
// rounded up to its bucket's upper bound (at most 25% above it), and never below floor.
type estimator struct {
	q     float64
	floor time.Duration
	every uint64

	n     atomic.Uint64
	cur   atomic.Uint32
	gens  [2][numBuckets]atomic.Uint32
	delay atomic.Int64 // ns; 0 until the first recomputation
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
	return min(l*subBuckets+int(sub), numBuckets-1)
}

// upper returns the upper bound of bucket i.
func upper(i int) time.Duration {
	l, sub := i/subBuckets, i%subBuckets
	v := math.Ldexp(1+float64(sub+1)/subBuckets, l)
	return time.Duration(math.Ceil(v))
}

func (e *estimator) observe(d time.Duration) {
	e.gens[e.cur.Load()&1][bucket(d)].Add(1)
	if e.n.Add(1)%e.every == 0 {
		e.recompute()
	}
}

// recompute sets the delay from both generations and rotates them. A recomputation already
// under way makes this one unnecessary.
func (e *estimator) recompute() {
	if !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	var counts [numBuckets]uint64
	var total uint64
	for g := range e.gens {
		for i := range counts {
			c := uint64(e.gens[g][i].Load())
			counts[i] += c
			total += c
		}
	}
	if total > 0 {
		rank := uint64(math.Ceil(e.q * float64(total)))
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen >= rank {
				e.delay.Store(int64(max(upper(i), e.floor)))
				break
			}
		}
	}
	old := 1 - e.cur.Load()&1
	for i := range e.gens[old] {
		e.gens[old][i].Store(0)
	}
	e.cur.Store(old)
}

// current returns the delay, and false until it has been computed once.
func (e *estimator) current() (time.Duration, bool) {
	d := e.delay.Load()
	return time.Duration(d), d > 0
}
