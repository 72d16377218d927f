package rules

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The bounds of the alert tests' cost in rule evaluations: promtool evaluates every rule of the
// file at every step of every test group up to its last check, about 145 µs of CPU each.
const (
	maxDefaultEvaluations = 140_000
	maxMatrixEvaluations  = 225_000
)

// ruleEvaluations is the number of rule evaluations `promtool test rules` makes on the alert
// tests of cfg: per test group, (its last eval_time / step + 1) × the rules of the file.
func ruleEvaluations(t *testing.T, cfg Config) int {
	t.Helper()
	r, err := cfg.resolve()
	require.NoError(t, err)
	out, err := r.renderTests("rules.yaml")
	require.NoError(t, err)
	var file yamlTestFile
	require.NoError(t, yaml.Unmarshal(out, &file))
	rules := 0
	for _, g := range r.groups() {
		rules += len(g.Rules)
	}
	total := 0
	for _, g := range file.Tests {
		var last time.Duration
		for _, at := range g.AlertRuleTests {
			last = max(last, parseDuration(t, at.EvalTime))
		}
		for _, e := range g.PromqlExprTests {
			last = max(last, parseDuration(t, e.EvalTime))
		}
		total += (int(last/step) + 1) * rules
	}
	return total
}

// TestAlertTestsStayCheap bounds the promtool work of the generated alert tests for the
// default configuration and every configuration of the promtool matrix.
func TestAlertTestsStayCheap(t *testing.T) {
	configs := matrixConfigs()
	configs["defaults"] = Config{}
	configs["group_by cluster and job, with a selector"] = Config{GroupBy: []string{"cluster", "job"}, Selector: `job=~"checkout|cart", cluster!="dev"`}
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := ruleEvaluations(t, configs[name])
		t.Logf("%-40s %7d rule evaluations", name, n)
		bound := maxMatrixEvaluations
		if name == "defaults" {
			bound = maxDefaultEvaluations
		}
		if n > bound {
			t.Errorf("%s: %d rule evaluations, more than %d", name, n, bound)
		}
		if dir := os.Getenv("STORMWATCH_DUMP_ALERT_TESTS"); dir != "" {
			dumpAlertTests(t, filepath.Join(dir, name), configs[name])
		}
	}
}

// dumpAlertTests writes the rules and alert tests of cfg into dir, for measuring promtool on them.
func dumpAlertTests(t *testing.T, dir string, cfg Config) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	rulesYAML, err := GeneratePrometheus(cfg)
	require.NoError(t, err)
	testsYAML, err := GenerateTests(cfg, "rules.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yaml"), testsYAML, 0o644))
	r, err := cfg.resolve()
	require.NoError(t, err)
	unpacked, err := r.renderTestFile("rules.yaml", false)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.unpacked.test.yaml"), unpacked, 0o644))
}
