package conformance_test

// Dependency SLOs: every expression of the SLO rule file and every query of the SLOs dashboard
// parses with the PromQL parser of Prometheus 3.16; raw selectors select catalog metrics by
// catalog labels (closed-set values included) and carry the configured selector; selectors of
// recorded series name series the SLO rules record — earlier in the file, and in the same group
// for recording rules — and select one SLO.

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

type sloConfig struct {
	name    string
	cfg     rules.Config
	ns      string
	groupBy []string // aggregation labels: group_by plus the selector's labels
}

var sloConfigs = []sloConfig{
	{
		name: "defaults",
		cfg: rules.Config{SLOs: []rules.SLO{
			{Name: "payments", Objective: 0.999},
			{ID: "core", NameRegex: "inventory|recs", Objective: 0.99, Period: 7 * 24 * time.Hour, Source: rules.SLOSourceBreaker, FallbacksGood: true},
		}},
		ns: catalog.DefaultNamespace, groupBy: []string{"job", "name"},
	},
	{
		name: "custom",
		cfg: rules.Config{Namespace: "acme", Selector: `env="prod", team!~"x.*"`, GroupBy: []string{"cluster", "job", "name"},
			SLOs: []rules.SLO{{ID: "pay.v2", Name: "payments", Objective: 0.9995, Period: 28 * 24 * time.Hour, FallbacksGood: true, MinCalls: 1}}},
		ns: "acme", groupBy: []string{"cluster", "job", "name", "env", "team"},
	},
	{
		name: "no namespace",
		cfg:  rules.Config{Namespace: rules.NoNamespace, GroupBy: []string{"name"}, SLOs: []rules.SLO{{Name: "db", Objective: 0.99, Source: rules.SLOSourceBreaker}}},
		ns:   "", groupBy: []string{"name"},
	},
}

// sloSelectorMatchers parses the configured selector.
func sloSelectorMatchers(t *testing.T, p parser.Parser, sel string) []*labels.Matcher {
	t.Helper()
	if sel == "" {
		return nil
	}
	ms, err := p.ParseMetricSelector("{" + sel + "}")
	require.NoError(t, err)
	return ms
}

func hasLabelMatcher(ms []*labels.Matcher, want *labels.Matcher) bool {
	for _, m := range ms {
		if m.Name == want.Name && m.Type == want.Type && m.Value == want.Value {
			return true
		}
	}
	return false
}

// sloMatcher returns the matcher on label of a selector, or nil.
func sloMatcher(vs *parser.VectorSelector, label string) *labels.Matcher {
	for _, m := range vs.LabelMatchers {
		if m.Name == label {
			return m
		}
	}
	return nil
}

func TestSLORuleExpressionsParseAndUseTheCatalog(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, sc := range sloConfigs {
		t.Run(sc.name, func(t *testing.T) {
			sel := sloSelectorMatchers(t, p, sc.cfg.Selector)
			groups, err := rules.SLOGroups(sc.cfg)
			require.NoError(t, err)
			require.Len(t, groups, len(sc.cfg.SLOs)+1, "the recording rules' group and one alert group per SLO")
			infos, err := rules.SLOs(sc.cfg)
			require.NoError(t, err)
			index := map[string]int{} // SLO id → position in the config
			for i, info := range infos {
				index[info.ID] = i
			}
			recordedIn := map[string]string{} // recorded name → its group
			for _, g := range groups {
				for _, rl := range g.Rules {
					where := g.Name + " " + rl.Record + rl.Alert
					id := rl.Labels[rules.LabelSLO]
					gi, ok := index[id]
					require.True(t, ok, "%s: slo label %q", where, id)
					if rl.Alert != "" {
						assert.Equal(t, rules.GroupSLOPrefix+id, g.Name, where)
					}
					expr, err := p.ParseExpr(rl.Expr)
					require.NoError(t, err, "%s: %s", where, rl.Expr)
					parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
						switch n := node.(type) {
						case *parser.VectorSelector:
							for _, m := range sel {
								assert.True(t, hasLabelMatcher(n.LabelMatchers, m), "%s: %s lacks the selector's %s", where, n, m)
							}
							if strings.Contains(n.Name, ":") {
								in, ok := recordedIn[n.Name]
								assert.True(t, ok, "%s: %s is not recorded earlier", where, n.Name)
								if rl.Record != "" {
									assert.Equal(t, g.Name, in, "%s: a recording rule reads %s of another group", where, n.Name)
								}
								m := sloMatcher(n, rules.LabelSLO)
								if assert.NotNil(t, m, "%s: %s selects no SLO", where, n) {
									assert.Equal(t, id, m.Value)
								}
								return nil
							}
							metric, ok := catalog.Lookup(sc.ns, n.Name)
							if !assert.True(t, ok, "%s: %s is not a catalog series", where, n.Name) {
								return nil
							}
							name := sloMatcher(n, catalog.LabelName)
							if assert.NotNil(t, name, "%s: %s selects every dependency", where, n) {
								want := sc.cfg.SLOs[gi].Name
								if want == "" {
									want = sc.cfg.SLOs[gi].NameRegex
								}
								assert.Equal(t, want, name.Value)
							}
							allowed := append(metric.LabelNames(), "job", "instance")
							for _, m := range n.LabelMatchers {
								if m.Name == labels.MetricName || slices.ContainsFunc(sel, func(s *labels.Matcher) bool { return s.Name == m.Name }) {
									continue
								}
								assert.Contains(t, allowed, m.Name, "%s: %s", where, n)
								if l, ok := metric.Label(m.Name); ok && l.Values != nil {
									for _, v := range strings.Split(m.Value, "|") {
										assert.Contains(t, l.Values, v, "%s: %s", where, m)
									}
								}
							}
						case *parser.AggregateExpr:
							assert.False(t, n.Without, where)
							assert.Equal(t, sc.groupBy, n.Grouping, "%s: aggregations keep exactly the aggregation labels", where)
						case *parser.Call:
							if n.Func.Name == "rate" {
								vs := n.Args[0].(*parser.MatrixSelector).VectorSelector.(*parser.VectorSelector)
								m, _ := catalog.Lookup(sc.ns, vs.Name)
								assert.Equal(t, catalog.Counter, m.Type, "%s: rate() over %s", where, vs.Name)
							}
						}
						return nil
					})
					if rl.Record != "" {
						recordedIn[rl.Record] = g.Name
					}
				}
			}
		})
	}
}

