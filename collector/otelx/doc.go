// Package otelx exports stormwatch's metric catalog through OpenTelemetry, for services that
// push OTLP instead of serving /metrics, and records stormwatch's events on trace spans.
//
// It is a Go module of its own (github.com/stormwatch-go/stormwatch/collector/otelx), so that
// stormwatch's main module never depends on OpenTelemetry.
//
// # Metrics
//
// A [Bridge] reads a registry's primitives when a reader collects, as the Prometheus collector
// does at scrape time: the calls cost nothing more. It has two halves, wired once:
//
//	bridge, err := otelx.New(reg)                       // options: WithFullDetail, WithExplicitBuckets, …
//	reader := sdkmetric.NewPeriodicReader(exporter,
//		sdkmetric.WithProducer(bridge))                 // the latency histograms
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader),
//		sdkmetric.WithResource(resource.NewSchemaless(
//			attribute.String("service.name", "checkout"),   // → job="checkout"
//			attribute.String("service.instance.id", pod)))) // → instance=pod
//	_, err = bridge.Register(mp)                        // the counters and gauges
//
// The two halves:
//
//   - [Bridge.Register] creates observable instruments on the provider — an
//     Int64ObservableCounter per counter of the catalog, a Float64ObservableGauge per gauge —
//     and one callback for all of them.
//   - The latency histograms (breaker call durations, retry delays, bulkhead waits) cannot be
//     observable instruments; the bridge is an sdkmetric.Producer ([Bridge.Produce]) that the
//     reader asks for them at each collection: exponential histograms of scale 2, the
//     primitives' own native buckets unchanged, or, with [WithExplicitBuckets], explicit-bucket
//     histograms with the catalog's classic bounds.
//
// Which series exist follows collector.Policy, the Prometheus collector's own decisions
// (default budget, or [WithFullDetail]): the same history yields the same series either way.
//
// # Names, units and Prometheus
//
// Prometheus 3 ingests OTLP (`--web.enable-otlp-receiver`, endpoint /api/v1/otlp/v1/metrics)
// and translates names with its default strategy, UnderscoreEscapingWithSuffixes: a monotonic
// sum gets `_total`, a unit gets its suffix (`s` → `_seconds`) unless a name token has it
// already, a gauge of unit `1` gets `_ratio`, and characters other than letters, digits and
// colons become underscores. The bridge names every instrument with the catalog's full
// Prometheus name, suffixes included, and gives it a unit that adds none:
//
//	counter   resilience_circuitbreaker_calls_total             {call}   → resilience_circuitbreaker_calls_total
//	gauge     resilience_circuitbreaker_tripped_since_timestamp_seconds  s → unchanged
//	gauge     resilience_circuitbreaker_failure_rate            ""       → unchanged (not "1": _ratio)
//	gauge     resilience_retry_budget_tokens                    {token}  → unchanged
//	histogram resilience_circuitbreaker_call_duration_seconds   s        → unchanged
//
// so that every translation strategy — the default, UnderscoreEscapingWithoutSuffixes,
// NoUTF8EscapingWithSuffixes and NoTranslation — stores the catalog's names, and the generated
// rules and dashboards work unchanged. Attributes are the catalog's labels (name, state, from,
// to, kind, cause, class, source, primitive). Prometheus sets job from the resource's
// service.name (service.namespace/service.name when both are set) and instance from
// service.instance.id, and writes the other resource attributes to target_info: set
// service.instance.id to something unique per process (the pod name), since the generated
// per-process alerts keep the instance label and two processes pushing the same series would
// collide. Exponential histograms become native histograms; explicit-bucket histograms become
// _bucket, _sum and _count series; the generator's default dashboards read either. A data point
// is one or the other (unlike the Prometheus collector's, which carries both): pushed over OTLP,
// Prometheus stores exponential histograms as native histograms; exported for scraping (the
// OpenTelemetry Prometheus exporter), they reach a Prometheus without native histogram
// ingestion and VictoriaMetrics as +Inf, _sum and _count only — use [WithExplicitBuckets] there.
//
// Pushed data has no staleness markers: a series that stops being pushed stays visible to
// queries for Prometheus's lookback delta (5m). The only catalog series that ends while its
// primitive lives is a breaker's tripped_since labelled with the cause of a trip that is over;
// the bridge keeps pushing it at 0 for [DefaultRetiredHold] ([WithRetiredHold]), so that
// `tripped_since > 0` stops finding the breaker tripped as soon as it closes.
//
// The SDK caps every instrument at 2,000 attribute sets per collection by default; beyond it,
// it folds the excess into one series labelled otel.metric.overflow. The state gauge has three
// per breaker, so a registry with more than about 660 breakers (it hands out 1,000 names per
// kind by default) needs a higher limit: sdkmetric.WithCardinalityLimit on the provider, or
// sdkmetric.WithCardinalityLimitSelector on the reader. The histograms are not subject to it.
//
// # Traces
//
// A [Tracer] attached to the registry's events records retry decisions, rejections and
// fallbacks as events of the span in the call's context, and (optionally) breaker transitions
// as spans of their own. [ResendCountTransport] sets http.request.resend_count on the client
// span of each retried HTTP attempt of an httpx.Transport.
package otelx
