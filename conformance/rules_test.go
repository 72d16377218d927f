package conformance

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/rules"
)

var promql = parser.NewParser(parser.Options{})

// targetLabels are added by Prometheus to every scraped series.
var targetLabels = []string{"job", "instance"}

type ruleConfig struct {
	name    string
	cfg     rules.Config
	ns      string   // metric prefix the config resolves to
	groupBy []string // aggregation labels the config resolves to (group_by + selector labels)
}

var ruleConfigs = []ruleConfig{
	{name: "defaults", ns: catalog.DefaultNamespace, groupBy: []string{"job", "name"}},
	{
		name: "custom",
		cfg: rules.Config{Namespace: "acme", Selector: `job="checkout", env=~"prod|staging", team!~"x.*"`,
			GroupBy: []string{"cluster", "job", "name"}},
		ns: "acme", groupBy: []string{"cluster", "job", "name", "env", "team"},
	},
	{name: "no namespace", cfg: rules.Config{Namespace: rules.NoNamespace, GroupBy: []string{"name"}}, ns: "", groupBy: []string{"name"}},
	{name: "rate window 1m", cfg: rules.Config{RateWindow: time.Minute, Selector: `env="prod"`}, ns: catalog.DefaultNamespace, groupBy: []string{"job", "name", "env"}},
	{name: "group_by without name", cfg: rules.Config{GroupBy: []string{"cluster", "job"}, Selector: `env=~"prod|staging", cluster!="dev"`},
		ns: catalog.DefaultNamespace, groupBy: []string{"cluster", "job", "name", "env"}},
}

// testingT is what the checker reports to: *testing.T, or a recorder in the self-tests.
type testingT interface {
	require.TestingT
	Helper()
}

// checker validates expressions for one configuration.
type checker struct {
	t        testingT
	rc       ruleConfig
	selector []*labels.Matcher
	recorded map[string][]string // recorded series → its labels
}

func newChecker(t testingT, rc ruleConfig) *checker {
	c := &checker{t: t, rc: rc, recorded: map[string][]string{}}
	if rc.cfg.Selector != "" {
		ms, err := promql.ParseMetricSelector("{" + rc.cfg.Selector + "}")
		require.NoError(t, err, "the selector must be valid PromQL")
		c.selector = ms
	}
	groups, err := rules.Groups(rc.cfg)
	require.NoError(t, err)
	for _, g := range groups {
		for _, rl := range g.Rules {
			if rl.Record == "" {
				continue
			}
			ls := slices.Clone(rc.groupBy)
			level := strings.Split(rl.Record, ":")[0]
			if strings.HasSuffix(level, "_kind") {
				ls = append(ls, catalog.LabelKind)
			}
			if strings.HasSuffix(level, "_cause") {
				ls = append(ls, catalog.LabelCause)
			}
			if strings.HasSuffix(level, "_instance") {
				ls = append(ls, "instance")
			}
			c.recorded[rl.Record] = ls
		}
	}
	return c
}

// allowedLabels are every label a query may name: the catalog's, the target labels, the
// configured aggregation labels.
func (c *checker) allowedLabels() map[string]bool {
	out := map[string]bool{}
	for _, m := range catalog.All() {
		for _, l := range m.LabelNames() {
			out[l] = true
		}
	}
	for _, l := range append(slices.Clone(targetLabels), c.rc.groupBy...) {
		out[l] = true
	}
	out["le"] = true // histogram buckets
	return out
}

