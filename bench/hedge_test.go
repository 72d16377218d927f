package bench

import (
	"context"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// stragglers is a simulated downstream whose attempts answer in fast time, except a share
// (stragglerShare) that takes slow: a slow server, a GC pause, a lost packet. Each attempt
// draws its own latency and stops when its context is cancelled. It counts the attempts.
type stragglers struct {
	fast, slow time.Duration
	attempts   atomic.Int64
	mu         sync.Mutex
	rng        *rand.Rand
}

const stragglerShare = 0.05

func newStragglers() *stragglers {
	return &stragglers{fast: 2 * time.Millisecond, slow: 40 * time.Millisecond, rng: rand.New(rand.NewPCG(1, 2))}
}

func (s *stragglers) call(ctx context.Context) error {
	s.attempts.Add(1)
	s.mu.Lock()
	d := s.fast
	if s.rng.Float64() < stragglerShare {
		d = s.slow
	}
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hedgeVariant is one way of calling the straggling downstream, with a downstream of its own.
type hedgeVariant struct {
	name string
	do   func(ctx context.Context, s *stragglers) error
	s    *stragglers
	lat  []time.Duration
	mu   sync.Mutex
}

// block makes n calls through v from 4 goroutines and records their latencies.
func (v *hedgeVariant) block(n int) {
	const callers = 4
	var wg sync.WaitGroup
	var next atomic.Int64
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(1) <= int64(n) {
				start := time.Now()
				_ = v.do(context.Background(), v.s)
				mine = append(mine, time.Since(start))
			}
			v.mu.Lock()
			v.lat = append(v.lat, mine...)
			v.mu.Unlock()
		}()
	}
	wg.Wait()
}

// report reports v's p50 and p99 call latency, the share of calls that took more than half the
// straggler latency (stragglers no hedge rescued, in percent) and the extra attempts hedging
// added, in percent of the calls, and returns the p99 and the extra load.
func (v *hedgeVariant) report(b *testing.B) (p99, extra float64) {
	slices.Sort(v.lat)
	q := func(p float64) float64 { return float64(v.lat[int(p*float64(len(v.lat)-1))]) / 1e6 }
	p99 = q(0.99)
	extra = 100 * (float64(v.s.attempts.Load())/float64(len(v.lat)) - 1)
	slow := len(v.lat) - sort.Search(len(v.lat), func(i int) bool { return v.lat[i] > v.s.slow/2 })
	b.ReportMetric(q(0.50), v.name+"_p50_ms")
	b.ReportMetric(100*float64(slow)/float64(len(v.lat)), v.name+"_slow_%")
	b.ReportMetric(p99, v.name+"_p99_ms")
	b.ReportMetric(extra, v.name+"_extra_%")
	return p99, extra
}

// BenchmarkHedgeStragglers: p99 and extra load with no hedging, failsafe-go's hedge policy (p95
// delay, the same window) and stormwatch's hedge (its zero Config, marked idempotent), measured
// in one run: each makes b.N calls from 4 callers (on 2 CPUs), in blocks of 100 that take turns,
// so a burst of load from the rest of the machine hits all three alike. Each warms up with 300
// calls first. Run with -benchtime 3000x.
func BenchmarkHedgeStragglers(b *testing.B) {
	hp := hedgepolicy.NewBuilderWithDelayQuantile[any](0.95, 200, 100).Build()
	ex := failsafe.With[any](hp)
	h, err := hedge.New("stragglers", hedge.Config{Idempotent: true})
	if err != nil {
		b.Fatal(err)
	}
	variants := []*hedgeVariant{
		{name: "none", do: func(ctx context.Context, s *stragglers) error { return s.call(ctx) }},
		{name: "failsafe", do: func(ctx context.Context, s *stragglers) error {
			return ex.WithContext(ctx).RunWithExecution(func(exec failsafe.Execution[any]) error {
				return s.call(exec.Context())
			})
		}},
		{name: "ours", do: func(ctx context.Context, s *stragglers) error { return h.Do(ctx, s.call) }},
	}
	for _, v := range variants {
		v.s = newStragglers()
		v.block(300) // warm the adaptive delays up
		v.lat, v.s.attempts = nil, atomic.Int64{}
	}
	const blockSize = 100
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; done, round = done+blockSize, round+1 {
		n := min(blockSize, b.N-done)
		for i := range variants {
			variants[(i+round)%len(variants)].block(n)
		}
	}
	b.StopTimer()
	p99none, _ := variants[0].report(b)
	for _, v := range variants[1:] {
		p99, _ := v.report(b)
		b.ReportMetric(100*(1-p99/p99none), v.name+"_p99_cut_%")
	}
	b.ReportMetric(float64(h.Snapshot().Delay)/1e6, "ours_delay_ms")
}

