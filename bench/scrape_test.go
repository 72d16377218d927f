package bench

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/collector"
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

// stormwatchGatherer returns a registry gathering n stormwatch breakers (the zero
// breaker.Config), each with one successful call recorded, through the collector built with
// opts.
func stormwatchGatherer(b testing.TB, n int, opts ...collector.Option) prometheus.Gatherer {
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
	c, err := collector.New(reg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	pr := prometheus.NewRegistry()
	pr.MustRegister(c)
	return pr
}

// vecGatherer returns a registry holding the same breaker series as stormwatchGatherer (with
// the default collector, or with full detail) in client_golang GaugeVec, CounterVec and
// HistogramVec metrics: by default 11 series per breaker — the closed, open and half_open
// states, the two trips, tripped_since (cause ""), the successful and failed calls,
// not-permitted calls, the native histogram of successful call durations and the failure rate;
// with full detail 43 — six states, 23 transitions, five call kinds, both duration kinds as
// native histograms with classic buckets, and the five ratio and configuration gauges.
func vecGatherer(b testing.TB, n int, full bool) prometheus.Gatherer {
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
	hopts := prometheus.HistogramOpts{Name: name, Help: help,
		// client_golang picks the coarsest schema whose factor is at most this one: 2^(1/4) =
		// 1.1892… (schema 2) fits in 1.19, not in itself (rounding).
		NativeHistogramBucketFactor:  1.19,
		NativeHistogramZeroThreshold: catalog.NativeZeroThreshold}
	hopts.Buckets = catalog.DefaultBuckets(catalog.BreakerCallDuration) // the collector's default classic bounds
	if full {
		hopts.Buckets = catalog.DurationBuckets
	}
	duration := prometheus.NewHistogramVec(hopts, labels)
	state, transitions, tripped := gauge(catalog.BreakerState), counter(catalog.BreakerTransitions), gauge(catalog.BreakerTrippedSince)
	calls, notPermitted := counter(catalog.BreakerCalls), counter(catalog.BreakerNotPermitted)
	failureRate, slowRate := gauge(catalog.BreakerFailureRate), gauge(catalog.BreakerSlowCallRate)
	failureThr, slowThr, openDur := gauge(catalog.BreakerFailureRateThreshold), gauge(catalog.BreakerSlowCallRateThreshold), gauge(catalog.BreakerOpenDuration)
	pr := prometheus.NewRegistry()
	pr.MustRegister(state, transitions, tripped, calls, notPermitted, duration, failureRate)
	if full {
		pr.MustRegister(slowRate, failureThr, slowThr, openDur)
	}
	for _, nm := range breakerNames(n) {
		for _, s := range catalog.States {
			if !full && s > catalog.StateHalfOpen {
				continue
			}
			v := 0.0
			if s == catalog.StateClosed {
				v = 1
			}
			state.WithLabelValues(nm, s.String()).Set(v)
			for _, to := range catalog.States {
				if catalog.CanTransition(s, to) && (full || to == catalog.StateOpen) {
					transitions.WithLabelValues(nm, s.String(), to.String())
				}
			}
		}
		tripped.WithLabelValues(nm, "").Set(0)
		for _, k := range catalog.CallKinds {
			if full || k == catalog.CallSuccessful || k == catalog.CallFailed {
				calls.WithLabelValues(nm, k.String())
			}
		}
		calls.WithLabelValues(nm, catalog.CallSuccessful.String()).Inc()
		notPermitted.WithLabelValues(nm)
		duration.WithLabelValues(nm, catalog.CallSuccessful.String()).Observe(0.001)
		if full {
			duration.WithLabelValues(nm, catalog.CallFailed.String())
		}
		failureRate.WithLabelValues(nm).Set(math.NaN())
		if full {
			slowRate.WithLabelValues(nm).Set(math.NaN())
			failureThr.WithLabelValues(nm).Set(0.5)
			slowThr.WithLabelValues(nm).Set(0.8)
			openDur.WithLabelValues(nm).Set(30)
		}
	}
	return pr
}

// layout describes a gathered registry: per family, its type and the label sets of its series;
// for histograms, whether they are native and how many classic buckets they have.
func layout(b testing.TB, g prometheus.Gatherer) (map[string][]string, int) {
	mfs, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string][]string{}
	n := 0
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), catalog.DefaultNamespace+"_"+string(catalog.CircuitBreaker)) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			s := mf.GetType().String() + "{" + strings.Join(ls, ",") + "}"
			if h := m.GetHistogram(); h != nil {
				s += fmt.Sprintf(" native=%t classic=%d", h.GetSchema() == catalog.NativeSchema && h.GetZeroThreshold() == catalog.NativeZeroThreshold, len(h.GetBucket()))
			}
			out[mf.GetName()] = append(out[mf.GetName()], s)
			n++
		}
		sort.Strings(out[mf.GetName()])
	}
	return out, n
}

// TestScrapeEquivalents checks that both sides of BenchmarkScrape export the same breaker
// series — families, types, label sets, histogram forms — by default (11 per breaker) and with
// full detail (43 per breaker).
func TestScrapeEquivalents(t *testing.T) {
	for _, tc := range []struct {
		full bool
		per  int
	}{{false, 11}, {true, 43}} {
		var opts []collector.Option
		if tc.full {
			opts = append(opts, collector.WithFullDetail())
		}
		sw, nsw := layout(t, stormwatchGatherer(t, 100, opts...))
		vec, nvec := layout(t, vecGatherer(t, 100, tc.full))
		if nsw != 100*tc.per || nvec != 100*tc.per {
			t.Fatalf("full=%t: stormwatch exports %d breaker series, the Vec equivalent %d; want %d", tc.full, nsw, nvec, 100*tc.per)
		}
		for family, series := range sw {
			if strings.Join(series, "\n") != strings.Join(vec[family], "\n") {
				t.Errorf("full=%t: %s differs:\nstormwatch %v\nvec        %v", tc.full, family, series[:min(3, len(series))], vec[family][:min(3, len(vec[family]))])
			}
		}
		if len(sw) != len(vec) {
			t.Errorf("full=%t: %d families against %d", tc.full, len(sw), len(vec))
		}
	}
}

// BenchmarkScrape measures one Gather of n breakers' series, after a first one: stormwatch's
// collector (default and full detail) against the same series held in client_golang Vecs.
func BenchmarkScrape(b *testing.B) {
	for _, detail := range []string{"default", "full"} {
		full := detail == "full"
		for _, impl := range []struct {
			name string
			make func(testing.TB, int) prometheus.Gatherer
		}{
			{"stormwatch", func(b testing.TB, n int) prometheus.Gatherer {
				if full {
					return stormwatchGatherer(b, n, collector.WithFullDetail())
				}
				return stormwatchGatherer(b, n)
			}},
			{"vec", func(b testing.TB, n int) prometheus.Gatherer { return vecGatherer(b, n, full) }},
		} {
			for _, n := range scrapeSizes {
				b.Run(fmt.Sprintf("%s/%s/%d", impl.name, detail, n), func(b *testing.B) {
					g := impl.make(b, n)
					// The first scrape builds the per-breaker series once; the loop measures the
					// scrapes that follow.
					if _, err := g.Gather(); err != nil {
						b.Fatal(err)
					}
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
}
