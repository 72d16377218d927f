package rules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// hostileStrings reach annotations: template syntax, quotes, YAML and URL specials, non-ASCII.
var hostileStrings = []string{
	"{{", "}}", "{{ $labels.job }}", `{{ "x" }}`, "{{/* c */}}", "{{-", "a{", "}a", "{", "}",
	`{{"`, `"}}`, "{{`", "`", `\`, `\{{`, "$labels", "${x}", "%7B%7B", "'", `"`, ": x", "- y", "# z",
	"é", "\u2028", "{{{{}}}}", strings.Repeat("{", 100),
}

// expand runs s through Go's text/template, which Prometheus uses for alert annotations and
// labels, with the $labels and $value variables Prometheus defines.
func expand(t *testing.T, s string) string {
	t.Helper()
	tmpl, err := template.New("a").Option("missingkey=zero").Parse("{{ $labels := .Labels }}{{ $value := .Value }}" + s)
	require.NoError(t, err, "%q does not parse as a template", s)
	var b strings.Builder
	require.NoError(t, tmpl.Execute(&b, map[string]any{"Labels": map[string]string{}, "Value": 0.0}), s)
	return b.String()
}

func TestTemplateLiteralExpandsToItself(t *testing.T) {
	for _, s := range append(hostileStrings, "", "plain", "https://wiki.example.com/rb/X") {
		lit := templateLiteral(s)
		assert.Equal(t, s, expand(t, lit), "%q as %q", s, lit)
		// Concatenated with template text on either side, as in an annotation.
		assert.Equal(t, s+"{{x}}", expand(t, lit+`{{ "{{x}}" }}`), "%q", s)
		if !strings.ContainsAny(s, "{}") {
			assert.Equal(t, s, lit, "strings without braces stay as they are")
		}
	}
}

// TestHostileRunbookURLs: every hostile runbook_base_url and grafana_base_url is either
// refused with a ConfigError naming the field, or yields a rule file that promtool accepts and
// whose runbook_url expands to the URL itself. https://x/{{ used to be accepted and break the
// rule file.
func TestHostileRunbookURLs(t *testing.T) {
	var accepted []string
	for _, h := range hostileStrings {
		for _, u := range []string{"https://x/" + h, "https://x.example/rb/" + h + "/end", "runbooks/" + h, h} {
			_, err := Generate(Config{RunbookBaseURL: u})
			_, gerr := Generate(Config{GrafanaBaseURL: u})
			assert.Equal(t, err == nil, gerr == nil || u == "", "%q: runbook_base_url and grafana_base_url accept the same URLs", u)
			if err != nil {
				var ce *ConfigError
				require.True(t, errors.As(err, &ce), "%q: %v", u, err)
				assert.Equal(t, "runbook_base_url", ce.Field, u)
				if u != "" {
					require.True(t, errors.As(gerr, &ce), "%q: %v", u, gerr)
					assert.Equal(t, "grafana_base_url", ce.Field, u)
				}
				continue
			}
			accepted = append(accepted, u)
		}
	}
	_, err := Generate(Config{RunbookBaseURL: "https://x/{{"})
	require.Error(t, err, "the URL of the issue is refused: braces are not URL characters")
	assert.Contains(t, accepted, "https://x/%7B%7B", "percent-encoded braces are fine")
	assert.Contains(t, accepted, "https://x/$labels")

	dir := t.TempDir()
	var files []string
	for i, u := range accepted {
		name := filepath.Join(dir, fmt.Sprintf("rules%03d.yaml", i))
		out, err := Generate(Config{RunbookBaseURL: u, GrafanaBaseURL: u})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(name, out, 0o644))
		files = append(files, name)
	}
	promtool(t)
	out, ok := runPromtool(t, dir, append([]string{"check", "rules", "--lint=all", "--lint-fatal"}, files...)...)
	require.True(t, ok, "%s", out)
}

// TestTemplateSyntaxNeverReachesAnnotationsUnescaped bypasses the URL validation: even a base
// holding template syntax yields a rule file promtool loads, and the generated tests (which
// expect the literal URL in runbook_url and dashboard_url) pass — the escaping alone keeps the
// file valid. Two alerts' tests are run: one about a process, one about a job.
func TestTemplateSyntaxNeverReachesAnnotationsUnescaped(t *testing.T) {
	promtool(t)
	for _, base := range []string{"https://x/{{", `https://x/}}{{ $labels.name }}"`} {
		t.Run(base, func(t *testing.T) {
			r, err := Config{}.resolve()
			require.NoError(t, err)
			r.runbookBase, r.grafanaBase = base, base
			rulesYAML, err := r.render(FormatPrometheus, TargetPrometheus)
			require.NoError(t, err)
			testsYAML, err := r.renderTests("rules.yaml")
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yaml"), testsYAML, 0o644))
			out, ok := runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
			require.True(t, ok, "%s", out)
			out, ok = runPromtool(t, dir, "test", "rules", "--run", "^("+AlertStuckOpen+"|"+AlertRetryRateHigh+"):", "rules.test.yaml")
			require.True(t, ok, "runbook_url and dashboard_url expand to the literal URL: %s", firstLines(out, 40))
		})
	}
}

// TestRunbooksEscapeHostileNames: a title prefix and SLO ids and names full of Markdown and
// HTML render as text in the runbooks: no tag, emphasis, link or broken code span gets in.
func TestRunbooksEscapeHostileNames(t *testing.T) {
	cfg := Config{
		DashboardTitlePrefix: "<b>MARK</b> **bold** [l](javascript:alert(1)) # `c`",
		SLOs: []SLO{
			{ID: "**MARK** <i>x</i> [l](javascript:y)", Name: "a`b``c", Objective: 0.999},
			{ID: "# MARK", NameRegex: "p|`q`", Objective: 0.99},
		},
	}
	files, err := GenerateRunbooks(cfg)
	require.NoError(t, err)
	sawTitle, sawID := false, false
	for _, f := range files {
		text := regexp.MustCompile("(?s)```promql\n.*?```").ReplaceAllString(string(f.Data), "") // code blocks show the ids as PromQL
		for _, bad := range []string{"<b>", "<i>", "](javascript", "**MARK", "**bold", "\n# MARK", " # `"} {
			assert.NotContains(t, text, bad, f.Path)
		}
		sawTitle = sawTitle || strings.Contains(text, `\<b\>MARK\</b\> \*\*bold\*\* \[l\]\(javascript:alert\(1\)\) \# \`+"`c\\`")
		if strings.Contains(f.Path, AlertErrorBudgetBurn) {
			sawID = true
			assert.Contains(t, text, `### \*\*MARK\*\* \<i\>x\</i\> \[l\]\(javascript:y\)`)
			assert.Contains(t, text, "### \\# MARK")
			assert.Contains(t, text, "Dependency ```a`b``c```;")
			assert.Contains(t, text, "every name matching `` p|`q` ``;")
		}
	}
	assert.True(t, sawTitle, "the escaped title prefix is in the runbooks")
	assert.True(t, sawID, "the SLO runbook is generated")
}

// TestGrafanaVariablesRefused: Grafana has no escape for its variable syntax, so a string that
// reaches the dashboards' queries or titles may not hold it: refused with a config error
// naming the field, by the rules and the dashboards alike.
func TestGrafanaVariablesRefused(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Selector: `job="$job"`}, "selector"},
		{Config{Selector: `job=~"${__user.login}"`}, "selector"},
		{Config{Selector: `env="[[job]]"`}, "selector"},
		{Config{Selector: `env="\x24job"`}, "selector"},
		{Config{DashboardTitlePrefix: "shop ${__user.login}"}, "dashboards.title_prefix"},
		{Config{SLOs: []SLO{{Name: "$job", Objective: 0.99}}}, "slos[0].name"},
		{Config{SLOs: []SLO{{ID: "${__user.login}", Name: "p", Objective: 0.99}}}, "slos[0].id"},
		{Config{SLOs: []SLO{{ID: "x", Name: "[[name]]", Objective: 0.99}}}, "slos[0].name"},
		{Config{SLOs: []SLO{{ID: "x", NameRegex: "a|${name:regex}", Objective: 0.99}}}, "slos[0].name_regex"},
	} {
		err := c.cfg.Validate()
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", c.cfg, err)
		assert.Equal(t, c.field, ce.Field, "%v", err)
		assert.Contains(t, ce.Reason, "Grafana has no escape", "%v", err)
	}
	for _, ok := range []Config{
		{Selector: `name=~"pay$|cart$", env!="a[b]"`},
		{DashboardTitlePrefix: "costs in $ and [brackets]"},
		{SLOs: []SLO{{ID: "x", NameRegex: "^pay.*$", Objective: 0.99}}},
	} {
		assert.NoError(t, ok.Validate(), "%+v", ok)
	}
}

