package dashboards

import (
	"errors"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/rules"
)

// TestDashboardLinterRules holds the rules of Grafana's dashboard linter
// (grafana/dashboard-linter, which is not installable from the module proxy) that the
// dashboards once broke, and the conventions of provisioned dashboards: job and instance
// variables select "All" as .+ (never .*), the dashboards are not editable, carry the
// stormwatch and resilience tags and link to each other.
func TestDashboardLinterRules(t *testing.T) {
	for _, cfg := range []Config{{}, {GroupBy: []string{"cluster", "job"}, Selector: `env="prod"`}, {UIDPrefix: "shop"}} {
		dashes := dashboardsOf(t, generate(t, cfg))
		require.Len(t, dashes, 2)
		for path, d := range dashes {
			require.NotNil(t, d.Editable, path)
			assert.False(t, *d.Editable, "%s: provisioned dashboards are not editable", path)
			assert.Subset(t, d.Tags, []string{"stormwatch", "resilience"}, path)
			for _, v := range d.Templating.List {
				if v.Type != dashboard.VariableTypeQuery || v.Multi == nil || !*v.Multi {
					continue
				}
				require.NotNil(t, v.AllValue, "%s: variable %s", path, v.Name)
				switch v.Name {
				case varJob, varInstance, varName:
					assert.Equal(t, ".+", *v.AllValue, "%s: variable %s selects All as .+", path, v.Name)
				default:
					assert.Equal(t, ".*", *v.AllValue, "%s: group_by variable %s keeps series without the label", path, v.Name)
				}
			}
			// A link to the sibling dashboard, and a drop-down of every dashboard of the prefix.
			var sibling, dropdown bool
			for _, l := range d.Links {
				switch l.Type {
				case dashboard.DashboardLinkTypeLink:
					other := overviewSuffix
					if strings.HasSuffix(*d.Uid, overviewSuffix) {
						other = dependencySuffix
					}
					sibling = sibling || *l.Url == "/d/"+uidPrefixOf(cfg)+other
					assert.True(t, l.IncludeVars && l.KeepTime, "%s: links keep the variables and time range", path)
				case dashboard.DashboardLinkTypeDashboards:
					dropdown = true
					assert.True(t, l.AsDropdown)
					assert.Equal(t, d.Tags[len(d.Tags)-1:], l.Tags, "%s: the drop-down lists the dashboards of this prefix", path)
				}
			}
			assert.True(t, sibling, "%s links to its sibling", path)
			assert.True(t, dropdown, "%s links to the other stormwatch dashboards", path)
		}
	}
}

func uidPrefixOf(cfg Config) string {
	if cfg.UIDPrefix == "" {
		return rules.DefaultDashboardUIDPrefix
	}
	return cfg.UIDPrefix
}

// TestGroupByBecomesVariables: every group_by label besides job and name is a multi-value
// variable, filters every query, and the Overview aggregates by the group_by labels.
func TestGroupByBecomesVariables(t *testing.T) {
	cfg := Config{GroupBy: []string{"cluster", "job"}, Selector: `env="prod"`}
	for path, d := range dashboardsOf(t, generate(t, cfg)) {
		var names []string
		for _, v := range d.Templating.List {
			names = append(names, v.Name)
		}
		assert.Equal(t, []string{varDatasource, "cluster", varJob, varInstance, varName}, names, path)
		for _, q := range queriesOf(t, d) {
			if q.where == "variable cluster" {
				assert.NotContains(t, q.expr, `cluster=~"$cluster"`, "a variable does not filter itself")
				continue
			}
			if strings.Contains(q.expr, catalog.RegistryOverflow.FullName(catalog.DefaultNamespace)) {
				continue
			}
			n := len(selectorRE.FindAllString(q.expr, -1)) - strings.Count(q.expr, "{{")
			assert.Equal(t, n, strings.Count(q.expr, `cluster=~"$cluster"`), "%s: every selector filters by the cluster variable: %s", q.where, q.expr)
		}
		if strings.HasSuffix(path, overviewSuffix+".json") {
			assert.Contains(t, queryOf(t, d, "Retry rate"), "sum by (cluster, job, name) (", "the Overview aggregates by group_by")
			assert.Contains(t, legendOfPanel(t, d, "Retry rate"), "{{cluster}}", "legends name the group_by labels")
		}
	}
	// group_by without job: the Overview groups by it, the job variable stays.
	ov := dashboardsOf(t, generate(t, Config{GroupBy: []string{"cluster"}}))[Dir+"/stormwatch-overview.json"]
	assert.Contains(t, queryOf(t, ov, "Retry rate"), "sum by (cluster, name) (")
}

