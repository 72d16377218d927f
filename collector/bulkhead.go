package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// bulkheadPart exports the bulkhead metrics of the catalog for every bulkhead in the registry:
// the configured and in-use permits, the permitted and rejected admissions from 0 (aborted — a
// caller cancelled while waiting — once it has occurred) and the wait histogram. The number of
// callers waiting is exported in full detail only: the generated dashboards read the average
// number waiting from the wait histogram's sum (its rate is the mean queue length, by Little's
// law), a time average where the gauge is a sample taken at scrape time.
type bulkheadPart struct {
	reg                              *instrument.Registry
	full                             bool
	bounds                           []float64
	maxConcurrent, inflight, waiting *prometheus.Desc
	calls, waitDuration              *prometheus.Desc
}

func newBulkheadPart(c *Collector) *bulkheadPart {
	return &bulkheadPart{
		reg:           c.reg,
		full:          c.full,
		bounds:        c.bounds(waitBounds),
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
		if p.full {
			ch <- prometheus.MustNewConstMetric(p.waiting, prometheus.GaugeValue, float64(sn.Waiting), name)
		}
		for _, a := range catalog.Admissions {
			if a == catalog.AdmissionAborted && sn.Calls[a] == 0 && !p.full {
				continue
			}
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(sn.Calls[a]), name, a.String())
		}
		ch <- newConstHistogram(p.waitDuration, &sn.Wait, p.bounds, name)
	}
}
