package dashboards

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/rules"
)

func sloInfos(t *testing.T, cfg rules.Config) []rules.SLOInfo {
	t.Helper()
	infos, err := rules.SLOs(cfg)
	require.NoError(t, err)
	return infos
}

var testSLOs = rules.Config{SLOs: []rules.SLO{
	{Name: "payments", Objective: 0.999},
	{ID: "core", NameRegex: "inventory|recs", Objective: 0.99, Period: 7 * 24 * time.Hour, Source: rules.SLOSourceBreaker},
}}

// TestGenerateSLOsProducesAValidDashboard: the SLOs dashboard passes the SDK's strict decoder
// and Validate, has one row per SLO with the same panels, unique ids, and every query selects
// its row's SLO through the variables and the selector.
func TestGenerateSLOsProducesAValidDashboard(t *testing.T) {
	for _, cfg := range []Config{{}, {Namespace: "acme", Selector: `cluster="eu-1"`, TitlePrefix: "Shop", UIDPrefix: strings.Repeat("u", rules.MaxDashboardUIDPrefixLen)}} {
		rc := testSLOs
		rc.Namespace, rc.Selector = cfg.Namespace, cfg.Selector
		infos := sloInfos(t, rc)
		files, err := GenerateSLOs(cfg, infos)
		require.NoError(t, err)
		require.Len(t, files, 2, "the dashboard and the linter's exclusion file")
		assert.Equal(t, Dir+"/"+LintFile, files[1].Path)
		d := decodeStrict(t, files[0].Data)
		require.NotNil(t, d.Uid)
		assert.Equal(t, Dir+"/"+*d.Uid+".json", files[0].Path)
		assert.LessOrEqual(t, len(*d.Uid), maxUID)
		assert.True(t, strings.HasSuffix(*d.Uid, "-slos"))
		assert.True(t, strings.HasSuffix(*d.Title, " / SLOs"))

		ids := map[uint32]bool{}
		var rows []*dashboard.RowPanel
		for _, p := range d.Panels {
			var id uint32
			switch {
			case p.RowPanel != nil:
				rows = append(rows, p.RowPanel)
				id = p.RowPanel.Id
			case p.Panel != nil:
				id = *p.Panel.Id
			}
			assert.False(t, ids[id], "panel id %d reused", id)
			ids[id] = true
		}
		require.Len(t, rows, len(infos))
		assert.Contains(t, *rows[0].Title, "SLO payments: payments, 99.9% over 30d")
		assert.Contains(t, *rows[1].Title, "SLO core: names matching inventory|recs, 99% over 1w")

		row := -1
		for _, p := range d.Panels {
			if p.RowPanel != nil {
				row++
				continue
			}
			pn := p.Panel
			switch pn.Type {
			case "stat":
				assert.IsType(t, &stat.Options{}, pn.Options)
			case "timeseries":
				assert.IsType(t, &timeseries.Options{}, pn.Options)
			default:
				t.Errorf("panel %q: unexpected type %q", *pn.Title, pn.Type)
			}
			require.NotEmpty(t, pn.Targets, *pn.Title)
			require.NotNil(t, pn.FieldConfig.Defaults.Unit)
			for _, tg := range pn.Targets {
				q := tg.(*prometheus.Dataquery).Expr
				assert.Contains(t, q, `slo="`+infos[row].ID+`"`, *pn.Title)
				assert.Contains(t, q, `name=~"$name"`, *pn.Title)
				assert.Contains(t, q, `job=~"$job"`, *pn.Title)
				if cfg.Selector != "" {
					assert.Contains(t, q, cfg.Selector, *pn.Title)
				}
			}
		}
		var names []string
		for _, v := range d.Templating.List {
			names = append(names, v.Name)
		}
		assert.Equal(t, []string{"datasource", "job", "instance", "name"}, names)
	}
}

// TestSLODashboardBurnRatePanels: the burn rate of every window, divided by the SLO's error
// budget, against the alert thresholds; the budget and SLI stats.
func TestSLODashboardBurnRatePanels(t *testing.T) {
	infos := sloInfos(t, testSLOs)
	files, err := GenerateSLOs(Config{}, infos)
	require.NoError(t, err)
	d := decodeStrict(t, files[0].Data)
	byTitle := map[string][]dashboard.Panel{}
	for _, p := range panels(d) {
		byTitle[*p.Title] = append(byTitle[*p.Title], p)
	}
	burn := byTitle["Burn rate by window"]
	require.Len(t, burn, 2)
	for i, p := range burn {
		require.Len(t, p.Targets, 7, "one query per window")
		for j, tg := range p.Targets {
			q := tg.(*prometheus.Dataquery).Expr
			assert.True(t, strings.HasPrefix(q, infos[i].ErrorRatio[j]+"{"), q)
			assert.True(t, strings.HasSuffix(q, " / "+number(infos[i].ErrorBudget)), q)
		}
		var steps []float64
		for _, s := range p.FieldConfig.Defaults.Thresholds.Steps {
			if s.Value != nil {
				steps = append(steps, *s.Value)
			}
		}
		assert.Equal(t, []float64{1, 3, 6, 14.4}, steps, "the alert thresholds")
	}
	budget := byTitle["Error budget remaining (30d)"]
	require.Len(t, budget, 1)
	assert.Contains(t, budget[0].Targets[0].(*prometheus.Dataquery).Expr, infos[0].BudgetRemaining)
	assert.Len(t, byTitle["SLI over 30d"], 1)
	assert.Len(t, byTitle["SLI over 1w"], 1)
}