func TestGroupByErrors(t *testing.T) {
	for _, tc := range []struct {
		gb   []string
		want string
	}{
		{[]string{}, "empty"},
		{[]string{"instance"}, `"instance" must not be listed`},
		{[]string{"datasource"}, "data source variable"},
		{[]string{"kind"}, "metric label"},
		{[]string{"__x"}, "reserved"},
		{[]string{"a-b"}, "not a valid label name"},
		{[]string{"job", "job"}, "twice"},
	} {
		_, err := Generate(Config{GroupBy: tc.gb})
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%v: %v", tc.gb, err)
		assert.Equal(t, "group_by", ce.Field)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := Generate(Config{GroupBy: []string{"cluster", "job"}})
	assert.NoError(t, err, "name is always kept, listed or not")
}

// TestWhoIsHurtingTable: the Overview opens with one row per dependency, its columns, worst
// first, each row linking to the Dependency dashboard of that dependency.
func TestWhoIsHurtingTable(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		by  string
	}{
		{Config{}, "job, name"},
		{Config{GroupBy: []string{"cluster", "job"}}, "cluster, job, name"},
	} {
		ov := dashboardsOf(t, generate(t, tc.cfg))[Dir+"/stormwatch-overview.json"]
		first := ov.Panels[0].Panel
		require.NotNil(t, first)
		assert.Equal(t, "table", first.Type)
		assert.Equal(t, "Who is hurting", *first.Title)
		assert.Equal(t, uint32(0), first.GridPos.Y, "it heads the dashboard")
		assert.Equal(t, uint32(gridWidth), first.GridPos.W)

		var exprs []string
		for _, tg := range first.Targets {
			pq := tg.(*prometheus.Dataquery)
			require.NotNil(t, pq.Format)
			assert.Equal(t, prometheus.PromQueryFormatTable, *pq.Format)
			assert.True(t, pq.Instant != nil && *pq.Instant, "instant queries")
			exprs = append(exprs, pq.Expr)
			assert.Contains(t, pq.Expr, "by ("+tc.by+")", "one row per dependency")
		}
		require.Len(t, exprs, 7)
		assert.Contains(t, exprs[0], `state=~"open|forced_open"`, "breaker state")
		assert.Contains(t, exprs[1], "time() - bottomk by ("+tc.by+") (1, min by ("+tc.by+", cause)", "time since the oldest trip, with its cause")
		assert.Contains(t, exprs[2], "not_permitted_calls_total", "rejection ratio")
		assert.Contains(t, exprs[3], "retry_attempts_total", "retry rate")
		assert.Contains(t, exprs[4], "retry_budget_denied_total", "budget denials")
		assert.Contains(t, exprs[5], "fallback_calls_total", "fallback rate")
		assert.Contains(t, exprs[6], `limiter_calls_total{kind="rejected"`, "limiter rejection ratio")

		require.Len(t, first.Transformations, 2)
		assert.Equal(t, "merge", first.Transformations[0].Id)
		assert.Equal(t, "organize", first.Transformations[1].Id)
		org := first.Transformations[1].Options.(map[string]any)
		rename := org["renameByName"].(map[string]any)
		assert.Equal(t, map[string]any{
			"Value #A": colBreaker, "Value #B": colNotClosed, "cause": colCause, "Value #C": colRejected,
			"Value #D": colRetryRate, "Value #E": colDenials, "Value #F": colFallbacks, "Value #G": colLimited,
		}, rename)

		opts := first.Options.(*table.Options)
		require.NotEmpty(t, opts.SortBy)
		assert.Equal(t, colBreaker, opts.SortBy[0].DisplayName, "worst first: open breakers on top")
		assert.True(t, *opts.SortBy[0].Desc)

		require.Len(t, first.FieldConfig.Defaults.Links, 1, "every row links to its Dependency dashboard")
		u := *first.FieldConfig.Defaults.Links[0].Url
		assert.True(t, strings.HasPrefix(u, "/d/stormwatch-dependency?"), u)
		for _, l := range strings.Split(tc.by, ", ") {
			assert.Contains(t, u, "&var-"+l+"=${__data.fields."+l+"}")
		}
		units := map[string]string{}
		for _, o := range first.FieldConfig.Overrides {
			for _, p := range o.Properties {
				if p.Id == "unit" {
					units[o.Matcher.Options.(string)] = p.Value.(string)
				}
			}
		}
		assert.Equal(t, map[string]string{colBreaker: "none", colNotClosed: "s", colRejected: "percentunit", colRetryRate: "percentunit",
			colDenials: "ops", colFallbacks: "ops", colLimited: "percentunit"}, units)
	}
}

