package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// retryPart exports the retry metrics of the catalog for every retry in the registry. Every
// label value of the closed sets is exported from the start, at 0.
type retryPart struct {
	reg                              *instrument.Registry
	calls, attempts, errors, backoff *prometheus.Desc
	budgetTokens, budgetDenied       *prometheus.Desc
	bounds                           []float64
}

func newRetryPart(c *Collector) *retryPart {
	return &retryPart{
		reg:          c.reg,
		calls:        c.desc(catalog.RetryCalls),
		attempts:     c.desc(catalog.RetryAttempts),
		errors:       c.desc(catalog.RetryErrors),
		backoff:      c.desc(catalog.RetryBackoff),
		budgetTokens: c.desc(catalog.RetryBudgetTokens),
		budgetDenied: c.desc(catalog.RetryBudgetDenied),
		bounds:       retry.BackoffBuckets(),
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

// collect reads every retry's snapshot. The snapshot's slices are indexed like the catalog's
// closed sets (retry.CallKinds, classify.Classes, retry.DelaySources), which a test checks.
func (p *retryPart) collect(ch chan<- prometheus.Metric) {
	for _, nr := range p.reg.Retries() {
		s := nr.Value.Snapshot()
		name := nr.Name
		for i, kind := range catalog.Names(catalog.RetryKinds[:]) {
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(s.Calls[i]), name, kind)
		}
		ch <- prometheus.MustNewConstMetric(p.attempts, prometheus.CounterValue, float64(s.Retries), name)
		for i, class := range classify.Classes {
			ch <- prometheus.MustNewConstMetric(p.errors, prometheus.CounterValue, float64(s.Errors[i]), name, class)
		}
		for i, source := range catalog.Names(catalog.DelaySources[:]) {
			h := s.Backoff[i]
			ch <- prometheus.MustNewConstHistogram(p.backoff, h.Count, h.Sum, buckets(p.bounds, h.Buckets), name, source)
		}
		ch <- prometheus.MustNewConstMetric(p.budgetTokens, prometheus.GaugeValue, float64(s.BudgetTokens), name)
		ch <- prometheus.MustNewConstMetric(p.budgetDenied, prometheus.CounterValue, float64(s.BudgetDenied), name)
	}
}
