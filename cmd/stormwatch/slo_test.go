package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/rules"
)

const sloConfig = `slos:
  - name: payments
    objective: 0.999
  - id: storefront
    name_regex: inventory|recommendations
    objective: 0.99
    period: 7d
    source: breaker
    fallbacks_good: true
    min_calls: 200
    page_severity: warning
    ticket_severity: info
    labels:
      team: storefront
`

func TestLoadConfigDecodesSLOs(t *testing.T) {
	c, err := loadConfig(writeConfig(t, sloConfig))
	require.NoError(t, err)
	assert.Equal(t, []rules.SLO{
		{Name: "payments", Objective: 0.999},
		{ID: "storefront", NameRegex: "inventory|recommendations", Objective: 0.99, Period: 7 * 24 * time.Hour,
			Source: rules.SLOSourceBreaker, FallbacksGood: true, MinCalls: 200, PageSeverity: "warning", TicketSeverity: "info",
			Labels: map[string]string{"team": "storefront"}},
	}, c.rules.SLOs)
	assert.Equal(t, 4, c.lines["slos[1]"])
	assert.Equal(t, 6, c.lines["slos[1].objective"])

	for _, data := range []string{"slos:\n", "slos: []\n"} {
		c, err := loadConfig(writeConfig(t, data))
		require.NoError(t, err, data)
		assert.Empty(t, c.rules.SLOs, data)
	}
}

