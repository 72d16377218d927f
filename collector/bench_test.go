package collector

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// BenchmarkCollect gathers a registry of 1,000 breakers and 100 retries and bulkheads, each
// with one call recorded: the collector's share of a scrape (the text encoding is not included).
func BenchmarkCollect(b *testing.B) {
	reg, err := instrument.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	for i := range 1000 {
		br, err := reg.Breaker(fmt.Sprintf("dependency-%04d", i), breaker.Config{})
		if err != nil {
			b.Fatal(err)
		}
		_ = br.Do(ctx, ok)
		if i%10 != 0 {
			continue
		}
		r, err := reg.Retry(fmt.Sprintf("dependency-%04d", i), retry.Config{})
		if err != nil {
			b.Fatal(err)
		}
		_ = r.Do(ctx, ok)
		bh, err := reg.Bulkhead(fmt.Sprintf("dependency-%04d", i), bulkhead.Config{})
		if err != nil {
			b.Fatal(err)
		}
		_ = bh.Do(ctx, ok)
	}
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
