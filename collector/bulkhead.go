package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// bulkheadPart exports the bulkhead metrics of the catalog for every bulkhead in the registry:
// the configured and in-use permits, the wait histogram, and the admissions and number of
// callers waiting that the collector's Policy selects (see Policy.Bulkhead). The number waiting
// is full detail only: the generated dashboards read the average number waiting from the wait
// histogram's sum (its rate is the mean queue length, by Little's law), a time average where
// the gauge is a sample taken at scrape time.
type bulkheadPart struct {
	reg                              *instrument.Registry
	policy                           Policy
	bounds                           []float64
	maxConcurrent, inflight, waiting *prometheus.Desc
	calls, waitDuration              *prometheus.Desc
}

func newBulkheadPart(c *Collector) *bulkheadPart {
	return &bulkheadPart{
		reg:           c.reg,
		policy:        Policy{FullDetail: c.full},
		bounds:        c.bounds(waitBounds, waitDefaultBounds),
		maxConcurrent: c.desc(catalog.BulkheadMaxConcurrent),
		inflight:      c.desc(catalog.BulkheadInflight),
		waiting:       c.desc(catalog.BulkheadWaiting),
		calls:         c.desc(catalog.BulkheadCalls),
		waitDuration:  c.desc(catalog.BulkheadWaitDuration),
	}
}

func (p *bulkheadPart) describe(ch chan<- *prometheus.Desc) {
	ch <- p.maxConcurrent
	ch <- p.inflight
	ch <- p.waiting
	ch <- p.calls
	ch <- p.waitDuration
}

func (p *bulkheadPart) collect(ch chan<- prometheus.Metric) {
	for _, nb := range p.reg.Bulkheads() {
		sn := nb.Value.Snapshot()
		name := nb.Name
		ser := p.policy.Bulkhead(&sn)
		ch <- prometheus.MustNewConstMetric(p.maxConcurrent, prometheus.GaugeValue, float64(sn.MaxConcurrent), name)
		ch <- prometheus.MustNewConstMetric(p.inflight, prometheus.GaugeValue, float64(sn.InFlight), name)
		if ser.Waiting {
			ch <- prometheus.MustNewConstMetric(p.waiting, prometheus.GaugeValue, float64(sn.Waiting), name)
		}
		for _, a := range catalog.Admissions {
			if !ser.Calls[a] {
				continue
			}
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(sn.Calls[a]), name, a.String())
		}
		ch <- newConstHistogram(p.waitDuration, &sn.Wait, p.bounds, name)
	}
}
