package hedge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// BenchmarkNoHedgeFires is the cost hedging adds to a call that answers before the delay: the
// overhead over BenchmarkPlainCall.
func BenchmarkNoHedgeFires(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  hedge.Config
	}{
		{"fixed_delay", hedge.Config{Delay: time.Second, Idempotent: true}},
		{"adaptive_delay", hedge.Config{MinDelay: time.Second, Idempotent: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h, err := hedge.New("payments", bc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			fn := func(context.Context) error { return nil }
			for range 200 { // warm the adaptive delay up
				_ = h.Do(ctx, fn)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = h.Do(ctx, fn)
			}
		})
	}
}

// BenchmarkNoHedgeFiresParallel is BenchmarkNoHedgeFires from every core at once: the calls
// share the hedge's scheduler.
func BenchmarkNoHedgeFiresParallel(b *testing.B) {
	h, err := hedge.New("payments", hedge.Config{Delay: time.Second, Idempotent: true})
	if err != nil {
		b.Fatal(err)
	}
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			_ = h.Do(ctx, fn)
		}
	})
}

// BenchmarkPlainCall is the same call without a hedge.
func BenchmarkPlainCall(b *testing.B) {
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		_ = fn(ctx)
	}
}
