package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// hedgePart exports the hedges of the registry: resilience_hedge_calls_total,
// resilience_hedge_attempts_total{outcome} (every outcome from 0: the alerts divide by them) and
// resilience_hedge_delay_seconds — 6 series per hedge.
type hedgePart struct {
	reg                    *instrument.Registry
	calls, attempts, delay *prometheus.Desc
}

func newHedgePart(c *Collector) *hedgePart {
	return &hedgePart{reg: c.reg, calls: c.desc(catalog.HedgeCalls), attempts: c.desc(catalog.HedgeAttempts),
		delay: c.desc(catalog.HedgeDelay)}
}

func (p *hedgePart) describe(ch chan<- *prometheus.Desc) {
	ch <- p.calls
	ch <- p.attempts
	ch <- p.delay
}

func (p *hedgePart) collect(ch chan<- prometheus.Metric) {
	for _, nh := range p.reg.Hedges() {
		sn := nh.Value.Snapshot()
		ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(sn.Calls), nh.Name)
		for _, o := range catalog.HedgeOutcomes {
			ch <- prometheus.MustNewConstMetric(p.attempts, prometheus.CounterValue, float64(sn.Hedges[o]), nh.Name, o.String())
		}
		ch <- prometheus.MustNewConstMetric(p.delay, prometheus.GaugeValue, sn.Delay.Seconds(), nh.Name)
	}
}
