package otelx

import (
	"testing"

	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// otlpTypes are the OpenTelemetry data types the bridge sends for a catalog type, as
// Prometheus's OTLP translation names them.
func otlpTypes(t catalog.Type) []otlptranslator.MetricType {
	switch t {
	case catalog.Counter:
		return []otlptranslator.MetricType{otlptranslator.MetricTypeMonotonicCounter}
	case catalog.Gauge:
		return []otlptranslator.MetricType{otlptranslator.MetricTypeGauge}
	}
	return []otlptranslator.MetricType{otlptranslator.MetricTypeHistogram, otlptranslator.MetricTypeExponentialHistogram}
}

// TestPrometheusTranslationYieldsTheCatalogNames runs the bridge's names and units through
// the translation of Prometheus's OTLP receiver (github.com/prometheus/otlptranslator, the
// version Prometheus 3.16 uses): its default strategy, UnderscoreEscapingWithSuffixes, must
// produce exactly the catalog's names, and so must every other strategy — the names carry
// their type and unit suffixes already and the units add none.
func TestPrometheusTranslationYieldsTheCatalogNames(t *testing.T) {
	strategies := []otlptranslator.TranslationStrategyOption{
		otlptranslator.UnderscoreEscapingWithSuffixes, // Prometheus's default
		otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes,
		otlptranslator.NoTranslation,
	}
	for _, ns := range []string{catalog.DefaultNamespace, "", "acme_payments"} {
		b, err := New(newRegistry(t), WithNamespace(ns))
		require.NoError(t, err)
		for _, m := range catalog.All() {
			name, unit := b.Name(m), Unit(m)
			for _, typ := range otlpTypes(m.Type) {
				for _, st := range strategies {
					namer := otlptranslator.NewMetricNamer("", st)
					got, err := namer.Build(otlptranslator.Metric{Name: name, Unit: unit, Type: typ})
					require.NoError(t, err)
					assert.Equal(t, m.FullName(ns), got, "%s (unit %q, %v) under %s", name, unit, typ, st)
				}
			}
			assert.NotEqual(t, "1", unit, "%s: unit 1 adds _ratio to gauges", name)
		}
	}
}

func TestUnits(t *testing.T) {
	want := map[string]string{
		"resilience_circuitbreaker_state":                           "",
		"resilience_circuitbreaker_tripped_since_timestamp_seconds": "s",
		"resilience_circuitbreaker_calls_total":                     "{call}",
		"resilience_circuitbreaker_call_duration_seconds":           "s",
		"resilience_circuitbreaker_failure_rate":                    "",
		"resilience_circuitbreaker_open_duration_seconds":           "s",
		"resilience_retry_budget_tokens":                            "{token}",
		"resilience_bulkhead_inflight_calls":                        "{call}",
	}
	for _, m := range catalog.All() {
		if u, ok := want[m.FullName(catalog.DefaultNamespace)]; ok {
			assert.Equal(t, u, Unit(m), m.FullName(catalog.DefaultNamespace))
		}
	}
}
