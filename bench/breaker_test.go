// Package bench compares stormwatch's primitives with peer libraries. It is a separate module so
// that the peers never enter the main module's dependencies.
package bench

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

// scrapeInterval is how often the background scraper gathers while a breaker benchmark runs.
const scrapeInterval = 10 * time.Millisecond

// scrapedRegistry returns a registry whose collector a background goroutine gathers every
// scrapeInterval until the benchmark ends, so the measured calls run against live scrapes.
func scrapedRegistry(b *testing.B) *instrument.Registry {
	b.Helper()
	reg, err := instrument.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	c, err := collector.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	pr := prometheus.NewRegistry()
	pr.MustRegister(c)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(scrapeInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, err := pr.Gather(); err != nil {
					b.Error(err)
					return
				}
			}
		}
	}()
	b.Cleanup(func() { close(stop); <-done })
	return reg
}

// stormwatchCases are the breaker configurations benchmarked, named as in bench/README.md.
var stormwatchCases = []struct {
	name string
	cfg  breaker.Config
}{
	// Count window, slow-call detection off, histogram off: no clock read on the closed path.
	{"stormwatch_count", breaker.Config{DisableDurationHistogram: true}},
	// Count window with slow-call detection: two monotonic clock reads per call.
	{"stormwatch_count_slow", breaker.Config{DisableDurationHistogram: true, SlowCallDuration: time.Second}},
	// Time window (60 s in 1 s buckets): one monotonic clock read per call.
	{"stormwatch_time", breaker.Config{Window: breaker.TimeBased, DisableDurationHistogram: true}},
	// The zero Config: count window with the call duration histogram on.
	{"stormwatch_default", breaker.Config{}},
}

var errSink error

func BenchmarkBreakerClosedSuccess(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	for _, c := range stormwatchCases {
		b.Run(c.name, func(b *testing.B) {
			reg := scrapedRegistry(b)
			br, err := reg.Breaker("downstream", c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			runBoth(b, func() error { return br.Do(ctx, ok) })
		})
	}
	b.Run("gobreaker", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "downstream"})
		okFn := func() (struct{}, error) { return struct{}{}, nil }
		runBoth(b, func() error { _, err := cb.Execute(okFn); return err })
	})
	b.Run("failsafe", func(b *testing.B) {
		cb := circuitbreaker.NewBuilder[any]().WithFailureThresholdRatio(50, 100).Build()
		exec := failsafe.With[any](cb)
		okFn := func() error { return nil }
		runBoth(b, func() error { return exec.Run(okFn) })
	})
}

// runBoth runs call serially and under RunParallel. Next to the wall ns/op it reports the
// process's CPU time per call (cpu-ns/op): on a machine shared with other work, wall time counts
// the waits for a core, CPU time does not (it includes the background scraper's, ~0.1 %).
func runBoth(b *testing.B, call func() error) {
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			var err error
			for pb.Next() {
				err = call()
			}
			errSink = err
		})
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	})
}
