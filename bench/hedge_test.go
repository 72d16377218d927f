package bench

import (
	"context"
	"math/rand/v2"
	"slices"
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

// runStragglers makes calls through do from 4 goroutines (b.N in all) and reports the p50 and
// p99 call latency and the extra attempts hedging added, in percent of the calls.
func runStragglers(b *testing.B, do func(ctx context.Context, s *stragglers) error) {
	s := newStragglers()
	ctx := context.Background()
	for range 300 { // warm the adaptive delays up
		_ = do(ctx, s)
	}
	s.attempts.Store(0)
	var mu sync.Mutex
	var lat []time.Duration
	var calls atomic.Int64
	b.SetParallelism(2) // 4 callers on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			_ = do(ctx, s)
			mine = append(mine, time.Since(start))
			calls.Add(1)
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(100*(float64(s.attempts.Load())/float64(calls.Load())-1), "extra_%")
}

// BenchmarkHedgeStragglers: p99 and extra load with no hedging, failsafe-go's hedge policy
// (p95 delay, the same window) and stormwatch's hedge (p95 delay). Run with -benchtime 3000x.
func BenchmarkHedgeStragglers(b *testing.B) {
	b.Run("none", func(b *testing.B) {
		runStragglers(b, func(ctx context.Context, s *stragglers) error { return s.call(ctx) })
	})
	b.Run("failsafe-go", func(b *testing.B) {
		hp := hedgepolicy.NewBuilderWithDelayQuantile[any](0.95, 200, 100).Build()
		ex := failsafe.With[any](hp)
		runStragglers(b, func(ctx context.Context, s *stragglers) error {
			return ex.WithContext(ctx).RunWithExecution(func(exec failsafe.Execution[any]) error {
				return s.call(exec.Context())
			})
		})
	})
	b.Run("stormwatch", func(b *testing.B) {
		h, err := hedge.New("stragglers", hedge.Config{Idempotent: true, MinDelay: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		runStragglers(b, func(ctx context.Context, s *stragglers) error { return h.Do(ctx, s.call) })
		sn := h.Snapshot()
		b.ReportMetric(float64(sn.Delay)/1e6, "delay_ms")
	})
}

// BenchmarkHedgeNoneFires is the cost of a call that answers before the hedge delay, against
// the plain call and failsafe-go's hedge policy.
func BenchmarkHedgeNoneFires(b *testing.B) {
	fn := func(context.Context) error { return nil }
	ctx := context.Background()
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = fn(ctx)
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafe.With[any](hedgepolicy.NewWithDelay[any](time.Second))
		b.ReportAllocs()
		for b.Loop() {
			_ = ex.RunWithExecution(func(exec failsafe.Execution[any]) error { return fn(exec.Context()) })
		}
	})
	b.Run("stormwatch", func(b *testing.B) {
		h, err := hedge.New("fast", hedge.Config{Delay: time.Second, Idempotent: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = h.Do(ctx, fn)
		}
	})
}
