package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// bulkheadPart exports the bulkhead metrics of the catalog for every bulkhead in the registry.
// permitted and rejected start at 0, aborted (a caller cancelled while waiting) appears once it
// has occurred; the wait histogram has the catalog's classic WaitBuckets.
type bulkheadPart struct {
	reg                              *instrument.Registry
	maxConcurrent, inflight, waiting *prometheus.Desc
	calls, waitDuration              *prometheus.Desc
}

func newBulkheadPart(c *Collector) *bulkheadPart {
	return &bulkheadPart{
		reg:           c.reg,
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
		ch <- prometheus.MustNewConstMetric(p.maxConcurrent, prometheus.GaugeValue, float64(sn.MaxConcurrent), name)
		ch <- prometheus.MustNewConstMetric(p.inflight, prometheus.GaugeValue, float64(sn.InFlight), name)
		ch <- prometheus.MustNewConstMetric(p.waiting, prometheus.GaugeValue, float64(sn.Waiting), name)
		for _, a := range catalog.Admissions {
			if a == catalog.AdmissionAborted && sn.Calls[a] == 0 {
				continue
			}
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(sn.Calls[a]), name, a.String())
		}
		ch <- prometheus.MustNewConstHistogram(p.waitDuration, sn.Wait.Count, sn.Wait.Sum,
			sn.Wait.Cumulative(catalog.WaitBuckets), name)
	}
}
