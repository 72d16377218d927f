package rules

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/promtooltest"
)

func promtool(t *testing.T) string {
	t.Helper()
	return promtooltest.Path(t)
}

// runPromtool runs promtool with args in dir and returns its combined output and whether it
// succeeded (sharded and remembered by internal/promtooltest).
func runPromtool(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	return promtooltest.Run(t, dir, args...)
}

// writeRuleAndTests writes the rule file and its tests for cfg into a temp dir.
func writeRuleAndTests(t *testing.T, cfg Config) string {
	t.Helper()
	dir := t.TempDir()
	rulesYAML, err := GeneratePrometheus(cfg)
	require.NoError(t, err)
	testsYAML, err := GenerateTests(cfg, "rules.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yaml"), testsYAML, 0o644))
	return dir
}

// TestPromtoolAcceptsGeneratedRulesAndTests runs `promtool check rules --lint=all
// --lint-fatal` and `promtool test rules` on the output of the default configuration and of a
// configuration with group_by and a selector. `make rules-matrix` (build tag promtoolmatrix)
// runs the same checks on a wider matrix: thresholds at both ends of their ranges, short and
// long rate windows and fors, a namespace, disabled alerts.
func TestPromtoolAcceptsGeneratedRulesAndTests(t *testing.T) {
	checkWithPromtool(t, map[string]Config{
		"defaults": {},
		// group_by without name (it is always kept) and a selector.
		"group_by cluster and job, with a selector": {GroupBy: []string{"cluster", "job"}, Selector: `job=~"checkout|cart", cluster!="dev"`},
	})
}

// checkWithPromtool generates the rules and tests of each configuration and runs `promtool
// check rules --lint=all --lint-fatal` and `promtool test rules` on them, in parallel.
func checkWithPromtool(t *testing.T, configs map[string]Config) {
	promtool(t)
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := writeRuleAndTests(t, cfg)
			out, ok := runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
			require.True(t, ok, "promtool check rules:\n%s", out)
			out, ok = runPromtool(t, dir, "test", "rules", "rules.test.yaml")
			require.True(t, ok, "promtool test rules:\n%s", out)
			assert.Contains(t, out, "SUCCESS")
		})
	}
}

