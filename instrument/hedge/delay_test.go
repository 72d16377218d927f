package hedge

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// simulate makes n calls, one at a time, whose attempts take latencies from draw, hedged at
// the estimator's delay within a budget of a tenth of the calls, as a race would: a hedge that
// answers first cuts the first attempt short. It returns the p99 call latency, the share of
// calls hedged and the share of calls made while the delay was at most maxDelay.
func simulate(e *estimator, n int, draw func() time.Duration, maxDelay time.Duration) (p99 time.Duration, hedged, low float64) {
	var calls atomic.Uint64
	b := newOwnBudget(DefaultMaxExtraRatio, &calls)
	lat := make([]time.Duration, 0, n)
	hedges, lows := 0, 0
	for range n {
		l1 := draw()
		d, ok := e.current()
		calls.Add(1)
		if ok && d <= maxDelay {
			lows++
		}
		if !ok || l1 <= d || !b.SpendToken() {
			e.observe(l1, false)
			lat = append(lat, l1)
			continue
		}
		hedges++
		l2 := d + draw()
		e.observe(min(l1, l2), l2 < l1)
		lat = append(lat, min(l1, l2))
	}
	slices.Sort(lat)
	return lat[len(lat)*99/100], float64(hedges) / float64(n), float64(lows) / float64(n)
}

// stragglerDraw: about 2 ms (lognormal), 5% of attempts 40 ms, and 1% delayed by up to 15 ms
// more (a paused process).
func stragglerDraw(seed uint64) func() time.Duration {
	rng := rand.New(rand.NewPCG(seed, 7))
	return func() time.Duration {
		d := time.Duration(float64(2*time.Millisecond) * math.Exp(rng.NormFloat64()*0.15))
		if rng.Float64() < 0.05 {
			d = 40 * time.Millisecond
		}
		if rng.Float64() < 0.01 {
			d += time.Duration(rng.Float64() * float64(15*time.Millisecond))
		}
		return d
	}
}

// TestTheDelayStaysBelowAStragglerTail: when about 1-q of the calls straggle, the q-quantile
// of each window lands in the body or in the tail by the luck of the draw; the delay must stay
// just above the body all the same (a delay in the tail hedges nothing), and must not climb on
// the first attempts that hedges cut short.
func TestTheDelayStaysBelowAStragglerTail(t *testing.T) {
	for seed := range uint64(5) {
		e := newEstimator(DefaultQuantile, time.Millisecond, DefaultWindow)
		draw := stragglerDraw(seed)
		simulate(e, 300, draw, 0)
		p99, hedged, low := simulate(e, 20000, draw, 8*time.Millisecond)
		assert.LessOrEqual(t, p99, 12*time.Millisecond, "seed %d: p99 cut by 70%% from 40 ms", seed)
		assert.InDelta(t, 0.055, hedged, 0.01, "seed %d: about the tail's share hedged", seed)
		assert.GreaterOrEqual(t, low, 0.97, "seed %d: calls made with the delay below the tail", seed)
	}
}

// TestTheDelayFollowsASmoothDistribution: without a gap, the delay is the q-quantile, and it
// hedges about 1-q of the calls.
func TestTheDelayFollowsASmoothDistribution(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 9))
		draw := func() time.Duration { // exponential, mean 10 ms: p95 = 30 ms
			return time.Duration(rng.ExpFloat64() * float64(10*time.Millisecond))
		}
		e := newEstimator(DefaultQuantile, time.Millisecond, DefaultWindow)
		simulate(e, 300, draw, 0)
		_, hedged, low := simulate(e, 20000, draw, 45*time.Millisecond)
		assert.InDelta(t, 0.05, hedged, 0.015, "seed %d: about 1-q of the calls hedged", seed)
		assert.GreaterOrEqual(t, low, 0.9, "seed %d: the delay stays near p95 (30 ms), within half of it", seed)
	}
}

func TestQuantileBucketLowersTheDelayAcrossAGap(t *testing.T) {
	var counts [numBuckets]uint64
	counts[bucket(2*time.Millisecond)] = 94
	counts[bucket(40*time.Millisecond)] = 6 // 6% > 1-q: p95 is in the tail
	assert.Equal(t, bucket(2*time.Millisecond), quantileBucket(&counts, 100, 0.95))

	counts[bucket(10*time.Millisecond)] = 3 // the "gap" holds 3% of the latencies: not a gap
	assert.Equal(t, bucket(10*time.Millisecond), quantileBucket(&counts, 103, 0.95))

	var smooth [numBuckets]uint64
	for i := bucket(time.Millisecond); i <= bucket(40*time.Millisecond); i++ {
		smooth[i] = 5
	}
	total := uint64(5 * (bucket(40*time.Millisecond) - bucket(time.Millisecond) + 1))
	rank := int(math.Ceil(0.95*float64(total)))/5 + bucket(time.Millisecond)
	assert.InDelta(t, rank, quantileBucket(&smooth, total, 0.95), 1, "no gap: the quantile")
}