// check parses expr and checks every selector and label in it. requireSelector demands the
// configured selector in every vector selector; requireGroupBy demands the configured
// aggregation labels in every `by` clause.
func (c *checker) check(where, expr string, requireSelector, requireGroupBy bool) parser.Expr {
	t := c.t
	t.Helper()
	e, err := promql.ParseExpr(expr)
	require.NoError(t, err, "%s: %s", where, expr)
	allowed := c.allowedLabels()
	selectors := 0
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			selectors++
			var metricLabels []string
			var source catalog.Metric // the catalog metric whose closed label sets apply
			if ls, ok := c.recorded[n.Name]; ok {
				metricLabels = ls
				mid := strings.Split(n.Name, ":")[1]
				if m, ok := catalog.Lookup(c.rc.ns, mid+"_total"); ok {
					source = m
				}
			} else if n.Name == "ALERTS" { // Prometheus's own series of alert states (Flapping's hysteresis)
				return nil
			} else {
				m, ok := catalog.Lookup(c.rc.ns, n.Name)
				if !assert.True(t, ok, "%s: %q is neither a catalog metric nor a recording rule", where, n.Name) {
					return nil
				}
				source = m
				metricLabels = append(m.LabelNames(), targetLabels...)
				if m.Type == catalog.Histogram && strings.HasSuffix(n.Name, "_bucket") {
					metricLabels = append(metricLabels, "le")
				}
				metricLabels = append(metricLabels, c.rc.groupBy...) // labels the user's selector may add
			}
			for _, lm := range n.LabelMatchers {
				if lm.Name == labels.MetricName {
					continue
				}
				assert.Contains(t, metricLabels, lm.Name, "%s: %s has no label %q", where, n.Name, lm.Name)
				if l, ok := source.Label(lm.Name); ok && l.Values != nil {
					switch lm.Type {
					case labels.MatchEqual:
						assert.Contains(t, l.Values, lm.Value, "%s: %s=%q is not in the catalog's closed set", where, lm.Name, lm.Value)
					case labels.MatchRegexp:
						for _, alt := range strings.Split(lm.Value, "|") {
							assert.Contains(t, l.Values, alt, "%s: %s=~%q names a value outside the catalog's closed set", where, lm.Name, lm.Value)
						}
					}
				}
			}
			if requireSelector {
				for _, want := range c.selector {
					assert.True(t, hasMatcher(n.LabelMatchers, want), "%s: selector %s missing from %s", where, want, n)
				}
			}
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				assert.True(t, allowed[l], "%s: aggregation by unknown label %q", where, l)
			}
			if !n.Without && len(n.Grouping) > 0 && requireGroupBy {
				for _, l := range c.rc.groupBy {
					assert.Contains(t, n.Grouping, l, "%s: aggregation %s drops %q", where, n, l)
				}
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				for _, l := range n.VectorMatching.MatchingLabels {
					assert.True(t, allowed[l], "%s: vector matching on unknown label %q", where, l)
				}
			}
		}
		return nil
	})
	if requireSelector {
		assert.Positive(t, selectors, "%s: no vector selector", where)
	}
	return e
}

// templateQueryRE finds the queries an alert template runs: {{ with printf "<query>" $labels.a … | query }}.
var templateQueryRE = regexp.MustCompile(`printf ("(?:[^"\\]|\\.)*")((?: \$labels\.[a-zA-Z_][a-zA-Z0-9_]*)*) \| query`)

// templateQueries returns the PromQL of every query in an annotation, with the alert's label
// values (printf's %q verbs) filled in.
func templateQueries(t testingT, annotation string) []string {
	t.Helper()
	var out []string
	for _, m := range templateQueryRE.FindAllStringSubmatch(annotation, -1) {
		format, err := strconv.Unquote(m[1])
		require.NoError(t, err, m[1])
		args := strings.Fields(m[2])
		values := make([]any, len(args))
		for i := range args {
			values[i] = "value"
		}
		q := fmt.Sprintf(format, values...)
		require.NotContains(t, q, "%!", "printf verbs and $labels arguments match: %s", m[0])
		out = append(out, q)
	}
	return out
}

func hasMatcher(ms []*labels.Matcher, want *labels.Matcher) bool {
	for _, m := range ms {
		if m.Name == want.Name && m.Type == want.Type && m.Value == want.Value {
			return true
		}
	}
	return false
}

// TestRuleExpressionsParseAndUseTheCatalog parses every generated expression with the
// Prometheus 3.16 PromQL parser and checks its metrics, labels, selector and aggregations.
func TestRuleExpressionsParseAndUseTheCatalog(t *testing.T) {
	for _, rc := range ruleConfigs {
		t.Run(rc.name, func(t *testing.T) {
			c := newChecker(t, rc)
			groups, err := rules.Groups(rc.cfg)
			require.NoError(t, err)
			n := 0
			for _, g := range groups {
				for _, rl := range g.Rules {
					where := g.Name + "/" + rl.Record + rl.Alert
					e := c.check(where, rl.Expr, true, true)
					n++
					if rl.Record != "" {
						assert.Equal(t, parser.ValueTypeVector, e.Type(), where)
					}
					if rl.Alert != "" {
						assert.Equal(t, parser.ValueTypeVector, e.Type(), where)
						assert.Contains(t, rl.Annotations["description"], "$value", "%s: the description states the measured value", where)
						for name, a := range rl.Annotations {
							for _, q := range templateQueries(t, a) {
								c.check(where+" annotation "+name+" query", q, true, false)
							}
						}
					}
				}
			}
			assert.Equal(t, 42, n) // the recording rules (20) and the default alerts (22: 14 of the core primitives, 5 of the limiter and throttle, 3 of the hedge)
		})
	}
}

