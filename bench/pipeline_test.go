package bench

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// The pipeline benchmarks measure a call that succeeds at once through retry + circuit breaker +
// bulkhead + timeout — the hot path of every protected call — for stormwatch's pipeline and
// failsafe-go's composition of the same four policies, in the same run. Both: at most 3 attempts
// with jittered exponential backoff from 100 ms, a count-based breaker, a bulkhead far larger
// than the concurrency (never waits), a 1 s per-attempt timeout. stormwatch's primitives come
// from a registry scraped in the background.

func benchPipelineConfig(breakerCfg breaker.Config) instrument.PipelineConfig {
	rc := retry.Config{}
	return instrument.PipelineConfig{
		Retry:    &rc,
		Breaker:  &breakerCfg,
		Bulkhead: &bulkhead.Config{MaxConcurrent: bulkheadBenchPermits},
		Timeout:  &timeout.Config{Timeout: time.Second},
	}
}

func stormwatchPipeline(b *testing.B, breakerCfg breaker.Config) *instrument.Pipeline {
	p, err := scrapedRegistry(b).Pipeline("bench", benchPipelineConfig(breakerCfg))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func failsafeComposition() failsafe.Executor[any] {
	rp := retrypolicy.NewBuilder[any]().
		WithMaxAttempts(3).
		WithBackoff(100*time.Millisecond, 10*time.Second).
		WithJitterFactor(0.5).
		Build()
	cb := fscircuitbreaker.NewBuilder[any]().
		WithFailureThresholdRatio(50, 100).
		WithDelay(30 * time.Second).
		Build()
	return failsafe.With[any](rp, cb, fsbulkhead.New[any](bulkheadBenchPermits), fstimeout.New[any](time.Second))
}

// pipelineCases: the default breaker records call durations (two monotonic clock reads per
// call); "nohist" turns the duration histogram off, like failsafe-go's breaker, which keeps none.
var pipelineCases = []struct {
	name string
	cfg  breaker.Config
}{
	{"stormwatch", breaker.Config{}},
	{"stormwatch_nohist", breaker.Config{DisableDurationHistogram: true}},
}

func BenchmarkPipelineSuccess(b *testing.B) {
	ctx := context.Background()
	for _, c := range pipelineCases {
		b.Run(c.name+"/Do", func(b *testing.B) {
			p := stormwatchPipeline(b, c.cfg)
			fn := func(context.Context) error { return nil }
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Do(ctx, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/Execute", func(b *testing.B) {
			p := stormwatchPipeline(b, c.cfg)
			fn := func(context.Context) (int, error) { return 1, nil }
			b.ReportAllocs()
			for b.Loop() {
				if _, err := instrument.Call(ctx, p, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafeComposition()
		fn := func() error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.Run(fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("failsafe-go/no-timeout", func(b *testing.B) {
		// retry + breaker + bulkhead only: failsafe-go's timeout starts a goroutine per call.
		rp := retrypolicy.NewBuilder[any]().WithMaxAttempts(3).
			WithBackoff(100*time.Millisecond, 10*time.Second).WithJitterFactor(0.5).Build()
		cb := fscircuitbreaker.NewBuilder[any]().WithFailureThresholdRatio(50, 100).WithDelay(30 * time.Second).Build()
		ex := failsafe.With[any](rp, cb, fsbulkhead.New[any](bulkheadBenchPermits))
		fn := func() error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.Run(fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("failsafe-go/Get", func(b *testing.B) {
		ex := failsafeComposition()
		fn := func() (any, error) { return 1, nil }
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ex.Get(fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPipelineSuccessWatched is the same call with a function that watches its context
// (ctx.Done()), as every blocking call does: the timeout then needs a real timer.
func BenchmarkPipelineSuccessWatched(b *testing.B) {
	ctx := context.Background()
	b.Run("stormwatch", func(b *testing.B) {
		p := stormwatchPipeline(b, breaker.Config{})
		fn := func(ctx context.Context) error { _ = ctx.Done(); return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Do(ctx, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafeComposition()
		fn := func(e failsafe.Execution[any]) error { _ = e.Context().Done(); return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.RunWithExecution(fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkPipelineSuccessParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("stormwatch", func(b *testing.B) {
		p := stormwatchPipeline(b, breaker.Config{})
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := p.Do(ctx, fn); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafeComposition()
		fn := func() error { return nil }
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := ex.Run(fn); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
