package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
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
//	GOODPUT=1 go test -count=1 -run TestGoodput -v -timeout 40m .
//
// GOODPUT_ROUNDS (default 5), GOODPUT_LOADS (default 1,2,3) and GOODPUT_STRATEGIES (a regular
// expression matching the strategies' names, such as "failsafe|Vegas") narrow the run.
const (
	gpServers  = 20
	gpService  = 50 * time.Millisecond
	gpDeadline = 5 * gpService
	gpRun      = 14 * time.Second
	gpWarmup   = 6 * time.Second // not counted: the adaptive limiters converge (failsafe-go's moves once a second)
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
	limit                       []int // the strategy's limit, sampled every 10 ms while counted
	inflight                    []int // the calls in flight at the downstream, sampled with it
}

// limited is a strategy whose limit can be read while it runs.
type limited interface{ limit() int }

func (s failsafeStrategy) limit() int { return s.l.Limit() }
func (s ourStrategy) limit() int      { return s.l.Snapshot().Limit }

func runGoodput(s strategy, load float64) gpResult {
	d := &gpDownstream{sem: make(chan struct{}, gpServers)}
	var (
		mu         sync.Mutex
		lat        []time.Duration
		good, rej  atomic.Int64
		offered    atomic.Int64
		inflight   atomic.Int64
		wg         sync.WaitGroup
		res        gpResult
		start      = time.Now()
		countAfter = start.Add(gpWarmup)
	)
	rate := load * gpCapacity
	tick := time.Millisecond
	perTick := rate * tick.Seconds()
	var owed float64
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	nextSample := countAfter
	for now := range ticker.C {
		if now.Sub(start) >= gpRun {
			break
		}
		counted := now.After(countAfter)
		if counted && !now.Before(nextSample) {
			if l, ok := s.(limited); ok {
				res.limit = append(res.limit, l.limit())
			}
			res.inflight = append(res.inflight, int(inflight.Load()))
			nextSample = now.Add(10 * time.Millisecond)
		}
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
			inflight.Add(1)
			go func() {
				defer wg.Done()
				t := time.Now()
				d.serve()
				took := time.Since(t)
				inflight.Add(-1)
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
	if len(lat) > 0 {
		res.p99 = lat[len(lat)*99/100]
	}
	secs := (gpRun - gpWarmup).Seconds()
	res.goodput = float64(good.Load()) / secs
	res.rejected = float64(rej.Load()) / float64(max(offered.Load(), 1))
	res.capacity = d.capacity()
	return res
}

var gpStrategies = []struct {
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

// gpRow is one strategy at one load over the rounds; ratio is each round's p99 over the same
// round's unloaded p99.
type gpRow struct {
	res   []gpResult
	ratio []float64
}

func TestGoodput(t *testing.T) {
	if os.Getenv("GOODPUT") == "" {
		t.Skip("set GOODPUT=1 to run the wall-clock goodput comparison (about 20 minutes; GOODPUT_ROUNDS, GOODPUT_LOADS, GOODPUT_STRATEGIES narrow it; -count=1: a cached pass prints old numbers)")
	}
	rounds := 5
	if v := os.Getenv("GOODPUT_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			t.Fatalf("GOODPUT_ROUNDS=%q: want a positive integer", v)
		}
	}
	loads := []float64{1, 2, 3}
	if v := os.Getenv("GOODPUT_LOADS"); v != "" {
		loads = nil
		for _, f := range strings.Split(v, ",") {
			var x float64
			if _, err := fmt.Sscan(f, &x); err != nil || x <= 0 {
				t.Fatalf("GOODPUT_LOADS=%q: want loads such as 1,2,3", v)
			}
			loads = append(loads, x)
		}
	}
	names, err := regexp.Compile(os.Getenv("GOODPUT_STRATEGIES")) // the names to run; empty: all
	if err != nil {
		t.Fatalf("GOODPUT_STRATEGIES: %v", err)
	}
	rows := make(map[float64][]gpRow)
	for _, load := range loads {
		rows[load] = make([]gpRow, len(gpStrategies))
	}
	var unloaded []time.Duration
	// Every round measures the unloaded reference, then every load with every strategy, the
	// strategies in turn (reversed in odd rounds), so that the machine's load (shared with other
	// work) falls on all of them alike; each p99 is compared with its own round's reference.
	for round := 0; round < rounds; round++ {
		ref := runGoodput(noLimit{}, 0.5).p99
		unloaded = append(unloaded, ref)
		for _, load := range loads {
			for k := range gpStrategies {
				i := k
				if round%2 == 1 {
					i = len(gpStrategies) - 1 - k
				}
				if !names.MatchString(gpStrategies[i].name) {
					continue
				}
				r := runGoodput(gpStrategies[i].make(), load)
				rows[load][i].res = append(rows[load][i].res, r)
				rows[load][i].ratio = append(rows[load][i].ratio, float64(r.p99)/float64(ref))
			}
		}
		t.Logf("round %d done (unloaded p99 %v)", round+1, ref)
	}
	sort.Slice(unloaded, func(i, j int) bool { return unloaded[i] < unloaded[j] })
	fmt.Printf("nominal capacity %.0f calls/s (%d servers × %v), deadline %v, %v counted after %v of warm-up; %d rounds; unloaded p99 (0.5×, no limit) median %v, range %v–%v\n\n",
		gpCapacity, gpServers, gpService, gpDeadline, gpRun-gpWarmup, gpWarmup, rounds, unloaded[len(unloaded)/2], unloaded[0], unloaded[len(unloaded)-1])
	fmt.Printf("| strategy | load | goodput (calls/s) | goodput / capacity (range) | p99 | p99 / unloaded p99 (range) | rejected | limit mean (p10–p90) | in flight at the downstream, mean |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, load := range loads {
		for i, s := range gpStrategies {
			row := rows[load][i]
			if len(row.res) == 0 {
				continue
			}
			share := pick(row.res, func(r gpResult) float64 { return r.goodput / r.capacity })
			p99 := pick(row.res, func(r gpResult) float64 { return float64(r.p99) })
			ratio := append([]float64(nil), row.ratio...)
			sort.Float64s(ratio)
			var lims, infl []int
			for _, r := range row.res {
				lims = append(lims, r.limit...)
				infl = append(infl, r.inflight...)
			}
			fmt.Printf("| %s | %.0f× | %.0f | %.0f%% (%.0f–%.0f) | %v | %.2f (%.2f–%.2f) | %.0f%% | %s | %.1f |\n", s.name, load,
				median(pick(row.res, func(r gpResult) float64 { return r.goodput })), 100*median(share), 100*share[0], 100*share[len(share)-1],
				time.Duration(median(p99)).Round(100*time.Microsecond), median(ratio), ratio[0], ratio[len(ratio)-1],
				100*median(pick(row.res, func(r gpResult) float64 { return r.rejected })), spread(lims), meanOf(infl))
		}
	}
}

// pick returns f of every result, sorted.
func pick(rs []gpResult, f func(gpResult) float64) []float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	sort.Float64s(vs)
	return vs
}

// median returns the median of sorted values.
func median(vs []float64) float64 { return vs[len(vs)/2] }

// spread summarises sampled limits as "mean (p10–p90)", or "–" when there are none.
func spread(xs []int) string {
	if len(xs) == 0 {
		return "–"
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	return fmt.Sprintf("%.1f (%d–%d)", meanOf(s), s[len(s)/10], s[len(s)*9/10])
}

func meanOf(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(len(xs))
}
