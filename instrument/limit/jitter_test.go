package limit

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// simJittered is a noisier model than simulate, closer to a real host: Poisson arrivals at rate
// per second, each service time service × (1 + jit·X) with X exponential (mean 1), and pauses
// in the arrivals — about every 200 ms the caller stops for an exponential time of mean stall
// (a stalled scheduler, a GC pause) and the calls it would have made are lost. Calls that take
// longer than 5× the service time are dropped (their caller gave up); good counts the others
// that arrived after a 2-second warm-up. It returns good, the p99 latency of the calls that
// arrived after the warm-up, and the mean service time (capacity is servers / meanSvc).
func simJittered(l *Limiter, clk *clock.Fake, rate float64, dur time.Duration, seed uint64, jit float64, stall time.Duration) (good int, p99 time.Duration, meanSvc time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var events eventQueue
	busy := 0
	var queue []*call
	var lats []time.Duration
	var svcSum time.Duration
	var svcN int
	start := clk.Now()
	warm := start.Add(2 * time.Second)
	svc := func() time.Duration {
		d := time.Duration(float64(service) * (1 + jit*rng.ExpFloat64()))
		svcSum += d
		svcN++
		return d
	}
	complete := func(c *call) {
		busy--
		if len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			busy++
			n.done = clk.Now().Add(svc())
			heap.Push(&events, n)
		}
		lat := clk.Now().Sub(c.arrived)
		if l != nil {
			if lat > 5*service {
				c.permit.Done(context.DeadlineExceeded)
			} else {
				c.permit.Done(nil)
			}
		}
		if c.arrived.After(warm) {
			lats = append(lats, lat)
			if lat <= 5*service {
				good++
			}
		}
	}
	advanceTo := func(t time.Time) { events.runUntil(clk, t, complete) }
	end := start.Add(dur)
	at := start
	nextStall := start
	for at.Before(end) {
		at = at.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		if stall > 0 && at.After(nextStall) {
			at = at.Add(time.Duration(rng.ExpFloat64() * float64(stall)))
			nextStall = at.Add(time.Duration(rng.ExpFloat64() * float64(200*time.Millisecond)))
		}
		advanceTo(at)
		c := &call{arrived: at}
		if l != nil {
			p, err := l.Acquire(context.Background())
			if err != nil {
				continue
			}
			c.permit = p
		}
		if busy < servers {
			busy++
			c.done = at.Add(svc())
			heap.Push(&events, c)
		} else {
			queue = append(queue, c)
		}
	}
	for len(events) > 0 {
		advanceTo(events[0].done)
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if len(lats) > 0 {
		p99 = lats[len(lats)*99/100]
	}
	return good, p99, svcSum / time.Duration(max(svcN, 1))
}

// Under jittered service times and pauses in the arrivals, at 3× the capacity, Vegas keeps
// ≥ 95 % of the capacity as goodput and the p99 under 1.5× the unloaded p99, on every seed.
func TestVegasUnderJitterAndPauses(t *testing.T) {
	const jit, stall = 0.2, 25 * time.Millisecond
	_, unloaded, _ := simJittered(nil, clock.NewFake(t0), 0.5*capacity, 30*time.Second, 7, jit, 0)
	for seed := uint64(1); seed <= 5; seed++ {
		clk := clock.NewFake(t0)
		l := newLimiter(t, clk, Config{})
		good, p99, meanSvc := simJittered(l, clk, 3*capacity, 20*time.Second, seed, jit, stall)
		capa := float64(servers) * float64(time.Second) / float64(meanSvc)
		if share := float64(good) / 18 / capa; share < 0.95 {
			t.Errorf("seed %d: goodput %.1f%% of capacity, want ≥ 95%%", seed, 100*share)
		}
		if r := float64(p99) / float64(unloaded); r > 1.5 {
			t.Errorf("seed %d: p99 %v = %.2f× the unloaded p99 %v, want ≤ 1.5×", seed, p99, r, unloaded)
		}
	}
}
