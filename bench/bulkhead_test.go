package bench

import (
	"context"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"

	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
)

// The bulkhead benchmarks measure one admission and release on an uncontended bulkhead (a permit
// is always free), serially and from parallel goroutines, for stormwatch and failsafe-go in the
// same run. The permit count is far above GOMAXPROCS so that no caller ever waits.
const bulkheadBenchPermits = 1 << 20

func BenchmarkBulkheadAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("stormwatch", func(b *testing.B) {
		bh, err := bulkhead.New("dep", bulkhead.Config{MaxConcurrent: bulkheadBenchPermits})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			release, err := bh.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			release.Done()
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		bh := fsbulkhead.New[any](bulkheadBenchPermits)
		b.ReportAllocs()
		for b.Loop() {
			if err := bh.AcquirePermit(ctx); err != nil {
				b.Fatal(err)
			}
			bh.ReleasePermit()
		}
	})
	b.Run("failsafe-go/try", func(b *testing.B) {
		bh := fsbulkhead.New[any](bulkheadBenchPermits)
		b.ReportAllocs()
		for b.Loop() {
			if !bh.TryAcquirePermit() {
				b.Fatal("full")
			}
			bh.ReleasePermit()
		}
	})
}

func BenchmarkBulkheadAcquireReleaseParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("stormwatch", func(b *testing.B) {
		bh, err := bulkhead.New("dep", bulkhead.Config{MaxConcurrent: bulkheadBenchPermits})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				release, err := bh.Acquire(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				release.Done()
			}
		})
	})
	b.Run("failsafe-go", func(b *testing.B) {
		bh := fsbulkhead.New[any](bulkheadBenchPermits)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := bh.AcquirePermit(ctx); err != nil {
					b.Error(err)
					return
				}
				bh.ReleasePermit()
			}
		})
	})
}

// BenchmarkBulkheadRun is the closure form: stormwatch's Do against failsafe-go's executor.
func BenchmarkBulkheadRun(b *testing.B) {
	ctx := context.Background()
	b.Run("stormwatch", func(b *testing.B) {
		bh, err := bulkhead.New("dep", bulkhead.Config{MaxConcurrent: bulkheadBenchPermits})
		if err != nil {
			b.Fatal(err)
		}
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := bh.Do(ctx, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafe.With[any](fsbulkhead.New[any](bulkheadBenchPermits))
		fn := func() error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.Run(fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
