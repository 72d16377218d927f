package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// timeoutPart exports resilience_timeout_calls_total{name,kind} for every timeout in the registry,
// the kinds that the collector's Policy selects (see Policy.Timeout): successful, failed and
// timed_out from 0; aborted (the caller's cancellation, rare and never alerted on) once it has
// occurred, from 0 with full detail.
type timeoutPart struct {
	reg    *instrument.Registry
	policy Policy
	calls  *prometheus.Desc
}

func newTimeoutPart(c *Collector) *timeoutPart {
	return &timeoutPart{reg: c.reg, policy: Policy{FullDetail: c.full}, calls: c.desc(catalog.TimeoutCalls)}
}

func (p *timeoutPart) describe(ch chan<- *prometheus.Desc) { ch <- p.calls }

func (p *timeoutPart) collect(ch chan<- prometheus.Metric) {
	for _, nt := range p.reg.Timeouts() {
		sn := nt.Value.Snapshot()
		ser := p.policy.Timeout(&sn)
		for _, k := range catalog.TimeoutKinds {
			if !ser.Calls[k] {
				continue
			}
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(sn.Calls[k]), nt.Name, k.String())
		}
	}
}
