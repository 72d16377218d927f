package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
)

// The goodput comparison: a simulated downstream with a fixed capacity (servers calls at a
// time, each taking service; the rest wait in its FIFO queue and are served even when their
// caller has given up, as a real server's queue is) receives open-loop traffic at 1×, 2× and 3×
// its capacity through each strategy in turn. Goodput counts the calls that succeeded within
// the deadline, per second. It runs on the wall clock (failsafe-go's limiter has no injectable
// clock), so it is a test that runs only when asked:
//
//	GOODPUT=1 go test -run TestGoodput -v -timeout 10m .
const (
	gpServers  = 20
	gpService  = 50 * time.Millisecond
	gpDeadline = 5 * gpService
	gpRun      = 6 * time.Second
	gpWarmup   = 2 * time.Second // not counted: the adaptive limiters converge
)

var gpCapacity = float64(gpServers) * float64(time.Second) / float64(gpService)

type gpDownstream struct {
	sem chan struct{}
	// busy sums the time servers spent on calls, and served counts them: a sleep on a loaded
	// machine overshoots, so the capacity the downstream really had is servers / mean service
	// time, which the table uses as the denominator of goodput.
	busy, served atomic.Int64
}

func (d *gpDownstream) serve() {
	d.sem <- struct{}{}
	t := time.Now()
	time.Sleep(gpService)
	d.busy.Add(int64(time.Since(t)))
	d.served.Add(1)
	<-d.sem
}

// capacity is the calls per second the downstream could serve, from the service times it had.
func (d *gpDownstream) capacity() float64 {
	if d.served.Load() == 0 {
		return gpCapacity
	}
	mean := time.Duration(d.busy.Load() / d.served.Load())
	return float64(gpServers) * float64(time.Second) / float64(mean)
}

// strategy admits a call or not; done reports the call's outcome (dropped: it missed its deadline).
type strategy interface {
	admit(ctx context.Context) (done func(dropped bool), ok bool)
}

type noLimit struct{}

func (noLimit) admit(context.Context) (func(bool), bool) { return func(bool) {}, true }

type bulkheadStrategy struct{ b *bulkhead.Bulkhead }

func (s bulkheadStrategy) admit(ctx context.Context) (func(bool), bool) {
	release, err := s.b.Acquire(ctx)
	if err != nil {
		return nil, false
	}
	return func(bool) { release.Done() }, true
}

type failsafeStrategy struct {
	l adaptivelimiter.AdaptiveLimiter[any]
}

func (s failsafeStrategy) admit(context.Context) (func(bool), bool) {
	p, ok := s.l.TryAcquirePermit()
	if !ok {
		return nil, false
	}
	return func(dropped bool) {
		if dropped {
			p.Drop()
		} else {
			p.Record()
		}
	}, true
}

type ourStrategy struct{ l *limit.Limiter }

func (s ourStrategy) admit(ctx context.Context) (func(bool), bool) {
	p, err := s.l.Acquire(ctx)
	if err != nil {
		return nil, false
	}
	return func(dropped bool) {
		if dropped {
			p.Done(context.DeadlineExceeded)
		} else {
			p.Done(nil)
		}
	}, true
}

type gpResult struct {
	goodput, rejected, capacity float64
	p99                         time.Duration
}

func runGoodput(s strategy, load float64) gpResult {
	d := &gpDownstream{sem: make(chan struct{}, gpServers)}
	var (
		mu         sync.Mutex
		lat        []time.Duration
		good, rej  atomic.Int64
		offered    atomic.Int64
		wg         sync.WaitGroup
		start      = time.Now()
		countAfter = start.Add(gpWarmup)
	)
	rate := load * gpCapacity
	tick := time.Millisecond
	perTick := rate * tick.Seconds()
	var owed float64
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for now := range ticker.C {
		if now.Sub(start) >= gpRun {
			break
		}
		counted := now.After(countAfter)
		owed += perTick
		for ; owed >= 1; owed-- {
			if counted {
				offered.Add(1)
			}
			done, ok := s.admit(context.Background())
			if !ok {
				if counted {
					rej.Add(1)
				}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.Now()
				d.serve()
				took := time.Since(t)
				done(took > gpDeadline)
				if !counted {
					return
				}
				if took <= gpDeadline {
					good.Add(1)
				}
				mu.Lock()
				lat = append(lat, took)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var p99 time.Duration
	if len(lat) > 0 {
		p99 = lat[len(lat)*99/100]
	}
	secs := (gpRun - gpWarmup).Seconds()
	return gpResult{goodput: float64(good.Load()) / secs, rejected: float64(rej.Load()) / float64(max(offered.Load(), 1)),
		p99: p99, capacity: d.capacity()}
}

func TestGoodput(t *testing.T) {
	if os.Getenv("GOODPUT") == "" {
		t.Skip("set GOODPUT=1 to run the wall-clock goodput comparison (about 5 minutes)")
	}
	strategies := []struct {
		name string
		make func() strategy
	}{
		{"no limit", func() strategy { return noLimit{} }},
		{"bulkhead sized right (20)", func() strategy {
			b, _ := bulkhead.New("b", bulkhead.Config{MaxConcurrent: gpServers})
			return bulkheadStrategy{b}
		}},
		{"bulkhead sized 2× (40)", func() strategy {
			b, _ := bulkhead.New("b", bulkhead.Config{MaxConcurrent: 2 * gpServers})
			return bulkheadStrategy{b}
		}},
		{"failsafe-go adaptivelimiter", func() strategy {
			return failsafeStrategy{adaptivelimiter.NewBuilder[any]().Build()}
		}},
		{"stormwatch limit (Vegas)", func() strategy {
			l, _ := limit.New("l", limit.Config{})
			return ourStrategy{l}
		}},
	}
	unloaded := runGoodput(noLimit{}, 0.5)
	t.Logf("nominal capacity %.0f calls/s (%d servers × %v), deadline %v; unloaded p99 (0.5×, no limit) %v", gpCapacity, gpServers, gpService, gpDeadline, unloaded.p99)
	// Strategies are interleaved within each round and each load, so that the machine's load
	// (shared with other work) falls on all of them alike; the table shows each figure's median
	// over the rounds.
	const rounds = 3
	fmt.Printf("| strategy | load | goodput (calls/s) | goodput / capacity | p99 | p99 / unloaded p99 | rejected |\n|---|---|---|---|---|---|---|\n")
	for _, load := range []float64{1, 2, 3} {
		res := make([][]gpResult, len(strategies))
		for round := 0; round < rounds; round++ {
			for i, s := range strategies {
				res[i] = append(res[i], runGoodput(s.make(), load))
			}
		}
		for i, s := range strategies {
			share := median(res[i], func(r gpResult) float64 { return r.goodput / r.capacity })
			good := median(res[i], func(r gpResult) float64 { return r.goodput })
			p99 := time.Duration(median(res[i], func(r gpResult) float64 { return float64(r.p99) }))
			rej := median(res[i], func(r gpResult) float64 { return r.rejected })
			fmt.Printf("| %s | %.0f× | %.0f | %.0f%% | %v | %.2f | %.0f%% |\n", s.name, load, good, 100*share,
				p99.Round(100*time.Microsecond), float64(p99)/float64(unloaded.p99), 100*rej)
		}
	}
}

func median(rs []gpResult, f func(gpResult) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	sort.Float64s(vs)
	return vs[len(vs)/2]
}
