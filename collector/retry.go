package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// retryPart exports the retry metrics of the catalog for every retry in the registry. Every
// label value of the closed sets is exported from the start, at 0 — except the gRPC failure
// classes, which only the gRPC interceptors produce: they appear once counted (see
// zeroExportedClass), so that a service without gRPC pays no series for them.
type retryPart struct {
	reg                              *instrument.Registry
	calls, attempts, errors, backoff *prometheus.Desc
	budgetTokens, budgetDenied       *prometheus.Desc
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

// zeroExportedClass reports whether the errors counter of class is exported while still 0: every
// class but the gRPC ones.
func zeroExportedClass(c catalog.Class) bool {
	return c < catalog.ClassGRPCUnavailable || c > catalog.ClassGRPCPermanent
}

// collect reads every retry's snapshot; its arrays are indexed by the catalog values it ranges
// over.
func (p *retryPart) collect(ch chan<- prometheus.Metric) {
	for _, nr := range p.reg.Retries() {
		s := nr.Value.Snapshot()
		name := nr.Name
		for _, k := range catalog.RetryKinds {
			ch <- prometheus.MustNewConstMetric(p.calls, prometheus.CounterValue, float64(s.Calls[k]), name, k.String())
		}
		ch <- prometheus.MustNewConstMetric(p.attempts, prometheus.CounterValue, float64(s.Retries), name)
		for _, class := range catalog.Classes {
			if n := s.Errors[class]; n > 0 || zeroExportedClass(class) {
				ch <- prometheus.MustNewConstMetric(p.errors, prometheus.CounterValue, float64(n), name, class.String())
			}
		}
		for _, src := range catalog.DelaySources {
			h := &s.Backoff[src]
			ch <- prometheus.MustNewConstHistogram(p.backoff, h.Count, h.Sum, h.Cumulative(catalog.BackoffBuckets), name, src.String())
		}
		ch <- prometheus.MustNewConstMetric(p.budgetTokens, prometheus.GaugeValue, float64(s.BudgetTokens), name)
		ch <- prometheus.MustNewConstMetric(p.budgetDenied, prometheus.CounterValue, float64(s.BudgetDenied), name)
	}
}
