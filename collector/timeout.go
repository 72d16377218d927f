package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// timeoutPart exports resilience_timeout_calls_total{name,kind} for every timeout in the registry,
// every kind from 0.
type timeoutPart struct {
	reg   *instrument.Registry
	calls *prometheus.Desc
}

func newTimeoutPart(c *Collector) *timeoutPart {
	return &timeoutPart{reg: c.reg, calls: c.desc(catalog.TimeoutCalls)}
}

func (p *timeoutPart) describe(ch chan<- *prometheus.Desc) { ch <- p.calls }

func (p *timeoutPart) collect(ch chan<- prometheus.Metric) {
	for _, nt := range p.reg.Timeouts() {
		sn := nt.Value.Snapshot()
		for _, k := range catalog.TimeoutKinds {
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(sn.Calls[k]), nt.Name, k.String())
		}
	}
}