// TestRecordingRulesComeBeforeUse checks that every recorded series an expression uses is
// recorded earlier in the recording group (or in it at all, for the alerts).
func TestRecordingRulesComeBeforeUse(t *testing.T) {
	groups, err := rules.Groups(rules.Config{})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, g := range groups {
		for _, rl := range g.Rules {
			e, err := promql.ParseExpr(rl.Expr)
			require.NoError(t, err)
			parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok && strings.Contains(vs.Name, ":") {
					assert.True(t, seen[vs.Name], "%s uses %s before it is recorded", rl.Record+rl.Alert, vs.Name)
				}
				return nil
			})
			if rl.Record != "" {
				seen[rl.Record] = true
			}
		}
	}
}

// TestGeneratedTestSeriesUseTheCatalog parses the input series of the generated promtool tests
// and the expressions of their promql_expr_test cases.
func TestGeneratedTestSeriesUseTheCatalog(t *testing.T) {
	for _, rc := range ruleConfigs {
		t.Run(rc.name, func(t *testing.T) {
			c := newChecker(t, rc)
			out, err := rules.GenerateTests(rc.cfg, "rules.yaml")
			require.NoError(t, err)
			var file struct {
				Tests []struct {
					Name        string `yaml:"name"`
					InputSeries []struct {
						Series string `yaml:"series"`
						Values string `yaml:"values"`
					} `yaml:"input_series"`
					PromqlExprTests []struct {
						Expr string `yaml:"expr"`
					} `yaml:"promql_expr_test"`
				} `yaml:"tests"`
			}
			require.NoError(t, yaml.Unmarshal(out, &file))
			require.NotEmpty(t, file.Tests)
			for _, tg := range file.Tests {
				for _, s := range tg.InputSeries {
					ls, vals, err := promql.ParseSeriesDesc(s.Series + " " + s.Values)
					require.NoError(t, err, "%s: %s %s", tg.Name, s.Series, s.Values)
					require.NotEmpty(t, vals)
					m, ok := catalog.Lookup(rc.ns, ls.Get(labels.MetricName))
					require.True(t, ok, "%s: input series %s is not a catalog metric", tg.Name, s.Series)
					known := append(m.LabelNames(), targetLabels...)
					known = append(known, rc.groupBy...)
					ls.Range(func(l labels.Label) {
						if l.Name != labels.MetricName {
							assert.Contains(t, known, l.Name, "%s: %s", tg.Name, s.Series)
						}
					})
					for _, sel := range c.selector {
						assert.True(t, sel.Matches(ls.Get(sel.Name)), "%s: input series %s is not selected by %s", tg.Name, s.Series, sel)
					}
				}
				for _, et := range tg.PromqlExprTests {
					c.check(tg.Name, et.Expr, false, false)
				}
			}
		})
	}
}

var promqlBlock = regexp.MustCompile("(?s)```promql\n(.*?)```")

// TestRunbookQueriesParse parses every query in the generated runbooks.
func TestRunbookQueriesParse(t *testing.T) {
	for _, rc := range ruleConfigs {
		t.Run(rc.name, func(t *testing.T) {
			c := newChecker(t, rc)
			files, err := rules.GenerateRunbooks(rc.cfg)
			require.NoError(t, err)
			n := 0
			for _, f := range files {
				for _, m := range promqlBlock.FindAllStringSubmatch(string(f.Data), -1) {
					for _, q := range strings.Split(strings.TrimSpace(m[1]), "\n\n") {
						c.check(fmt.Sprintf("%s query %q", f.Path, q), q, true, false)
						n++
					}
				}
			}
			assert.Greater(t, n, 40)
		})
	}
}

// recorder collects failures instead of failing the test.
type recorder struct{ errs []string }

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) FailNow() { panic(r) }
func (r *recorder) Helper()  {}