// TestInvalidSLOConfigExits2WithFileLine: every SLO error names file:line, the field path and
// the value, from the config's own decoding and from the rules' validation alike.
func TestInvalidSLOConfigExits2WithFileLine(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"not a list", "slos: payments\n", `c\.yaml:1: slos = "payments": want a list of SLOs`},
		{"item not a mapping", "slos:\n  - payments\n", `c\.yaml:2: slos\[0\] = "payments": want a mapping such as \{name: payments, objective: 0\.999\}, got a string`},
		{"unknown key", "slos:\n  - name: payments\n    objectve: 0.999\n", `c\.yaml:3: slos\[0\]\.objectve: unknown key \(known keys: fallbacks_good, id, labels, min_calls, name, name_regex, objective, page_severity, period, source, ticket_severity\)`},
		{"objective as a percentage", "slos:\n  - name: payments\n    objective: 99.9%\n", `c\.yaml:3: slos\[0\]\.objective = "99\.9%": want the share of good calls as a number in \(0, 1\), such as 0\.999 for 99\.9%, got a string; write 0\.999 for 99\.9%`},
		{"objective above 1", "slos:\n  - name: payments\n    objective: 99.9\n", `c\.yaml:3: slos\[0\]\.objective = 99\.9: want a share of good calls in \(0, 1\)`},
		{"objective too low", "slos:\n  - name: payments\n    objective: 0.9\n", `c\.yaml:3: slos\[0\]\.objective = 0\.9: too low for burn-rate alerting`},
		{"objective missing", "slos:\n  - name: payments\n", `c\.yaml:2: slos\[0\]\.objective = 0: want a share of good calls in \(0, 1\)`},
		{"name missing", "slos:\n  - objective: 0.999\n", `c\.yaml:2: slos\[0\]\.name: missing: set name \(one dependency\) or name_regex \(several\)`},
		{"regex without id", "slos:\n  - name_regex: 'pay.*'\n    objective: 0.999\n", `c\.yaml:2: slos\[0\]\.id: missing: an SLO with name_regex needs an id`},
		{"period too short", "slos:\n  - name: payments\n    objective: 0.999\n    period: 1d\n", `c\.yaml:4: slos\[0\]\.period = 1d: out of range \[6d, 90d\]`},
		{"period zero", "slos:\n  - name: payments\n    objective: 0.999\n    period: 0\n", `c\.yaml:4: slos\[0\]\.period = 0s: out of range \[6d, 90d\] \(leave the key out for the default 30d\)`},
		{"period not a duration", "slos:\n  - name: payments\n    objective: 0.999\n    period: 30\n", `c\.yaml:4: slos\[0\]\.period = 30: want a duration`},
		{"source", "slos:\n  - name: payments\n    objective: 0.999\n    source: timeout\n", `c\.yaml:4: slos\[0\]\.source = "timeout": not one of retry, breaker`},
		{"min_calls fraction", "slos:\n  - name: payments\n    objective: 0.999\n    min_calls: 1.5\n", `c\.yaml:4: slos\[0\]\.min_calls = 1\.5: want a whole number of calls`},
		{"min_calls negative", "slos:\n  - name: payments\n    objective: 0.999\n    min_calls: -3\n", `c\.yaml:4: slos\[0\]\.min_calls = -3: out of range`},
		{"fallbacks_good", "slos:\n  - name: payments\n    objective: 0.999\n    fallbacks_good: yes please\n", `c\.yaml:4: slos\[0\]\.fallbacks_good = "yes please": want true or false`},
		{"severity", "slos:\n  - name: payments\n    objective: 0.999\n    page_severity: page\n", `c\.yaml:4: slos\[0\]\.page_severity = "page": not one of info, warning, critical`},
		{"label value", "slos:\n  - name: payments\n    objective: 0.999\n    labels:\n      team: [a]\n", `c\.yaml:5: slos\[0\]\.labels\.team: want a string, got a list`},
		{"label name", "slos:\n  - name: payments\n    objective: 0.999\n    labels:\n      severity: x\n", `c\.yaml:5: slos\[0\]\.labels\.severity: "severity" is a label the alerts already carry`},
		{"duplicate id", "slos:\n  - name: payments\n    objective: 0.999\n  - name: payments\n    objective: 0.99\n", `c\.yaml:4: slos\[1\]\.name = "payments": SLO id used twice \(also slos\[0\]\)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(tc.cfg), 0o644))
			res := runBin(t, dir, "generate", "-c", "c.yaml", "-o", "out")
			assert.Equal(t, 2, res.code, res.stderr)
			assert.Regexp(t, regexp.MustCompile(`^stormwatch generate: `+tc.want), res.stderr)
			assert.Equal(t, 1, strings.Count(res.stderr, "\n"), "one line: %s", res.stderr)
			_, err := os.Stat(filepath.Join(dir, "out"))
			assert.True(t, os.IsNotExist(err), "nothing is written on a config error")
		})
	}
}

// TestGenerateWithSLOs: `stormwatch generate` with slos writes the SLO rule file, its tests, the
// runbook and the SLOs dashboard; promtool accepts the rules with --lint=all --lint-fatal and
// the generated tests pass.
func TestGenerateWithSLOs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stormwatch.yaml"), []byte(sloConfig), 0o644))
	res := runBin(t, dir, "generate", "-c", "stormwatch.yaml", "-o", "out")
	require.Equal(t, 0, res.code, res.stderr)
	out := filepath.Join(dir, "out")
	files := listFiles(t, out)
	for _, f := range []string{sloRulesFile, sloTestsFile, "runbooks/DependencyErrorBudgetBurn/README.md", "dashboards/stormwatch-slos.json"} {
		assert.Contains(t, files, f)
	}
	assert.Len(t, files, 4+16+len(defaultDashboardFiles(t))+1)
	plain, err := os.ReadFile(filepath.Join(out, rulesFile))
	require.NoError(t, err)
	assert.NotContains(t, string(plain), rules.GroupSLOPrefix, "the default rule file is the same with or without SLOs")

	for _, args := range [][]string{
		{"generate", "rules", "-c", "stormwatch.yaml", "-o", "op", "--format", "operator"},
		{"generate", "tests", "-c", "stormwatch.yaml", "-o", "op2", "--format", "operator"},
	} {
		res := runBin(t, dir, args...)
		require.Equal(t, 0, res.code, res.stderr)
	}
	assert.Equal(t, []string{"stormwatch-prometheusrule.yaml", sloManifestFile}, listFiles(t, filepath.Join(dir, "op")))
	assert.Equal(t, []string{testsFile, rulesFile, sloTestsFile, sloRulesFile}, listFiles(t, filepath.Join(dir, "op2")))
	m, err := os.ReadFile(filepath.Join(dir, "op", sloManifestFile))
	require.NoError(t, err)
	assert.Contains(t, string(m), "kind: PrometheusRule")
	assert.Contains(t, string(m), "name: "+rules.SLOManifestName)

	promtool, err := filepath.Abs("../../bin/promtool")
	require.NoError(t, err)
	if _, err := os.Stat(promtool); err != nil {
		t.Skip("bin/promtool is absent: run scripts/install-tools.sh (CI always does)")
	}
	res = runCmd(t, out, promtool, "check", "rules", "--lint=all", "--lint-fatal", sloRulesFile, rulesFile)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	res = runCmd(t, out, promtool, "test", "rules", sloTestsFile)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
}

// TestCheckedInSLOExampleIsCurrent fails when examples/generated-slo differs from what the
// current code generates for examples/slo/stormwatch.yaml. That directory holds only what the
// SLOs add to the default output of examples/generated: the files that are new or differ.
func TestCheckedInSLOExampleIsCurrent(t *testing.T) {
	dir := t.TempDir()
	cfg, err := filepath.Abs("../../examples/slo/stormwatch.yaml")
	require.NoError(t, err)
	res := runBin(t, dir, "generate", "all", "-c", cfg, "-o", "out")
	require.Equal(t, 0, res.code, res.stderr)
	defaults, golden := "../../examples/generated", "../../examples/generated-slo"
	var delta []string
	for _, f := range listFiles(t, filepath.Join(dir, "out")) {
		got, err := os.ReadFile(filepath.Join(dir, "out", f))
		require.NoError(t, err)
		if def, err := os.ReadFile(filepath.Join(defaults, f)); err == nil && string(def) == string(got) {
			continue
		}
		delta = append(delta, f)
		want, err := os.ReadFile(filepath.Join(golden, f))
		require.NoError(t, err, "%s is missing from %s: regenerate it", f, golden)
		assert.Equal(t, string(want), string(got), "%s/%s is stale: regenerate it", golden, f)
	}
	assert.Equal(t, listFiles(t, golden), delta, "%s holds exactly what the SLOs add", golden)
	assert.Contains(t, delta, sloRulesFile)
}
