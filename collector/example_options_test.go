package collector_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

// Series of one fresh circuit breaker, by collector option: what the text exposition holds and
// a Prometheus without native histogram ingestion stores (a histogram counts its buckets, _sum
// and _count; by default the call duration carries the catalog's 5 default classic bounds).
func ExampleWithFullDetail() {
	reg, _ := instrument.NewRegistry()
	_, _ = reg.Breaker("payments", breaker.Config{})
	for _, tc := range []struct {
		name string
		opts []collector.Option
	}{
		{"default", nil},
		{"classic buckets", []collector.Option{collector.WithClassicBuckets()}},
		{"full detail", []collector.Option{collector.WithFullDetail()}},
	} {
		c, _ := collector.New(reg, tc.opts...)
		pr := prometheus.NewRegistry()
		pr.MustRegister(c)
		mfs, _ := pr.Gather()
		n := 0
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetName() == "primitive" {
					continue // the registry's overflow counters
				}
				n++
				if h := m.GetHistogram(); h != nil {
					n += len(h.GetBucket()) + 2 // the buckets, +Inf and _sum (_count counted above)
				}
			}
		}
		fmt.Printf("%s: %d\n", tc.name, n)
	}
	// Output:
	// default: 18
	// classic buckets: 29
	// full detail: 79
}
