package limit

import (
	"container/heap"
	"context"
	"sort"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// downstream is a deterministic model of a dependency with a fixed capacity: `servers` calls are
// served at a time, each takes `service`, the rest wait in a FIFO queue. The simulation is driven
// on a fake clock by a single goroutine: arrivals at a fixed rate, completions as events.
type downstream struct {
	servers int
	service time.Duration
	busy    int
	queue   []*call
}

type call struct {
	arrived time.Time // at the limiter
	permit  Permit
	done    time.Time
}

type eventQueue []*call

func (q eventQueue) Len() int           { return len(q) }
func (q eventQueue) Less(i, j int) bool { return q[i].done.Before(q[j].done) }
func (q eventQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)        { *q = append(*q, x.(*call)) }
func (q *eventQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

// runUntil completes, in order, the calls due by t, each at its own time, and sets the clock to t.
func (q *eventQueue) runUntil(clk *clock.Fake, t time.Time, complete func(*call)) {
	for q.Len() > 0 && !(*q)[0].done.After(t) {
		c := heap.Pop(q).(*call)
		clk.Set(c.done)
		complete(c)
	}
	clk.Set(t)
}

// simResult summarises one simulated run.
type simResult struct {
	offered, admitted, rejected int
	latencies                   []time.Duration // of admitted calls, arrival to completion
	limits                      []int           // the limit sampled once per simulated second
	baselines                   []time.Duration // the baseline sampled once per simulated second
}

func (r simResult) p99() time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r.latencies...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)*99/100]
}

// phase is a stretch of the run at one offered load, in calls per second.
type phase struct {
	rate     float64
	duration time.Duration
	service  time.Duration // 0 keeps the downstream's service time
}

// simulate offers the phases' load to l in front of d, on clk, and returns what happened. When l
// is nil every call is admitted.
func simulate(clk *clock.Fake, l *Limiter, d *downstream, phases ...phase) simResult {
	var res simResult
	var events eventQueue
	ctx := context.Background()
	start := clk.Now()
	nextSample := start
	complete := func(c *call) {
		d.busy--
		if len(d.queue) > 0 {
			n := d.queue[0]
			d.queue = d.queue[1:]
			d.busy++
			n.done = clk.Now().Add(d.service)
			heap.Push(&events, n)
		}
		c.permit.Done(nil)
		res.latencies = append(res.latencies, clk.Now().Sub(c.arrived))
	}
	advanceTo := func(t time.Time) {
		events.runUntil(clk, t, complete)
		for !nextSample.After(t) {
			if l != nil {
				sn := l.Snapshot()
				res.limits = append(res.limits, sn.Limit)
				res.baselines = append(res.baselines, sn.Baseline)
			}
			nextSample = nextSample.Add(time.Second)
		}
	}
	at := start
	for _, ph := range phases {
		if ph.service > 0 {
			d.service = ph.service
		}
		gap := time.Duration(float64(time.Second) / ph.rate)
		end := at.Add(ph.duration)
		for ; at.Before(end); at = at.Add(gap) {
			advanceTo(at)
			res.offered++
			c := &call{arrived: at}
			if l != nil {
				p, err := l.Acquire(ctx)
				if err != nil {
					res.rejected++
					continue
				}
				c.permit = p
			}
			res.admitted++
			if d.busy < d.servers {
				d.busy++
				c.done = at.Add(d.service)
				heap.Push(&events, c)
			} else {
				d.queue = append(d.queue, c)
			}
		}
	}
	for len(events) > 0 {
		advanceTo(events[0].done)
	}
	return res
}