// noneFiresVariants are the ways of making a call that answers at once, which no hedge fires
// for: directly, the floor of any per-call timer (the call plus one wall-clock timer armed and
// stopped), stormwatch's hedge with a fixed delay and with an adaptive one (both 1 s, never
// reached), and failsafe-go's hedge policy (1 s).
func noneFiresVariants(b *testing.B) []noneFires {
	fn := func(context.Context) error { return nil }
	timer := time.AfterFunc(time.Hour, func() {})
	timer.Stop()
	fixed, err := hedge.New("fixed", hedge.Config{Delay: time.Second, Idempotent: true})
	if err != nil {
		b.Fatal(err)
	}
	adaptive, err := hedge.New("adaptive", hedge.Config{MinDelay: time.Second, Idempotent: true})
	if err != nil {
		b.Fatal(err)
	}
	for range 200 { // past the adaptive delay's warm-up
		_ = adaptive.Do(context.Background(), fn)
	}
	ex := failsafe.With[any](hedgepolicy.NewWithDelay[any](time.Second))
	return []noneFires{
		{"direct", func(ctx context.Context) { _ = fn(ctx) }},
		{"timer_floor", func(ctx context.Context) { timer.Reset(time.Second); _ = fn(ctx); timer.Stop() }},
		{"stormwatch", func(ctx context.Context) { _ = fixed.Do(ctx, fn) }},
		{"stormwatch_adaptive", func(ctx context.Context) { _ = adaptive.Do(ctx, fn) }},
		{"failsafe-go", func(ctx context.Context) {
			_ = ex.WithContext(ctx).RunWithExecution(func(exec failsafe.Execution[any]) error { return fn(exec.Context()) })
		}},
	}
}

type noneFires struct {
	name string
	call func(context.Context)
}

// BenchmarkHedgeNoneFires is the cost of a call that answers before the hedge delay, each way
// in a sub-benchmark of its own (for its allocations).
func BenchmarkHedgeNoneFires(b *testing.B) {
	ctx := context.Background()
	for _, v := range noneFiresVariants(b) {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.call(ctx)
			}
		})
	}
}

// BenchmarkHedgeClosedPathOverhead measures the closed-path overhead: what a call that no hedge
// fires for costs more than the same call made directly, in the same run. Every way of calling
// makes b.N calls in blocks of 256 that take turns, each block timed on its own; a way's cost is
// the median of its blocks' ns per call — a block the machine interrupted (another process, a
// GC cycle) is an outlier the median leaves out, so the figure is the path's own cost even on a
// shared machine. It reports each way's median (*_ns) and ours minus direct (*_overhead_ns).
func BenchmarkHedgeClosedPathOverhead(b *testing.B) {
	med := medianOfBlocks(b, noneFiresVariants(b))
	for _, name := range []string{"timer_floor", "stormwatch", "stormwatch_adaptive", "failsafe-go"} {
		b.ReportMetric(med[name]-med["direct"], name+"_overhead_ns")
	}
}

// BenchmarkHedgeClosedPathParts measures, the same way, what the closed path is made of: a
// monotonic clock read, an uncontended lock taken and released, a 48-byte allocation with
// pointers (the first attempt's context), and an atomic add.
func BenchmarkHedgeClosedPathParts(b *testing.B) {
	start := time.Now()
	var mu sync.Mutex
	var n atomic.Int64
	type ctxLike struct {
		parent context.Context
		inner  *context.Context
		mu     sync.Mutex
		cancel context.CancelFunc
	}
	var sinkD time.Duration
	var sinkP *ctxLike
	medianOfBlocks(b, []noneFires{
		{"direct", func(context.Context) {}},
		{"clock_read", func(context.Context) { sinkD += time.Since(start) }},
		{"lock_unlock", func(context.Context) { mu.Lock(); mu.Unlock() }},
		{"alloc_48B", func(ctx context.Context) { sinkP = &ctxLike{parent: ctx} }},
		{"atomic_add", func(context.Context) { n.Add(1) }},
	})
	_, _ = sinkD, sinkP
}

// medianOfBlocks makes b.N calls each way in blocks of 256 that take turns, times every block,
// reports each way's median ns per call (*_ns) and returns them by name.
func medianOfBlocks(b *testing.B, variants []noneFires) map[string]float64 {
	const block = 256
	ctx := context.Background()
	per := make([][]float64, len(variants))
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; done, round = done+block, round+1 {
		n := min(block, b.N-done)
		for k := range variants {
			i := (k + round) % len(variants)
			start := time.Now()
			for range n {
				variants[i].call(ctx)
			}
			per[i] = append(per[i], float64(time.Since(start))/float64(n))
		}
	}
	b.StopTimer()
	med := make(map[string]float64, len(variants))
	for i, v := range variants {
		slices.Sort(per[i])
		med[v.name] = per[i][len(per[i])/2]
		b.ReportMetric(med[v.name], v.name+"_ns")
	}
	return med
}
