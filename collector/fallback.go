package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// fallbackPart exports resilience_fallback_calls_total{name,cause} for every fallback in the
// registry, every cause from 0.
type fallbackPart struct {
	reg   *instrument.Registry
	calls *prometheus.Desc
}

func newFallbackPart(c *Collector) *fallbackPart {
	return &fallbackPart{reg: c.reg, calls: c.desc(catalog.FallbackCalls)}
}

func (p *fallbackPart) describe(ch chan<- *prometheus.Desc) { ch <- p.calls }

func (p *fallbackPart) collect(ch chan<- prometheus.Metric) {
	for _, nf := range p.reg.Fallbacks() {
		sn := nf.Value.Snapshot()
		for _, cause := range catalog.Causes {
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(sn.Calls[cause]), nf.Name, cause.String())
		}
	}
}