// TestSLOTestWorkBounded: the generated SLO tests stay within MaxSLOTestEvaluations — the most
// SLOs of any one period are accepted, at the highest objective and guard, and their tests
// evaluate the SLO rule groups at most as often as estimated — while SLOs of short and long
// periods mixed, whose tests run at the short period's interval, are refused with a config
// error naming the periods.
func TestSLOTestWorkBounded(t *testing.T) {
	slos := func(periods ...time.Duration) Config {
		var cfg Config
		for i, p := range periods {
			cfg.SLOs = append(cfg.SLOs, SLO{Name: fmt.Sprintf("dep%d", i), Objective: MaxSLOObjective, MinCalls: MaxSLOMinCalls, Period: p})
		}
		return cfg
	}
	same := func(p time.Duration) []time.Duration { return slices.Repeat([]time.Duration{p}, MaxSLOs) }
	for _, p := range []time.Duration{MinSLOPeriod, 7 * day, 22*day + 10*time.Hour + 47*time.Minute + 59*time.Second, 22*day + 10*time.Hour + 48*time.Minute, 30 * day, 45 * day, MaxSLOPeriod} {
		cfg := slos(same(p)...)
		r, err := cfg.resolve()
		require.NoError(t, err, "%d SLOs of %s", MaxSLOs, FormatDuration(p))
		out, err := GenerateSLOTests(cfg, "r.yaml")
		require.NoError(t, err, FormatDuration(p))
		var file yamlTestFile
		require.NoError(t, yaml.Unmarshal(out, &file))
		every := parseDuration(t, file.EvaluationInterval)
		assert.Equal(t, r.sloEvalInterval(), every)
		assert.LessOrEqual(t, every, max(time.Minute, r.slos[0].base()/3), "%s: three evaluations per base window (or 1m)", FormatDuration(p))
		evals := 0
		for _, g := range file.Tests {
			var last time.Duration
			for _, a := range g.AlertRuleTests {
				last = max(last, parseDuration(t, a.EvalTime))
			}
			for _, e := range g.PromqlExprTests {
				last = max(last, parseDuration(t, e.EvalTime))
			}
			evals += int(last/every) + 1
		}
		t.Logf("%d SLOs of %s: tested every %s, %d group evaluations (estimated %d)", MaxSLOs, FormatDuration(p), file.EvaluationInterval, evals*MaxSLOs, r.sloTestEvaluations())
		assert.LessOrEqual(t, evals*MaxSLOs, r.sloTestEvaluations(), "%s: the estimate bounds the work", FormatDuration(p))
	}
	err := slos(MinSLOPeriod, MaxSLOPeriod, MaxSLOPeriod, MaxSLOPeriod).Validate()
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "slos", ce.Field)
	assert.Contains(t, err.Error(), "slos = [6d 90d 90d 90d]: 4 SLOs")
	assert.Contains(t, ce.Reason, "every 1m")
	assert.NoError(t, slos(MinSLOPeriod, MaxSLOPeriod).Validate(), "two SLOs of far apart periods fit")
}

func parseDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := model.ParseDuration(s)
	require.NoError(t, err, s)
	return time.Duration(d)
}
