package conformance_test

// VictoriaMetrics: every query of every generated dashboard — panels, annotations and the
// selectors of the template variables, Overview, Dependency and SLOs — parses with
// VictoriaMetrics' MetricsQL parser once Grafana's macros and variables are substituted, for
// the default histogram form (classic `or` native, which VictoriaMetrics answers from the
// classic side) and for classic buckets only. Native-only dashboards use histogram_sum, which
// MetricsQL does not have: they are for a Prometheus with native histogram ingestion.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

// allDashboardQueries returns every query of the dashboards in files: each panel target's
// expr (rows' nested panels included), each annotation's expr, and the selector of each
// label_values() variable.
func allDashboardQueries(t *testing.T, files []dashboards.File) []dashQuery {
	t.Helper()
	var out []dashQuery
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".json") {
			continue
		}
		var d struct {
			UID         string            `json:"uid"`
			Panels      []json.RawMessage `json:"panels"`
			Annotations struct {
				List []struct {
					Name string `json:"name"`
					Expr string `json:"expr"`
				} `json:"list"`
			} `json:"annotations"`
			Templating struct {
				List []struct {
					Type  string `json:"type"`
					Name  string `json:"name"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		require.NoError(t, json.Unmarshal(f.Data, &d), f.Path)
		var walk func(raw []json.RawMessage)
		walk = func(raw []json.RawMessage) {
			for _, r := range raw {
				var p struct {
					Title   string            `json:"title"`
					Panels  []json.RawMessage `json:"panels"`
					Targets []struct {
						Expr  string `json:"expr"`
						RefID string `json:"refId"`
					} `json:"targets"`
				}
				require.NoError(t, json.Unmarshal(r, &p), f.Path)
				for _, tg := range p.Targets {
					out = append(out, dashQuery{where: fmt.Sprintf("%s panel %q %s", d.UID, p.Title, tg.RefID), expr: tg.Expr, panel: true})
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, a := range d.Annotations.List {
			if a.Expr != "" {
				out = append(out, dashQuery{where: fmt.Sprintf("%s annotation %q", d.UID, a.Name), expr: a.Expr})
			}
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, ok := v.Query.(string)
			require.True(t, ok, "%s variable %s: query is %T", d.UID, v.Name, v.Query)
			m := labelValuesRE.FindStringSubmatch(q)
			if m == nil {
				m = queryResultRE.FindStringSubmatch(q)
			}
			require.NotNil(t, m, "%s variable %s: %q is neither label_values(selector, label) nor query_result(query)", d.UID, v.Name, q)
			out = append(out, dashQuery{where: fmt.Sprintf("%s variable %s", d.UID, v.Name), expr: m[1]})
		}
	}
	return out
}

func TestDashboardQueriesParseInMetricsQL(t *testing.T) {
	configs := map[string]dashboards.Config{
		"default":        {},
		"classic":        {Histograms: dashboards.ClassicHistograms},
		"custom":         {Namespace: "acme", Selector: `env="prod", team!~"x.*"`, GroupBy: []string{"cluster", "job", "name"}},
		"no namespace":   {Namespace: rules.NoNamespace, GroupBy: []string{"name"}},
		"single grouped": {GroupBy: []string{"region"}},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			files, err := dashboards.Generate(cfg)
			require.NoError(t, err)
			qs := allDashboardQueries(t, files)
			require.NotEmpty(t, qs)
			panels := 0
			for _, q := range qs {
				if q.panel {
					panels++
				}
				expr := substitute(q.expr)
				_, err := metricsql.Parse(expr)
				assert.NoError(t, err, "%s: %s", q.where, expr)
			}
			assert.Greater(t, panels, 50, "the Overview's and the Dependency dashboard's panel queries")
		})
	}
	for _, sc := range sloConfigs {
		t.Run("SLOs "+sc.name, func(t *testing.T) {
			infos, err := rules.SLOs(sc.cfg)
			require.NoError(t, err)
			files, err := dashboards.GenerateSLOs(dashboards.Config{Namespace: sc.cfg.Namespace, Selector: sc.cfg.Selector}, infos)
			require.NoError(t, err)
			qs := allDashboardQueries(t, files)
			require.NotEmpty(t, qs)
			for _, q := range qs {
				expr := substitute(q.expr)
				_, err := metricsql.Parse(expr)
				assert.NoError(t, err, "%s: %s", q.where, expr)
			}
		})
	}
}

// TestMetricsQLRejectsWhatTheDashboardsAvoid keeps the test above honest: MetricsQL rejects the
// native-only functions the default dashboards do without, and the native-only dashboards do
// use one.
func TestMetricsQLRejectsWhatTheDashboardsAvoid(t *testing.T) {
	for _, expr := range []string{`histogram_sum(rate(x[5m]))`, `histogram_count(rate(x[5m]))`} {
		_, err := metricsql.Parse(expr)
		assert.Error(t, err, expr)
	}
	files, err := dashboards.Generate(dashboards.Config{Histograms: dashboards.NativeHistograms})
	require.NoError(t, err)
	rejected := 0
	for _, q := range allDashboardQueries(t, files) {
		if _, err := metricsql.Parse(substitute(q.expr)); err != nil {
			rejected++
			assert.Contains(t, q.expr, "histogram_sum(", q.where)
		}
	}
	assert.Positive(t, rejected, "native-only dashboards are for Prometheus")
}
