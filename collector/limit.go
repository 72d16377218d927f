package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// limitPart exports the adaptive limiter and client-side throttle metrics of the catalog for
// every limiter and throttle in the registry. Every series exists from the start (the generated
// alerts feed the counters to rate()): 16 per limiter — limit, min_limit, inflight_calls,
// queued_calls, baseline and sample latency, 3 admission kinds, 4 rejection reasons, 3 sample
// kinds — and 4 per throttle (the probability and 3 kinds).
type limitPart struct {
	reg                                *instrument.Registry
	limit, minLimit, inflight, queued  *prometheus.Desc
	baseline, sample                   *prometheus.Desc
	calls, rejections, samples         *prometheus.Desc
	throttleProbability, throttleCalls *prometheus.Desc
}

func newLimitPart(c *Collector) *limitPart {
	return &limitPart{
		reg:                 c.reg,
		limit:               c.desc(catalog.LimiterLimit),
		minLimit:            c.desc(catalog.LimiterMinLimit),
		inflight:            c.desc(catalog.LimiterInflight),
		queued:              c.desc(catalog.LimiterQueued),
		baseline:            c.desc(catalog.LimiterBaselineLatency),
		sample:              c.desc(catalog.LimiterSampleLatency),
		calls:               c.desc(catalog.LimiterCalls),
		rejections:          c.desc(catalog.LimiterRejections),
		samples:             c.desc(catalog.LimiterSamples),
		throttleProbability: c.desc(catalog.ThrottleProbability),
		throttleCalls:       c.desc(catalog.ThrottleCalls),
	}
}

func (p *limitPart) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.limit, p.minLimit, p.inflight, p.queued, p.baseline, p.sample,
		p.calls, p.rejections, p.samples, p.throttleProbability, p.throttleCalls} {
		ch <- d
	}
}

func (p *limitPart) collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	for _, nl := range p.reg.Limiters() {
		sn, name := nl.Value.Snapshot(), nl.Name
		gauge(p.limit, float64(sn.Limit), name)
		gauge(p.minLimit, float64(sn.MinLimit), name)
		gauge(p.inflight, float64(sn.InFlight), name)
		gauge(p.queued, float64(sn.Queued), name)
		gauge(p.baseline, sn.Baseline.Seconds(), name)
		gauge(p.sample, sn.Sample.Seconds(), name)
		for _, a := range catalog.Admissions {
			counter(p.calls, sn.Calls[a], name, a.String())
		}
		for _, r := range catalog.LimitReasons {
			counter(p.rejections, sn.Rejections[r], name, r.String())
		}
		for _, k := range catalog.SampleKinds {
			counter(p.samples, sn.Samples[k], name, k.String())
		}
	}
	for _, nt := range p.reg.Throttles() {
		sn, name := nt.Value.Snapshot(), nt.Name
		gauge(p.throttleProbability, sn.Probability, name)
		for _, k := range catalog.ThrottleKinds {
			counter(p.throttleCalls, sn.Calls[k], name, k.String())
		}
	}
}