// sloDashboardQuery is one PromQL expression of the SLOs dashboard.
type sloDashboardQuery struct{ where, expr string }

var sloLabelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

func sloDashboardQueries(t *testing.T, cfg rules.Config) ([]sloDashboardQuery, []rules.SLOInfo) {
	t.Helper()
	infos, err := rules.SLOs(cfg)
	require.NoError(t, err)
	files, err := dashboards.GenerateSLOs(dashboards.Config{Namespace: cfg.Namespace, Selector: cfg.Selector}, infos)
	require.NoError(t, err)
	require.Len(t, files, 2, "the dashboard and the linter's exclusion file")
	var d grafanaJSON
	require.NoError(t, json.Unmarshal(files[0].Data, &d))
	var out []sloDashboardQuery
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			out = append(out, sloDashboardQuery{where: "panel " + p.Title + " " + tg.RefID, expr: tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := sloLabelValuesRE.FindStringSubmatch(v.Query.(string))
		if m == nil {
			m = queryResultRE.FindStringSubmatch(v.Query.(string))
		}
		require.NotNil(t, m, "variable %s", v.Name)
		if v.Name == "job" || v.Name == "instance" {
			// The processes exporting the catalog, from the registry's overflow counter (the
			// recorded series have no instance label).
			overflow := catalog.RegistryOverflow.FullName(cfg.Namespace)
			if cfg.Namespace == "" {
				overflow = catalog.RegistryOverflow.FullName(catalog.DefaultNamespace)
			} else if cfg.Namespace == rules.NoNamespace {
				overflow = catalog.RegistryOverflow.FullName("")
			}
			assert.True(t, strings.HasPrefix(m[1], overflow), "variable %s: %s", v.Name, m[1])
			continue
		}
		out = append(out, sloDashboardQuery{where: "variable " + v.Name, expr: m[1]})
	}
	return out, infos
}

func TestSLODashboardQueriesParseAndSelectRecordedSeries(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, sc := range sloConfigs {
		t.Run(sc.name, func(t *testing.T) {
			qs, infos := sloDashboardQueries(t, sc.cfg)
			sel := sloSelectorMatchers(t, p, sc.cfg.Selector)
			recorded := map[string]string{} // recorded series → the SLO ids it may belong to
			for _, info := range infos {
				for _, n := range append([]string{info.Calls, info.BadCalls, info.PeriodErrorRatio, info.BudgetRemaining}, info.ErrorRatio...) {
					recorded[n] += "|" + info.ID
				}
			}
			for _, q := range qs {
				expr, err := p.ParseExpr(substitute(q.expr))
				require.NoError(t, err, "%s: %s", q.where, q.expr)
				n := 0
				parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
					vs, ok := node.(*parser.VectorSelector)
					if !ok {
						return nil
					}
					n++
					for _, m := range sel {
						assert.True(t, hasLabelMatcher(vs.LabelMatchers, m), "%s: lacks the selector's %s", q.where, m)
					}
					names := []string{vs.Name}
					if vs.Name == "" {
						names = strings.Split(sloMatcher(vs, labels.MetricName).Value, "|")
					}
					for _, name := range names {
						assert.NotEmpty(t, recorded[name], "%s: %s is not a recorded SLO series", q.where, name)
					}
					slo := sloMatcher(vs, rules.LabelSLO)
					if assert.NotNil(t, slo, "%s: selects no SLO", q.where) && vs.Name != "" {
						assert.Contains(t, strings.Split(recorded[vs.Name], "|"), slo.Value, "%s", q.where)
					}
					return nil
				})
				assert.NotZero(t, n, q.where)
			}
		})
	}
}
