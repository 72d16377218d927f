// Package otelx exports stormwatch's metric catalog through OpenTelemetry, for services that
// push OTLP instead of serving /metrics, and records stormwatch's events on trace spans.
//
// It is a module of its own (github.com/stormwatch-go/stormwatch/collector/otelx), so that the
// main module never depends on OpenTelemetry.
package otelx
