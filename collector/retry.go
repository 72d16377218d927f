package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// retryPart exports the retry metrics of the catalog for every retry in the registry.
//
// It exports the attempts, the budget's tokens and denials, and the calls, failed attempts and
// delays that the collector's Policy selects (see Policy.Retry).
type retryPart struct {
	reg                              *instrument.Registry
	policy                           Policy
	bounds                           []float64
	calls, attempts, errors, backoff *prometheus.Desc
	budgetTokens, budgetDenied       *prometheus.Desc
}

func newRetryPart(c *Collector) *retryPart {
	return &retryPart{
		reg:          c.reg,
		policy:       Policy{FullDetail: c.full},
		bounds:       c.bounds(backoffBounds, backoffDefaultBounds),
		calls:        c.desc(catalog.RetryCalls),
		attempts:     c.desc(catalog.RetryAttempts),
		errors:       c.desc(catalog.RetryErrors),
		backoff:      c.desc(catalog.RetryBackoff),
		budgetTokens: c.desc(catalog.RetryBudgetTokens),
		budgetDenied: c.desc(catalog.RetryBudgetDenied),
	}
}

func (p *retryPart) describe(ch chan<- *prometheus.Desc) {
	ch <- p.calls
	ch <- p.attempts
	ch <- p.errors
	ch <- p.backoff
	ch <- p.budgetTokens
	ch <- p.budgetDenied
}

// collect reads every retry's snapshot; its arrays are indexed by the catalog values it ranges
// over.
func (p *retryPart) collect(ch chan<- prometheus.Metric) {
	for _, nr := range p.reg.Retries() {
		s := nr.Value.Snapshot()
		name := nr.Name
		ser := p.policy.Retry(&s)
		for _, k := range catalog.RetryKinds {
			if ser.Calls[k] {
				ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(s.Calls[k]), name, k.String())
			}
		}
		ch <- prometheus.MustNewConstMetric(p.attempts, prometheus.CounterValue, float64(s.Retries), name)
		for _, class := range catalog.Classes {
			if ser.Errors[class] {
				ch <- prometheus.MustNewConstMetric(p.errors, prometheus.CounterValue, float64(s.Errors[class]), name, class.String())
			}
		}
		for _, src := range catalog.DelaySources {
			if ser.Backoff[src] {
				ch <- newConstHistogram(p.backoff, &s.Backoff[src], p.bounds, name, src.String())
			}
		}
		ch <- prometheus.MustNewConstMetric(p.budgetTokens, prometheus.GaugeValue, float64(s.BudgetTokens), name)
		ch <- prometheus.MustNewConstMetric(p.budgetDenied, prometheus.CounterValue, float64(s.BudgetDenied), name)
	}
}
