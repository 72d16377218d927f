package otelx

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/collector/internal/history"
)

// BenchmarkCollect1000 compares, on the same registry of 1,000 named breakers (and 100 retries
// and bulkheads), one collection through the OpenTelemetry bridge — a ManualReader's Collect:
// the observable instruments' callback, the SDK's aggregation and the producer's histograms —
// with one Gather of the Prometheus collector (neither encodes nor sends anything). Both export
// the same 12,305 series. The SDK's cardinality limit is lifted (the default, 2,000 attribute
// sets per instrument, is less than 1,000 breakers' 3,000 states: see the package
// documentation).
func BenchmarkCollect1000(b *testing.B) {
	reg := history.ManyNames(b) // the registry of the collector's BenchmarkCollect
	b.Run("prometheus", func(b *testing.B) {
		c, err := collector.New(reg)
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
	})
	b.Run("otel", func(b *testing.B) {
		br, err := New(reg)
		if err != nil {
			b.Fatal(err)
		}
		reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(br))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(0))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		if _, err := br.Register(mp); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		var rm metricdata.ResourceMetrics
		b.ReportAllocs()
		for b.Loop() {
			if err := reader.Collect(ctx, &rm); err != nil {
				b.Fatal(err)
			}
		}
	})
}
