package collector

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/internal/history"
)

// BenchmarkCollect gathers a registry of 1,000 breakers and 100 retries and bulkheads, each
// with one call recorded: the collector's share of a scrape (the text encoding is not included).
func BenchmarkCollect(b *testing.B) {
	reg := history.ManyNames(b)
	c, err := New(reg)
	if err != nil {
		b.Fatal(err)
	}
	pr := prometheus.NewRegistry()
	pr.MustRegister(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pr.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
