//go:build promtoolmatrix

// This file runs promtool for minutes: `make rules-matrix` (build tag promtoolmatrix, part of
// `make test`) runs it, the unit suite does not.

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/internal/promtooltest"
	"github.com/stormwatch-go/stormwatch/rules"
)

// maxRuleEvaluations bounds the work of `promtool test rules` on a generated test file: the
// rule evaluations it performs, each test group evaluating every rule of the file at every
// evaluation interval up to its last check. promtool's time is proportional to it, about
// 145 µs of CPU per rule evaluation (measured on a shared 2-core machine: the default alert
// tests, 382k evaluations, 55 s; the SLO tests of 4 SLOs of 90 days at 99.999%, 171k, 26 s).
// The SLO files stay under 350k (under a minute); the bound holds them there.
const maxRuleEvaluations = 550_000

// maxAlertRuleEvaluations bounds the alert tests (stormwatch-rules.test.yaml): the cases of
// alerts that share no series run side by side, so the default config's make 134k evaluations
// and the heaviest config of the rules matrix 220k.
const maxAlertRuleEvaluations = 225_000

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

// extremeSLOConfigs are the accepted SLO sets whose tests cost promtool most: the most SLOs,
// at the highest objective and the largest minimum-traffic guard, of the longest period, and
// of the period with the most evaluations (the longest tested at 1m: its base window is 3m44s).
func extremeSLOConfigs() []hostileConfig {
	slos := func(period string) string {
		return sloList(rules.MaxSLOs, func(i int) string {
			return fmt.Sprintf("name: dep%c, objective: %v, min_calls: %d, period: %s", 'a'+i, rules.MaxSLOObjective, rules.MaxSLOMinCalls, period)
		})
	}
	return []hostileConfig{
		{name: "the most SLOs of 90 days, the longest period, at 99.999% and 1e9 calls", accept: true, data: slos("90d")},
		{name: "the most SLOs of 22d10h47m59s, the most evaluations, at 99.999% and 1e9 calls", accept: true, data: slos("22d10h47m59s")},
	}
}

// TestHostileConfigsPassPromtool: every accepted config of the hostile table, and the most
// expensive SLO sets accepted, generate rules that `promtool check rules` accepts and tests
// that `promtool test rules` passes, with a bounded number of rule evaluations (the proxy of
// promtool's time: at most maxRuleEvaluations, under a minute of CPU). The configs run in
// parallel, each promtool run sharded across the CPUs (internal/promtooltest); a rule file and
// test file identical to another config's (the alert rules of configs that differ only in
// their SLOs) are checked once.
func TestHostileConfigsPassPromtool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool for minutes")
	}
	promtooltest.Path(t)
	configs := extremeSLOConfigs()
	for _, hc := range hostileConfigs() {
		if hc.accept {
			configs = append(configs, hc)
		}
	}
	var checked sync.Map // digest of a rule file and its tests → the config that checks them
	for _, hc := range configs {
		t.Run(hc.name, func(t *testing.T) {
			t.Parallel()
			st, accepted := checkBoundedAlone(t, []byte(hc.data))
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
				bound := maxRuleEvaluations
				if test == "stormwatch-rules.test.yaml" {
					bound = maxAlertRuleEvaluations
				}
				if n > bound {
					t.Errorf("%s: %d rule evaluations, more than %d", test, n, bound)
				}
				rulesFile := strings.TrimSuffix(test, ".test.yaml") + ".yaml"
				if by, dup := checked.LoadOrStore(fileDigest(t, dir, rulesFile, test), hc.name); dup {
					t.Logf("%s: the same rule and test files as %q's, checked there", test, by)
					continue
				}
				promtoolPasses(t, dir, "check", "rules", "--lint=all", "--lint-fatal", rulesFile)
				promtoolPasses(t, dir, "test", "rules", test)
			}
		})
	}
}

// generating serialises checkBoundedAlone.
var generating sync.Mutex

// checkBoundedAlone is checkBounded with no other config generating meanwhile, so that its heap
// peak is its own.
func checkBoundedAlone(t *testing.T, data []byte) (genStats, bool) {
	t.Helper()
	generating.Lock()
	defer generating.Unlock()
	return checkBounded(t, data)
}

// fileDigest is the SHA-256 of the named files of dir.
func fileDigest(t *testing.T, dir string, names ...string) string {
	t.Helper()
	h := sha256.New()
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func promtoolPasses(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, ok := promtooltest.Run(t, dir, args...); !ok {
		t.Fatalf("promtool %s:\n%s", strings.Join(args, " "), lastBytes(out, 4000))
	}
}

// lastBytes is the end of s, at most n bytes: where promtool's failures and timeouts are.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("(%d bytes before) …", len(s)-n) + strings.ToValidUTF8(s[len(s)-n:], "")
}
