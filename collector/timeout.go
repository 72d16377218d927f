package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// timeoutPart exports resilience_timeout_calls_total{name,kind} for every timeout in the registry.
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
		st := nt.Value.Stats()
		ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(st.Successful), nt.Name, catalog.TimeoutSuccessful.String())
		ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(st.Failed), nt.Name, catalog.TimeoutFailed.String())
		ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(st.TimedOut), nt.Name, catalog.TimeoutTimedOut.String())
	}
}