// TestSLODashboardUIDMatchesTheAlerts: the burn-rate alerts' dashboard_url opens this dashboard.
func TestSLODashboardUIDMatchesTheAlerts(t *testing.T) {
	files, err := GenerateSLOs(Config{}, sloInfos(t, testSLOs))
	require.NoError(t, err)
	assert.Equal(t, Dir+"/"+rules.SLODashboardUID+".json", files[0].Path)
}

func TestGenerateSLOsWithoutSLOs(t *testing.T) {
	files, err := GenerateSLOs(Config{}, nil)
	require.NoError(t, err)
	assert.Empty(t, files)
	_, err = GenerateSLOs(Config{UIDPrefix: "a b"}, sloInfos(t, testSLOs))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, fieldUIDPrefix, ce.Field)
}

func TestGenerateSLOsIsDeterministic(t *testing.T) {
	infos := sloInfos(t, testSLOs)
	a, err := GenerateSLOs(Config{}, infos)
	require.NoError(t, err)
	b, err := GenerateSLOs(Config{}, infos)
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

// TestSLONameVariableSelectsRecordedSeriesByName: the SLOs dashboard's name variable lists the
// dependencies from the recorded calls series, selected by metric name and SLO id — one
// label_values() when every SLO records the same series, else a query_result() over each —
// and never matches __name__; job and instance come from the registry's overflow counter.
func TestSLONameVariableSelectsRecordedSeriesByName(t *testing.T) {
	infos := sloInfos(t, testSLOs)
	vars := func(infos []rules.SLOInfo) map[string]string {
		files, err := GenerateSLOs(Config{}, infos)
		require.NoError(t, err)
		d := decodeStrict(t, files[0].Data)
		out := map[string]string{}
		for _, v := range d.Templating.List {
			if v.Query != nil && v.Query.String != nil {
				out[v.Name] = *v.Query.String
				assert.NotContains(t, *v.Query.String, "__name__", v.Name)
			}
		}
		return out
	}
	require.NotEqual(t, infos[0].Calls, infos[1].Calls, "SLOs of different periods record different calls series")
	differ := vars(infos)
	assert.Equal(t, `query_result(count by (name) (`+infos[0].Calls+`{slo="payments", job=~"$job"} or `+
		infos[1].Calls+`{slo="core", job=~"$job"}))`, differ["name"])
	assert.Equal(t, `label_values(resilience_registry_overflow_total, job)`, differ["job"])
	assert.Equal(t, `label_values(resilience_registry_overflow_total{job=~"$job"}, instance)`, differ["instance"])

	same := append([]rules.SLOInfo(nil), infos...)
	same[1].Calls = infos[0].Calls
	assert.Equal(t, `label_values(`+infos[0].Calls+`{slo=~"payments|core", job=~"$job"}, name)`, vars(same)["name"])
}

// TestNoVariableMatchesMetricNames: no template variable of any dashboard — Overview,
// Dependency, SLOs, with any configuration — selects by __name__ (a regex over every metric
// name of a large TSDB); each reads one metric per selector.
func TestNoVariableMatchesMetricNames(t *testing.T) {
	for _, cfg := range []Config{{}, {Namespace: "acme", Selector: `env="prod"`, GroupBy: []string{"cluster", "job", "name"}}, {Namespace: rules.NoNamespace}} {
		files := generate(t, cfg)
		slos, err := GenerateSLOs(cfg, sloInfos(t, testSLOs))
		require.NoError(t, err)
		n := 0
		for _, f := range append(files, slos...) {
			if !strings.HasSuffix(f.Path, ".json") {
				continue
			}
			d := decodeStrict(t, f.Data)
			for _, v := range d.Templating.List {
				if v.Query == nil || v.Query.String == nil {
					continue
				}
				n++
				assert.NotContains(t, *v.Query.String, "__name__", "%s variable %s", f.Path, v.Name)
				assert.NotRegexp(t, `(^|[(,\s])\{`, *v.Query.String, "%s variable %s: every selector names its metric", f.Path, v.Name)
			}
		}
		assert.Greater(t, n, 6)
	}
}
