//go:build promtoolmatrix

// This file runs promtool for minutes: `make rules-matrix` (build tag promtoolmatrix, part of
// `make test`) runs it, the unit suite does not.

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// maxRuleEvaluations bounds the work of `promtool test rules` on a generated test file: the
// rule evaluations it performs, each test group evaluating every rule of the file at every
// evaluation interval up to its last check. promtool's time is proportional to it: on a
// shared 2-core machine, the SLO tests of 4 SLOs of a 90-day period (526,560 evaluations, the
// most an accepted config reaches) took 58 s of CPU.
const maxRuleEvaluations = 600_000

// ruleEvaluations counts the rule evaluations of the promtool test file test in dir: per test
// group, (its last eval_time / the evaluation interval + 1) × the rules of its rule files.
func ruleEvaluations(t *testing.T, dir, test string) int {
	t.Helper()
	var file struct {
		RuleFiles          []string `yaml:"rule_files"`
		EvaluationInterval string   `yaml:"evaluation_interval"`
		Tests              []struct {
			Alerts []struct {
				EvalTime string `yaml:"eval_time"`
			} `yaml:"alert_rule_test"`
			Exprs []struct {
				EvalTime string `yaml:"eval_time"`
			} `yaml:"promql_expr_test"`
		} `yaml:"tests"`
	}
	read := func(name string, v any) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	read(test, &file)
	rules := 0
	for _, rf := range file.RuleFiles {
		var groups struct {
			Groups []struct {
				Rules []any `yaml:"rules"`
			} `yaml:"groups"`
		}
		read(rf, &groups)
		for _, g := range groups.Groups {
			rules += len(g.Rules)
		}
	}
	interval := time.Minute
	if file.EvaluationInterval != "" {
		d, err := model.ParseDuration(file.EvaluationInterval)
		if err != nil {
			t.Fatal(err)
		}
		interval = time.Duration(d)
	}
	total := 0
	for _, g := range file.Tests {
		var last time.Duration
		for _, at := range append(g.Alerts, g.Exprs...) {
			d, err := model.ParseDuration(at.EvalTime)
			if err != nil {
				t.Fatal(err)
			}
			last = max(last, time.Duration(d))
		}
		total += (int(last/interval) + 1) * rules
	}
	return total
}

// TestHostileConfigsPassPromtool: every accepted config of the hostile table, and the most
// expensive SLO set accepted, generates rules that `promtool check rules` accepts and tests
// that `promtool test rules` passes, with a bounded number of rule evaluations (the proxy of
// promtool's time: at most maxRuleEvaluations, about a minute of CPU).
func TestHostileConfigsPassPromtool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool for minutes")
	}
	promtool, err := filepath.Abs("../../bin/promtool")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(promtool); err != nil {
		t.Skip("bin/promtool is absent: run scripts/install-tools.sh (CI always does)")
	}
	configs := []hostileConfig{{name: "4 SLOs of 90 days, the longest period", accept: true, data: sloList(4, func(i int) string {
		return "name: dep" + string(rune('a'+i)) + ", objective: 0.999, period: 90d"
	})}}
	for _, hc := range hostileConfigs() {
		if hc.accept {
			configs = append(configs, hc)
		}
	}
	for _, hc := range configs {
		t.Run(hc.name, func(t *testing.T) {
			st, accepted := checkBounded(t, []byte(hc.data))
			if !accepted {
				t.Fatal("refused")
			}
			dir := t.TempDir()
			if err := writeAll(dir, st.files); err != nil {
				t.Fatal(err)
			}
			for _, test := range []string{"stormwatch-rules.test.yaml", "stormwatch-slo-rules.test.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, test)); err != nil {
					continue
				}
				n := ruleEvaluations(t, dir, test)
				t.Logf("%s: %d rule evaluations", test, n)
				if n > maxRuleEvaluations {
					t.Errorf("%s: %d rule evaluations, more than %d (about a minute of promtool)", test, n, maxRuleEvaluations)
				}
				rulesFile := strings.TrimSuffix(test, ".test.yaml") + ".yaml"
				runPromtool(t, dir, promtool, "check", "rules", "--lint=all", "--lint-fatal", rulesFile)
				start := time.Now()
				runPromtool(t, dir, promtool, "test", "rules", test)
				t.Logf("%s: promtool test rules took %s (wall, on this machine's load)", test, time.Since(start).Round(time.Second))
			}
		})
	}
}

func runPromtool(t *testing.T, dir, promtool string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, clip(string(out)))
	}
}
