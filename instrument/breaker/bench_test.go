package breaker

import (
	"context"
	"testing"
	"time"
)

func benchConfigs() []struct {
	name string
	cfg  Config
} {
	return []struct {
		name string
		cfg  Config
	}{
		{"count", Config{DisableDurationHistogram: true}},
		{"count_histogram", Config{}},
		{"count_slow", Config{DisableDurationHistogram: true, SlowCallDuration: time.Second}},
		{"consecutive", Config{Window: ConsecutiveFailures, DisableDurationHistogram: true}},
		{"time", Config{Window: TimeBased, DisableDurationHistogram: true}},
	}
}

func BenchmarkDoClosedSuccess(b *testing.B) {
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	for _, c := range benchConfigs() {
		br, err := New("bench", c.cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := br.Do(ctx, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"_parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := br.Do(ctx, fn); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkAllowClosedSuccess(b *testing.B) {
	br, err := New("bench", Config{DisableDurationHistogram: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		done, err := br.Acquire()
		if err != nil {
			b.Fatal(err)
		}
		done.Done(nil)
	}
}

// BenchmarkSnapshot reads a breaker as the collector does at each scrape.
func BenchmarkSnapshot(b *testing.B) {
	br, err := New("bench", Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for range 100 {
		_ = br.Do(ctx, func(context.Context) error { return nil })
	}
	b.ReportAllocs()
	for b.Loop() {
		sn := br.Snapshot()
		if sn.Calls[0] == 0 {
			b.Fatal("no calls")
		}
	}
}
