package dashboards

import (
	"regexp"
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

// TestQuantileFollowsTheHistogramForm checks every quantile query of both dashboards: by
// default the classic one (_bucket, by le) `or` the native one (the metric itself, no le), so
// that a Prometheus storing either form draws the panel; one of them with histograms: native or
// classic.
func TestQuantileFollowsTheHistogramForm(t *testing.T) {
	classicRE := regexp.MustCompile(`^histogram_quantile\(0\.\d+, sum by \([^)]*\ble\) \(rate\([a-z_]+_bucket\{[^}]*\}\[\$__rate_interval\]\)\)\)$`)
	nativeRE := regexp.MustCompile(`^histogram_quantile\(0\.\d+, sum(?: by \([^)]*\))? \(rate\([a-z_]+_seconds\{[^}]*\}\[\$__rate_interval\]\)\)\)$`)
	for _, tc := range []struct {
		cfg             Config
		classic, native bool
	}{{Config{}, true, true}, {Config{Histograms: NativeHistograms}, false, true}, {Config{Histograms: ClassicHistograms}, true, false}} {
		quantiles := 0
		for path, d := range dashboardsOf(t, generate(t, tc.cfg)) {
			for _, q := range queriesOf(t, d) {
				if !strings.Contains(q.expr, "histogram_quantile(") {
					continue
				}
				quantiles++
				// A quantile reads only a histogram with default classic bounds, which a
				// Prometheus without native histogram ingestion can take quantiles of.
				read := 0
				for _, m := range histogramMetrics() {
					if strings.Contains(q.expr, m.FullName(catalog.DefaultNamespace)+"{") ||
						strings.Contains(q.expr, m.FullName(catalog.DefaultNamespace)+"_bucket{") {
						read++
						assert.NotEmpty(t, catalog.DefaultBuckets(m), "%s %s reads %s, which has no default classic bounds", path, q.where, m.Name)
					}
				}
				assert.Equal(t, 1, read, "%s %s: one histogram", path, q.where)
				parts := strings.Split(q.expr, " or ")
				var want []*regexp.Regexp
				if tc.classic {
					want = append(want, classicRE)
				}
				if tc.native {
					want = append(want, nativeRE)
				}
				require.Len(t, parts, len(want), "%s %s: %s", path, q.where, q.expr)
				for i, re := range want {
					assert.Regexp(t, re, parts[i], "%s %s", path, q.where)
				}
			}
		}
		assert.Equal(t, 2*3, quantiles, "p50/p95/p99 latency on each dashboard")
	}
}

// TestHistogramsOutsideQuantilesReadEitherForm checks the panels that read a histogram without
// a quantile (the mean backoff delay, the callers waiting, the mean wait): by default each reads the classic
// series or the native one, and never histogram_sum or histogram_count (which VictoriaMetrics'
// MetricsQL does not have).
func TestHistogramsOutsideQuantilesReadEitherForm(t *testing.T) {
	n := 0
	for path, d := range dashboardsOf(t, generate(t, Config{})) {
		for _, q := range queriesOf(t, d) {
			if !q.panel || strings.Contains(q.expr, "histogram_quantile(") {
				continue
			}
			for _, m := range histogramMetrics() {
				name := m.FullName(catalog.DefaultNamespace)
				if !strings.Contains(q.expr, name) {
					continue
				}
				n++
				assert.NotContains(t, q.expr, "histogram_sum(", "%s %s", path, q.where)
				assert.NotContains(t, q.expr, "histogram_count(", "%s %s", path, q.where)
				assert.Contains(t, q.expr, "rate("+name+"_sum{", "%s %s: the classic side", path, q.where)
				assert.Contains(t, q.expr, "or histogram_avg(", "%s %s: the native side", path, q.where)
				assert.Contains(t, q.expr, "rate("+name+"{", "%s %s: the native side", path, q.where)
			}
		}
	}
	assert.Equal(t, 2*3, n, "mean backoff, callers waiting and mean wait on each dashboard")
}

func TestHistogramQueryForms(t *testing.T) {
	calls := catalog.BulkheadCalls
	const callsSel = `resilience_bulkhead_calls_total{job=~"$job", instance=~"$instance", name=~"$name"}[$__rate_interval]`
	r, err := Config{Histograms: NativeHistograms}.resolve()
	require.NoError(t, err)
	q := newPromQL(r, false)
	const waitSel = `resilience_bulkhead_wait_duration_seconds{job=~"$job", instance=~"$instance", name=~"$name"}[$__rate_interval]`
	assert.Equal(t, `histogram_quantile(0.99, sum by (job, name) (rate(`+waitSel+`)))`,
		q.quantile("0.99", catalog.BulkheadWaitDuration, []string{"job", "name"}))
	assert.Equal(t, `histogram_sum(sum by (job) (rate(`+waitSel+`)))`, q.sumRate(catalog.BulkheadWaitDuration, []string{"job"}, calls))
	assert.Equal(t, `histogram_avg(sum by (job) (rate(`+waitSel+`)))`, q.mean(catalog.BulkheadWaitDuration, []string{"job"}))

	r, err = Config{}.resolve()
	require.NoError(t, err)
	q = newPromQL(r, false)
	const waitSum = `resilience_bulkhead_wait_duration_seconds_sum{job=~"$job", instance=~"$instance", name=~"$name"}[$__rate_interval]`
	const waitCount = `resilience_bulkhead_wait_duration_seconds_count{job=~"$job", instance=~"$instance", name=~"$name"}[$__rate_interval]`
	assert.Equal(t,
		`histogram_quantile(0.99, sum by (job, name, le) (rate(resilience_bulkhead_wait_duration_seconds_bucket{job=~"$job", instance=~"$instance", name=~"$name"}[$__rate_interval])))`+
			` or histogram_quantile(0.99, sum by (job, name) (rate(`+waitSel+`)))`,
		q.quantile("0.99", catalog.BulkheadWaitDuration, []string{"job", "name"}))
	assert.Equal(t, `sum by (job) (rate(`+waitSum+`)) or histogram_avg(sum by (job) (rate(`+waitSel+`))) * (sum by (job) (rate(`+callsSel+`)) > 0)`,
		q.sumRate(catalog.BulkheadWaitDuration, []string{"job"}, calls))
	assert.Equal(t, `sum by (job) (rate(`+waitSum+`)) / (sum by (job) (rate(`+waitCount+`)) > 0)`+
		` or histogram_avg(sum by (job) (rate(`+waitSel+`)))`, q.mean(catalog.BulkheadWaitDuration, []string{"job"}))

	r, err = Config{Histograms: ClassicHistograms, Namespace: "acme"}.resolve()
	require.NoError(t, err)
	q = newPromQL(r, true)
	assert.Equal(t,
		`histogram_quantile(0.5, sum by (job, source, le) (rate(acme_retry_backoff_seconds_bucket{job=~"$job", instance=~"$instance", name="$name"}[$__rate_interval])))`,
		q.quantile("0.5", catalog.RetryBackoff, []string{"job", "source"}))
	assert.Equal(t,
		`sum(rate(acme_bulkhead_wait_duration_seconds_sum{job=~"$job", instance=~"$instance", name="$name"}[$__rate_interval]))`,
		q.sumRate(catalog.BulkheadWaitDuration, nil, calls))
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