// TestMutationsAreCaught shows that the generated tests pin the rules' intent: each mutation
// of the generated rule file (a wrong threshold, a flipped comparison, a dropped clause, a
// dropped for) makes `promtool test rules` fail. Only the mutated alert's test groups are run
// (--run), which keeps the test fast; TestPromtoolAcceptsGeneratedRulesAndTests shows they
// pass on the unmutated rules.
func TestMutationsAreCaught(t *testing.T) {
	promtool(t)
	mutations := []struct {
		name      string
		alert     string
		from, to  string
		wantGroup string // a test group that must fail, or `expr: "<query>"`: a promql_expr_test (promtool does not name its group)
	}{
		{"wrong threshold", AlertStuckOpen, ") > 120\n", ") > 1200\n", "fires"},
		{"flipped comparison", AlertRetriesNotRescuing, "ratio_rate5m < 0.5", "ratio_rate5m > 0.5", "fires"},
		{"off-by-one trip count", AlertFlapping, "increase15m >= 3", "increase15m > 3", "fires on trip number 3"},
		{"flapping without hysteresis (any trip holds or fires it)", AlertFlapping, "and on (job, name, instance)", "or on (job, name, instance)", "a single later trip does not bring it back"},
		{"idle breaker pages (traffic clause dropped)", AlertStuckOpen, "and on (job, name, instance)", "or on (job, name, instance)", "idle: an open breaker without traffic"},
		{"newest episode not singled out (the previous episode's cause alerts too)", AlertStuckOpen,
			"== on (job, name, instance) group_left ()", "or on (job, name, instance)", `expr: "ALERTS{alertname=\"CircuitBreakerStuckOpen\", alertstate=\"pending\"}", time: `},
		{"trip cause dropped", AlertStuckOpen, "max by (job, name, instance, cause)", "max by (job, name, instance)", "names the cause slow_call_rate"},
		{"stuck-open gauge read as it is (a failed scrape restarts for)", AlertStuckOpen, "last_over_time(resilience_circuitbreaker_tripped_since_timestamp_seconds[45s])", "resilience_circuitbreaker_tripped_since_timestamp_seconds", "one scrape failed"},
		{"stuck-open gauge read over the rate window (a vanished target lingers)", AlertStuckOpen, "[45s]", "[5m]", "when the target disappears"},
		{"bulkhead size read over the rate window (a vanished target lingers)", AlertBulkheadSaturated, "[45s]", "[5m]", "when the target disappears"},
		{"bulkhead rejections without a volume floor (a trickle pages)", AlertBulkheadRejectionsHigh, "* 300 >= 10", "* 300 >= 0", "a trickle"},
		{"outage threshold too high (a real outage does not page)", AlertDependencyOutage, "ratio_rate5m > 0.25", "ratio_rate5m > 0.95", "a job of one instance: fires"},
		{"storm counted as contained during an outage", AlertRetryStormContained, "unless on (job, name)", "or on (job, name)", "an outage"},
		{"blip pages (for dropped)", AlertSlowCallRateHigh, "for: 10m", "for: 0s", "blip"},
		{"saturation fires too early (for dropped)", AlertBulkheadSaturated, "for: 10m", "for: 0s", "fires when every permit is in use"},
		{"bulkhead gauge read as it is (a failed scrape restarts for)", AlertBulkheadSaturated, "avg_over_time(resilience_bulkhead_inflight_calls[5m])", "resilience_bulkhead_inflight_calls", "one scrape failed"},
		{"slow-call gauge read as it is (a restart resets for)", AlertSlowCallRateHigh, "last_over_time(resilience_circuitbreaker_slow_call_rate[45s])", "resilience_circuitbreaker_slow_call_rate", "process restarts"},
		{"no resolution (keep_firing_for far too long)", AlertRetryRateHigh, "        for: 5m\n        labels:", "        for: 5m\n        keep_firing_for: 1h\n        labels:", "resolves"},
		{"spike compared without the hour-ago baseline", AlertRetryRateSpike, "offset 1h", "offset 0s", "fires when the retry rate jumps"},
		{"spike without a first-hour baseline", AlertRetryRateSpike, "offset 15m", "offset 2h", "fires in the first hour"},
		{"fleet-wide on a single instance (min_instances dropped)", AlertOpenFleetWide, ") >= 2\n", ") >= 1\n", "a job of 1 instance(s)"},
		{"fleet-wide counts disabled and forced-open breakers", AlertOpenFleetWide, `{state=~"open|half_open"}`, `{state!="closed"}`, "forced open by an operator"},
		{"budget share inverted", AlertRetryBudgetExhausted, "> 0.1\n", "< 0.1\n", "at one call a second"},
		{"hedges' extra load without a volume floor (one hedge pages)", AlertHedgeExtraLoadHigh, "* 300 >= 10", "* 300 >= 0", "a trickle"},
		{"hedge win share flipped", AlertHedgesRarelyWinning, "< 0.2\n", "> 0.2\n", "fires when only"},
		{"hedges rarely winning without a volume floor (a trickle fires)", AlertHedgesRarelyWinning, "* 300 >= 10", "* 300 >= 0", "a trickle"},
		{"hedge budget share counts refusals among refusals only", AlertHedgeBudgetExhausted, "sum by (job, name) (rate(resilience_hedge_attempts_total[5m]))",
			`sum by (job, name) (rate(resilience_hedge_attempts_total{outcome="budget_denied"}[5m]))`, "below the threshold"},
		{"flapping held by keep_firing_for (resolves 25m after)", AlertFlapping, "        labels:\n", "        keep_firing_for: 10m\n        labels:\n", "resolves 15m after the last trip"},
	}
	rulesYAML, err := GeneratePrometheus(Config{})
	require.NoError(t, err)
	r, err := Config{}.resolve()
	require.NoError(t, err)
	// Each case in a group of its own: the cases packed side by side share no series
	// (TestPackedCasesShareNoSeries), so each sees the same alone, and --run runs the mutated
	// alert's cases only.
	testsYAML, err := r.renderTestFile("rules.yaml", false)
	require.NoError(t, err)
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			mutated := mutateAlert(t, string(rulesYAML), m.alert, m.from, m.to)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(mutated), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yaml"), testsYAML, 0o644))
			out, ok := runPromtool(t, dir, "check", "rules", "rules.yaml")
			require.True(t, ok, "the mutant must still be a valid rule file:\n%s", out)
			out, ok = runPromtool(t, dir, "test", "rules", "--run", "^"+m.alert+":", "rules.test.yaml")
			require.False(t, ok, "mutation %q survived promtool test rules:\n%s", m.name, out)
			assert.Contains(t, out, "FAILED")
			if strings.HasPrefix(m.wantGroup, "expr: ") {
				assert.Contains(t, out, m.wantGroup) // --run ran the mutated alert's groups only
			} else {
				assert.Contains(t, out, "name: "+m.alert+":", "the failing test groups belong to the mutated alert")
				assert.Regexp(t, `name: `+m.alert+`: [^\n]*`+regexp.QuoteMeta(m.wantGroup), out)
			}
			t.Logf("mutation %q of %s caught:\n%s", m.name, m.alert, firstLines(out, 12))
		})
	}
}

