package otelx_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stormwatch-go/stormwatch/collector/otelx"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
)

// Export a registry through the OpenTelemetry SDK: the bridge is the reader's producer (the
// latency histograms) and registers its observable instruments on the provider (the counters
// and gauges). In a service, the reader is a PeriodicReader with an OTLP exporter
// (otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL("http://prometheus:9090/api/v1/otlp/v1/metrics"))).
func Example() {
	reg, _ := instrument.NewRegistry()
	br, _ := reg.Breaker("payments", breaker.Config{})
	_ = br.Do(context.Background(), func(context.Context) error { return nil })

	bridge, err := otelx.New(reg)
	if err != nil {
		panic(err)
	}
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(bridge))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader),
		sdkmetric.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "checkout"),     // Prometheus: job="checkout"
			attribute.String("service.instance.id", "pod-1"), // Prometheus: instance="pod-1"
		)))
	defer mp.Shutdown(context.Background())
	if _, err := bridge.Register(mp); err != nil {
		panic(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Unit != "" {
				names = append(names, m.Name+" ["+m.Unit+"]")
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// resilience_circuitbreaker_call_duration_seconds [s]
	// resilience_circuitbreaker_calls_total [{call}]
	// resilience_circuitbreaker_not_permitted_calls_total [{call}]
	// resilience_circuitbreaker_tripped_since_timestamp_seconds [s]
}

// Record retries, rejections and fallbacks on the spans of the calls, breaker transitions as
// spans of their own, and http.request.resend_count on each retried HTTP attempt's span (under
// the instrumentation that starts a client span per attempt, such as otelhttp.NewTransport).
func ExampleTracer() {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	reg, _ := instrument.NewRegistry()
	detach := otelx.NewTracer(otelx.WithTransitionSpans(tp)).Attach(reg.Events())
	defer detach()

	// otelhttp.NewTransport(otelx.ResendCountTransport(http.DefaultTransport)) in a service.
	base := otelx.ResendCountTransport(http.DefaultTransport)
	tr, err := httpx.NewTransport(base, httpx.WithRegistry(reg))
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}
	_ = client
	fmt.Println("attached")
	// Output: attached
}
