package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// retryPart exports the retry metrics of the catalog for every retry in the registry.
//
// By default: the calls of the four successful_*/failed_* kinds from 0 and aborted calls once
// counted (a caller's cancellation is not an outcome of the dependency); the attempts; the
// failed attempts of each class once counted, except class rejected (stormwatch's own refusals,
// which the circuit breaker's not_permitted_calls_total and the bulkhead's rejected calls count
// where they happen); the delays of source backoff from 0 and of source retry_after once
// counted; the budget's tokens and denials. Full detail exports every kind, class and source
// from the start.
type retryPart struct {
	reg                              *instrument.Registry
	full                             bool
	bounds                           []float64
	calls, attempts, errors, backoff *prometheus.Desc
	budgetTokens, budgetDenied       *prometheus.Desc
}

func newRetryPart(c *Collector) *retryPart {
	return &retryPart{
		reg:          c.reg,
		full:         c.full,
		bounds:       c.bounds(backoffBounds),
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
		for _, k := range catalog.RetryKinds {
			if n := s.Calls[k]; p.full || n > 0 || k != catalog.RetryAborted {
				ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(n), name, k.String())
			}
		}
		ch <- prometheus.MustNewConstMetric(p.attempts, prometheus.CounterValue, float64(s.Retries), name)
		for _, class := range catalog.Classes {
			if n := s.Errors[class]; p.full || (n > 0 && class != catalog.ClassRejected) {
				ch <- prometheus.MustNewConstMetric(p.errors, prometheus.CounterValue, float64(n), name, class.String())
			}
		}
		for _, src := range catalog.DelaySources {
			if h := &s.Backoff[src]; p.full || h.Count > 0 || src == catalog.SourceBackoff {
				ch <- newConstHistogram(p.backoff, h, p.bounds, name, src.String())
			}
		}
		ch <- prometheus.MustNewConstMetric(p.budgetTokens, prometheus.GaugeValue, float64(s.BudgetTokens), name)
		ch <- prometheus.MustNewConstMetric(p.budgetDenied, prometheus.CounterValue, float64(s.BudgetDenied), name)
	}
}
