package dashboards

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// histogramMetrics are the catalog's histograms.
func histogramMetrics() (out []catalog.Metric) {
	for _, m := range catalog.All() {
		if m.Type == catalog.Histogram {
			out = append(out, m)
		}
	}
	return out
}

// TestQuantileFollowsTheHistogramForm checks every quantile query of both dashboards: over the
// native histograms by default (the metric itself, no le), over classic buckets (_bucket, by le)
// with histograms: classic.
func TestQuantileFollowsTheHistogramForm(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		classic bool
	}{{Config{}, false}, {Config{Histograms: NativeHistograms}, false}, {Config{Histograms: ClassicHistograms}, true}} {
		quantiles := 0
		for path, d := range dashboardsOf(t, generate(t, tc.cfg)) {
			for _, q := range queriesOf(t, d) {
				if !strings.Contains(q.expr, "histogram_quantile(") {
					if !q.panel || strings.Contains(q.expr, "histogram_sum(") || strings.Contains(q.expr, "_sum{") {
						continue // the variables' presence selectors; Little's law over the wait histogram's sum
					}
					for _, m := range histogramMetrics() {
						assert.NotContains(t, q.expr, m.FullName(catalog.DefaultNamespace), "%s %s: a histogram outside a quantile", path, q.where)
					}
					continue
				}
				quantiles++
				if tc.classic {
					assert.Contains(t, q.expr, "_bucket{", "%s %s", path, q.where)
					assert.Regexp(t, `sum by \([^)]*\ble\)`, q.expr, "%s %s", path, q.where)
					continue
				}
				assert.NotContains(t, q.expr, "_bucket", "%s %s", path, q.where)
				assert.NotRegexp(t, `\ble\b`, q.expr, "%s %s", path, q.where)
				named := false
				for _, m := range histogramMetrics() {
					named = named || strings.Contains(q.expr, "rate("+m.FullName(catalog.DefaultNamespace)+"{")
				}
				assert.True(t, named, "%s %s: the native histogram itself is rated: %s", path, q.where, q.expr)
			}
		}
		assert.Equal(t, 2*(3+2+2), quantiles, "p50/p95/p99 latency, p50/p95 backoff, p50/p99 wait on each dashboard")
	}
}

func TestQuantileQueryForms(t *testing.T) {
	r, err := Config{}.resolve()
	require.NoError(t, err)
	q := newPromQL(r, false)
	assert.Equal(t,
		`histogram_quantile(0.99, sum by (job, name) (rate(resilience_bulkhead_wait_duration_seconds{job=~"$job", instance=~"$instance", name=~"$name"}[$__rate_interval])))`,
		q.quantile("0.99", catalog.BulkheadWaitDuration, []string{"job", "name"}))
	assert.Equal(t,
		`histogram_sum(rate(resilience_bulkhead_wait_duration_seconds{job=~"$job", instance=~"$instance", name=~"$name"}[$__rate_interval]))`,
		q.sumRate(catalog.BulkheadWaitDuration))

	r, err = Config{Histograms: ClassicHistograms, Namespace: "acme"}.resolve()
	require.NoError(t, err)
	q = newPromQL(r, true)
	assert.Equal(t,
		`histogram_quantile(0.5, sum by (job, source, le) (rate(acme_retry_backoff_seconds_bucket{job=~"$job", instance=~"$instance", name="$name"}[$__rate_interval])))`,
		q.quantile("0.5", catalog.RetryBackoff, []string{"job", "source"}))
	assert.Equal(t,
		`rate(acme_bulkhead_wait_duration_seconds_sum{job=~"$job", instance=~"$instance", name="$name"}[$__rate_interval])`,
		q.sumRate(catalog.BulkheadWaitDuration))
}

func TestHistogramsConfigError(t *testing.T) {
	_, err := Generate(Config{Histograms: "both"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "dashboards", ce.Primitive)
	assert.Equal(t, "dashboards.histograms", ce.Field)
	assert.Equal(t, "both", ce.Value)
	assert.Contains(t, err.Error(), `"native" or "classic"`)
}