// mutateAlert replaces every from with to inside the rule of alert only.
func mutateAlert(t *testing.T, file, alert, from, to string) string {
	t.Helper()
	start := strings.Index(file, "- alert: "+alert+"\n")
	require.GreaterOrEqual(t, start, 0, alert)
	end := strings.Index(file[start+1:], "- alert: ")
	if end < 0 {
		end = len(file)
	} else {
		end += start + 1
	}
	if g := strings.Index(file[start:end], "\n  - name: "); g >= 0 {
		end = start + g
	}
	rule := file[start:end]
	require.Contains(t, rule, from, "mutation anchor not found in %s", alert)
	return file[:start] + strings.ReplaceAll(rule, from, to) + file[end:]
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// TestEveryAlertHasItsFourCases checks the shape of the generated tests: per alert, a case where
// it fires (with an expected firing alert), a blip case, an idle case and a resolve case, each
// with at least one check; plus the recording-rule values. Cases of alerts that share no series
// run side by side in one test group (named after its cases); two cases of one alert only when
// neither fires (on dependency names of their own).
func TestEveryAlertHasItsFourCases(t *testing.T) {
	out, err := GenerateTests(Config{}, "rules.yaml")
	require.NoError(t, err)
	var file yamlTestFile
	require.NoError(t, yaml.Unmarshal(out, &file))
	assert.Equal(t, []string{"rules.yaml"}, file.RuleFiles)
	assert.Equal(t, GroupNames, file.GroupEvalOrder)
	require.True(t, strings.HasPrefix(file.Tests[0].Name, "recording rules:"))
	assert.GreaterOrEqual(t, len(file.Tests[0].PromqlExprTests), 10)
	byAlert := map[string]map[string][]yamlAlertTest{} // alert → case name → its checks
	for _, g := range file.Tests[1:] {
		cases := map[string][]string{} // alert → its cases in the group
		for _, name := range strings.Split(g.Name, caseSeparator) {
			alert, _, _ := strings.Cut(name, ":")
			cases[alert] = append(cases[alert], name)
			if byAlert[alert] == nil {
				byAlert[alert] = map[string][]yamlAlertTest{}
			}
			byAlert[alert][name] = nil
		}
		for _, at := range g.AlertRuleTests {
			require.Contains(t, cases, at.Alertname, g.Name)
			if len(cases[at.Alertname]) > 1 {
				require.Empty(t, at.ExpAlerts, "only cases that never fire share a group with cases of their alert: %q", g.Name)
			}
			for _, name := range cases[at.Alertname] {
				byAlert[at.Alertname][name] = append(byAlert[at.Alertname][name], at)
			}
		}
	}
	for _, alert := range AlertNames() {
		kinds := map[string]bool{}
		for name, checks := range byAlert[alert] {
			require.NotEmpty(t, checks, name)
			firing := false
			for _, at := range checks {
				if len(at.ExpAlerts) > 0 {
					firing = true
					assert.Equal(t, "payments-api", at.ExpAlerts[0].ExpLabels["name"])
					assert.NotContains(t, at.ExpAlerts[0].ExpAnnotations["description"], "{{", "expected annotations are expanded")
				}
			}
			switch {
			case strings.Contains(name, "resolves"):
				kinds["resolves"] = true
				assert.True(t, firing, name)
				assert.Empty(t, checks[len(checks)-1].ExpAlerts, "%s: the last check is after the resolution", name)
			case strings.Contains(name, "fires"):
				kinds["fires"] = true
				assert.True(t, firing, name)
			case strings.Contains(name, "blip"):
				kinds["blip"] = true
				assert.False(t, firing, name)
			case strings.Contains(name, "idle"):
				kinds["idle"] = true
				assert.False(t, firing, name)
			default:
				assert.False(t, firing, name)
			}
		}
		assert.Equal(t, map[string]bool{"fires": true, "blip": true, "idle": true, "resolves": true}, kinds, alert)
	}
}

// TestPackedCasesShareNoSeries: in a test group of several cases, no case writes a metric that
// another alert's case reads (directly, through recording rules or in its description's
// queries) or writes, no series is
// written twice (cases of one alert are on dependency names of their own); and no case name
// contains the separator of the group's name.
func TestPackedCasesShareNoSeries(t *testing.T) {
	configs := matrixConfigs()
	configs["defaults"] = Config{}
	for name, cfg := range configs {
		r, err := cfg.resolve()
		require.NoError(t, err)
		lv, err := r.testLabels()
		require.NoError(t, err)
		written := map[string]map[string]bool{} // alert → the metrics its cases write
		for _, sp := range specs {
			c := &scenario{r: r, sp: sp, s: r.alerts[sp.name], lv: lv}
			cases, err := scenarios[sp.name](c)
			require.NoError(t, err)
			written[sp.name] = map[string]bool{}
			for _, tc := range cases {
				assert.NotContains(t, tc.name, caseSeparator)
				for _, tr := range tc.tracks {
					written[sp.name][r.name(tr.metric)] = true
				}
			}
		}
		out, err := r.renderTests("rules.yaml")
		require.NoError(t, err)
		var file yamlTestFile
		require.NoError(t, yaml.Unmarshal(out, &file))
		reads := expandedExprs(r)
		packed := 0
		for _, g := range file.Tests[1:] {
			names := strings.Split(g.Name, caseSeparator)
			if len(names) > 1 {
				packed++
			}
			seen := map[string]bool{}
			for _, s := range g.InputSeries {
				require.False(t, seen[s.Series], "%s twice in %q", s.Series, g.Name)
				seen[s.Series] = true
			}
			for _, a := range names {
				a, _, _ = strings.Cut(a, ":")
				for _, b := range names {
					b, _, _ = strings.Cut(b, ":")
					for m := range written[a] {
						if a != b && (written[b][m] || strings.Contains(reads[b], m)) {
							t.Errorf("%s: %s's cases write %s, which %s uses, in %q", name, a, m, b, g.Name)
						}
					}
				}
			}
		}
		assert.Greater(t, packed, 10, "cases run side by side")
	}
}

// expandedExprs returns each alert's expression and annotations followed by the expressions of
// the recording rules it reads, recursively.
func expandedExprs(r *resolved) map[string]string {
	recorded := map[string]string{}
	out := map[string]string{}
	for _, g := range r.groups() {
		for _, rl := range g.Rules {
			if rl.Record != "" {
				recorded[rl.Record] += "\n" + rl.Expr
			} else {
				out[rl.Alert] = rl.Expr
				for _, a := range rl.Annotations {
					out[rl.Alert] += "\n" + a // the descriptions' queries
				}
			}
		}
	}
	for alert, expr := range out {
		for range 5 {
			for rec, body := range recorded {
				if strings.Contains(expr, rec) && !strings.Contains(expr, body) {
					expr += "\n" + body
				}
			}
		}
		out[alert] = expr
	}
	return out
}

func TestGeneratedSeriesNotation(t *testing.T) {
	c := &scenario{r: &resolved{}, lv: map[string]string{}}
	m := catalog.RetryAttempts
	assert.Equal(t, "0x1 5+5x2", c.counter(m, time.Minute, when(30*time.Second, forever, 5, 0)).render())
	assert.Equal(t, "0x1 60x1 0", c.gauge(m, time.Minute, when(30*time.Second, 60*time.Second, 60, 0)).render())
	assert.Equal(t, "1 NaN NaN", c.gauge(m, 30*time.Second, func(t time.Duration) float64 {
		if t == 0 {
			return 1
		}
		return math.NaN()
	}).render())

	// A restart: a stale marker, a missed scrape, then the counter from 0 with the calls of
	// the gap.
	tr := c.counter(m, 2*time.Minute, func(time.Duration) float64 { return 1 })
	restart(45*time.Second, 30*time.Second, tr)
	assert.Equal(t, "0+1x2 stale _x1 3+1x3", tr.render())
	// increase() as Prometheus computes it, across a restart too: one call a step, 20 in 5m.
	steady := c.counter(m, 10*time.Minute, func(time.Duration) float64 { return 1 })
	v, ok := steady.increase(10*time.Minute, 5*time.Minute)
	require.True(t, ok)
	assert.InDelta(t, 20.0, v, 1e-9)
	restart(8*time.Minute, 30*time.Second, steady)
	v, ok = steady.increase(10*time.Minute, 5*time.Minute)
	require.True(t, ok)
	assert.InDelta(t, 20.0, v, 1e-9)

	g := c.gauge(m, time.Minute, func(time.Duration) float64 { return 7 })
	failScrape(30*time.Second, g)
	assert.Equal(t, "7x1 stale 7x1", g.render())
	disappear(60*time.Second, g)
	assert.Equal(t, "7x1 stale 7 stale", g.render())
	last, ok := g.last(time.Minute, time.Minute)
	require.True(t, ok)
	assert.Equal(t, 7.0, last)
}