// TestHeadlineStatsNameTheWorstDependency: the Overview's headline numbers count dependencies or
// show the worst one by name, rather than summing every dependency.
func TestHeadlineStatsNameTheWorstDependency(t *testing.T) {
	ov := dashboardsOf(t, generate(t, Config{}))[Dir+"/stormwatch-overview.json"]
	n := 0
	for _, p := range panels(ov) {
		if p.Type != "stat" {
			continue
		}
		n++
		expr := p.Targets[0].(*prometheus.Dataquery).Expr
		opts := p.Options.(*stat.Options)
		switch {
		case strings.HasPrefix(expr, "topk(1, "):
			assert.Contains(t, expr, "by (job, name)", *p.Title)
			assert.Equal(t, "value_and_name", string(opts.TextMode), "%s names the dependency", *p.Title)
			assert.Equal(t, "{{name}}", *p.Targets[0].(*prometheus.Dataquery).LegendFormat, *p.Title)
		case strings.HasPrefix(expr, "count("):
			assert.Contains(t, expr, "max by (job, name)", "%s counts dependencies", *p.Title)
		default:
			assert.Contains(t, expr, catalog.RegistryOverflow.FullName(catalog.DefaultNamespace), "%s: only the overflow counter is a plain sum", *p.Title)
		}
		assert.NotEmpty(t, *p.Description, *p.Title)
	}
	assert.Equal(t, 6, n)
}

func queryOf(t *testing.T, d dashboard.Dashboard, title string) string {
	t.Helper()
	for _, p := range panels(d) {
		if *p.Title == title && p.Type == "timeseries" {
			return p.Targets[0].(*prometheus.Dataquery).Expr
		}
	}
	t.Fatalf("no time series panel %q", title)
	return ""
}

func legendOfPanel(t *testing.T, d dashboard.Dashboard, title string) string {
	t.Helper()
	for _, p := range panels(d) {
		if *p.Title == title && p.Type == "timeseries" {
			return *p.Targets[0].(*prometheus.Dataquery).LegendFormat
		}
	}
	t.Fatalf("no time series panel %q", title)
	return ""
}

// TestRulesAgreeOnTheDependencyDashboard: the alerts' dashboard_url (rules) opens the uid these
// dashboards get, and the rules accept exactly the uid prefixes and group_by labels the
// dashboards accept.
func TestRulesAgreeOnTheDependencyDashboard(t *testing.T) {
	assert.Equal(t, VariableDatasource, "datasource")
	for _, p := range []string{"", "stormwatch", "shop", "a_b-C9", strings.Repeat("u", rules.MaxDashboardUIDPrefixLen), strings.Repeat("u", rules.MaxDashboardUIDPrefixLen+1), "a/b", "has space", "é"} {
		files, derr := Generate(Config{UIDPrefix: p})
		rerr := rules.Config{DashboardUIDPrefix: p}.Validate()
		assert.Equal(t, derr == nil, rerr == nil, "uid prefix %q: dashboards %v, rules %v", p, derr, rerr)
		if derr == nil {
			var paths []string
			for _, f := range files {
				paths = append(paths, f.Path)
			}
			assert.Contains(t, paths, Dir+"/"+rules.DependencyDashboardUID(p)+".json", p)
		}
	}
	for _, gb := range [][]string{{"job", "name"}, {"cluster", "job"}, {"datasource"}, {"instance"}, {"kind"}} {
		_, derr := Generate(Config{GroupBy: gb})
		rerr := rules.Config{GroupBy: gb}.Validate()
		assert.Equal(t, derr == nil, rerr == nil, "group_by %v: dashboards %v, rules %v", gb, derr, rerr)
	}
}
