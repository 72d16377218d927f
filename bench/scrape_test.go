package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

var scrapeSizes = []int{1000, 10000}

func breakerNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("dependency-%05d", i)
	}
	return names
}

// stormwatchGatherer returns a registry gathering n stormwatch breakers, each with one call
// recorded.
func stormwatchGatherer(b testing.TB, n int) prometheus.Gatherer {
	reg, err := instrument.NewRegistry(instrument.WithMaxNames(n))
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range breakerNames(n) {
		br, err := reg.Breaker(name, breaker.Config{})
		if err != nil {
			b.Fatal(err)
		}
		_ = br.Do(context.Background(), func(context.Context) error { return nil })
	}
	c, err := collector.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	pr := prometheus.NewRegistry()
	pr.MustRegister(c)
	return pr
}

// vecGatherer returns a registry holding the same breaker series as stormwatchGatherer in
// client_golang GaugeVec, CounterVec and HistogramVec metrics.
func vecGatherer(b testing.TB, n int) prometheus.Gatherer {
	ns := catalog.DefaultNamespace
	opts := func(m catalog.Metric) (string, string, []string) { return m.FullName(ns), m.Help, m.LabelNames() }
	gauge := func(m catalog.Metric) *prometheus.GaugeVec {
		name, help, labels := opts(m)
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	counter := func(m catalog.Metric) *prometheus.CounterVec {
		name, help, labels := opts(m)
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	name, help, labels := opts(catalog.BreakerCallDuration)
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: catalog.DurationBuckets}, labels)
	state, transitions, tripped := gauge(catalog.BreakerState), counter(catalog.BreakerTransitions), gauge(catalog.BreakerTrippedSince)
	calls, notPermitted := counter(catalog.BreakerCalls), counter(catalog.BreakerNotPermitted)
	failureRate, slowRate := gauge(catalog.BreakerFailureRate), gauge(catalog.BreakerSlowCallRate)
	failureThr, slowThr, openDur := gauge(catalog.BreakerFailureRateThreshold), gauge(catalog.BreakerSlowCallRateThreshold), gauge(catalog.BreakerOpenDuration)
	pr := prometheus.NewRegistry()
	pr.MustRegister(state, transitions, tripped, calls, notPermitted, duration, failureRate, slowRate, failureThr, slowThr, openDur)
	for _, nm := range breakerNames(n) {
		for _, s := range catalog.States {
			v := 0.0
			if s == catalog.StateClosed {
				v = 1
			}
			state.WithLabelValues(nm, s.String()).Set(v)
			for _, to := range catalog.States {
				if breaker.CanTransition(s, to) {
					transitions.WithLabelValues(nm, s.String(), to.String())
				}
			}
		}
		tripped.WithLabelValues(nm).Set(0)
		for _, k := range catalog.CallKinds {
			calls.WithLabelValues(nm, k.String())
		}
		calls.WithLabelValues(nm, catalog.CallSuccessful.String()).Inc()
		notPermitted.WithLabelValues(nm)
		duration.WithLabelValues(nm, "successful").Observe(0.001)
		duration.WithLabelValues(nm, "failed")
		failureRate.WithLabelValues(nm).Set(0)
		slowRate.WithLabelValues(nm).Set(0)
		failureThr.WithLabelValues(nm).Set(0.5)
		slowThr.WithLabelValues(nm).Set(0.8)
		openDur.WithLabelValues(nm).Set(30)
	}
	return pr
}

func seriesCount(b testing.TB, g prometheus.Gatherer) int {
	mfs, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}

// TestScrapeEquivalents checks that both sides of BenchmarkScrape export the same breaker
// series: 43 per breaker. stormwatch adds the registry's five overflow counters.
func TestScrapeEquivalents(t *testing.T) {
	sw, vec := seriesCount(t, stormwatchGatherer(t, 100)), seriesCount(t, vecGatherer(t, 100))
	if sw != vec+len(catalog.Primitives) || vec != 100*43 {
		t.Fatalf("stormwatch exports %d series, the Vec equivalent %d; want %d and %d", sw, vec, 100*43+len(catalog.Primitives), 100*43)
	}
}

// BenchmarkScrape measures one Gather of n breakers' series: stormwatch's collector against the
// same series held in client_golang Vecs.
func BenchmarkScrape(b *testing.B) {
	for _, impl := range []struct {
		name string
		make func(testing.TB, int) prometheus.Gatherer
	}{{"stormwatch", stormwatchGatherer}, {"vec", vecGatherer}} {
		for _, n := range scrapeSizes {
			b.Run(fmt.Sprintf("%s/%d", impl.name, n), func(b *testing.B) {
				g := impl.make(b, n)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := g.Gather(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
