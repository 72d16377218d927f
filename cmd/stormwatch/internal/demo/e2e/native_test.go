//go:build e2e

package e2e

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

// quantileQueries are the dashboard queries that read a latency histogram.
func quantileQueries(queries []panelQuery) []panelQuery {
	var out []panelQuery
	for _, q := range queries {
		if strings.Contains(q.expr, "histogram_quantile(") {
			out = append(out, q)
		}
	}
	return out
}

// checkNativeHistograms checks that Prometheus stored the demo's latency histograms as native
// histograms — one series per histogram, histogram samples, no classic _bucket series — and
// that the generated dashboards read them in that form.
func checkNativeHistograms(t *testing.T, prom e2eprom.API, job string, quantiles []panelQuery) {
	t.Helper()
	require.NotEmpty(t, quantiles, "the dashboards have quantile panels")
	for _, q := range quantiles {
		assert.Contains(t, q.expr, " or histogram_quantile(", "%s / %s: the default dashboards read native histograms too", q.dashboard, q.panel)
	}
	for _, m := range catalog.All() {
		if m.Type != catalog.Histogram {
			continue
		}
		name := m.FullName(catalog.DefaultNamespace)
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Metric    map[string]string `json:"metric"`
					Histogram []any             `json:"histogram"`
					Value     []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		prom.GetJSON(t, "/api/v1/query?query="+url.QueryEscape(name+`{job="`+job+`"}`), &r)
		require.Equal(t, "success", r.Status, name)
		require.NotEmpty(t, r.Data.Result, "%s: no series stored", name)
		for _, s := range r.Data.Result {
			assert.NotEmpty(t, s.Histogram, "%s%v is not a native histogram sample", name, s.Metric)
			assert.Empty(t, s.Value, "%s%v", name, s.Metric)
		}
		_, found := prom.Query(t, `count(`+name+`_bucket{job="`+job+`"})`)
		assert.False(t, found, "%s: classic _bucket series stored next to the native histogram", name)
	}
}