// TestCheckerCatchesViolations shows the checks above would fail on a bad expression.
func TestCheckerCatchesViolations(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`sum by (job, env, team, cluster, name) (rate(acme_retry_attempts_total{job="checkout", env=~"prod|staging", team!~"x.*"}[5m]))`, ""},
		{`sum by (job, env, team, cluster, name) (rate(acme_retry_attempt_total{job="checkout", env=~"prod|staging", team!~"x.*"}[5m]))`, "neither a catalog metric"},
		{`sum by (job, env, team, cluster, name) (rate(acme_retry_attempts_total{env=~"prod|staging", team!~"x.*"}[5m]))`, "selector"},
		{`sum by (job, env, team, name) (rate(acme_retry_attempts_total{job="checkout", env=~"prod|staging", team!~"x.*"}[5m]))`, "drops \"cluster\""},
		{`sum by (job, env, team, cluster, name, pod) (rate(acme_retry_attempts_total{job="checkout", env=~"prod|staging", team!~"x.*"}[5m]))`, "unknown label \"pod\""},
		{`acme_retry_calls_total{job="checkout", env=~"prod|staging", team!~"x.*", kind="success"}`, "closed set"},
		{`acme_retry_calls_total{job="checkout", env=~"prod|staging", team!~"x.*", state="open"}`, "no label \"state\""},
	} {
		rec := &recorder{}
		c := newChecker(t, ruleConfigs[1])
		c.t = rec
		func() {
			defer func() {
				if r := recover(); r != nil && r != rec {
					panic(r)
				}
			}()
			c.check("self-test", tc.expr, true, true)
		}()
		if tc.want == "" {
			assert.Empty(t, rec.errs, tc.expr)
			continue
		}
		assert.Contains(t, strings.Join(rec.errs, "\n"), tc.want, tc.expr)
	}
}

// TestRateWindowReachesEveryRate checks that the configured rate window is the range of every
// rate in the rules and runbooks, except the windows with a meaning of their own
// (CircuitBreakerStuckOpen's 2m lookback, RetryBudgetExhausted's 2m rate,
// CircuitBreakerFlapping's 15m; in the runbooks also "trips in the last hour" and the 10m
// outcomes of RetriesNotRescuing), and names every recorded series.
func TestRateWindowReachesEveryRate(t *testing.T) {
	// Windows with a meaning of their own: StuckOpen's and FleetWide's evidence of impact (2m),
	// the flapping window (15m), the budget's minutes (1m), RetryRateSpike's first-hour baseline (1h).
	// The gauges' lookback (three scrape intervals, so that two missed scrapes are tolerated)
	// is a window of its own too.
	lookback := rules.GaugeLookback(rules.DefaultScrapeInterval)
	ownInRules := map[time.Duration]bool{2 * time.Minute: true, 15 * time.Minute: true, time.Minute: true, time.Hour: true, lookback: true}
	ownInRunbooks := map[time.Duration]bool{2 * time.Minute: true, 15 * time.Minute: true, 10 * time.Minute: true, time.Hour: true, time.Minute: true, lookback: true}
	// The recorded trip count is over the flapping window whatever the rate window, and the
	// breakers' evidence of impact (rejections or failed probes) over its 2m.
	recorded := func(window time.Duration) string {
		return `:(ratio_)?rate` + rules.FormatDuration(window) + `$|:increase15m$|:increase2m$`
	}
	for _, w := range []time.Duration{0, time.Minute, 7 * time.Minute, 90 * time.Second} {
		cfg := rules.Config{RateWindow: w}
		window := w
		if w == 0 {
			window = rules.DefaultRateWindow
		}
		t.Run(rules.FormatDuration(window), func(t *testing.T) {
			ranges := func(where, expr string, own map[time.Duration]bool) {
				e, err := promql.ParseExpr(expr)
				require.NoError(t, err, "%s: %s", where, expr)
				parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
					if ms, ok := node.(*parser.MatrixSelector); ok {
						assert.True(t, ms.Range == window || own[ms.Range], "%s: range [%s] is neither the rate window %s nor a window of its own in %s",
							where, rules.FormatDuration(ms.Range), rules.FormatDuration(window), expr)
					}
					if vs, ok := node.(*parser.VectorSelector); ok && strings.Contains(vs.Name, ":") {
						assert.Regexp(t, recorded(window), vs.Name, where)
					}
					return nil
				})
			}
			groups, err := rules.Groups(cfg)
			require.NoError(t, err)
			for _, g := range groups {
				for _, rl := range g.Rules {
					if rl.Record != "" {
						assert.Regexp(t, recorded(window), rl.Record)
					}
					ranges(rl.Record+rl.Alert, rl.Expr, ownInRules)
				}
			}
			files, err := rules.GenerateRunbooks(cfg)
			require.NoError(t, err)
			for _, f := range files {
				for _, m := range promqlBlock.FindAllStringSubmatch(string(f.Data), -1) {
					for _, q := range strings.Split(strings.TrimSpace(m[1]), "\n\n") {
						ranges(f.Path, q, ownInRunbooks)
					}
				}
			}
		})
	}
}
