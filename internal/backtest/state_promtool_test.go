package backtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/internal/promtooltest"
)

// machineCase is one alerting rule replayed both by the Machine and by promtool: the label
// sets its expression returns at each one-minute evaluation.
type machineCase struct {
	forDur, keep time.Duration
	steps        [][]string
}

// machineCases are the hand-written cases of TestMachine and Prometheus's TestKeepFiringFor,
// plus seeded random presence patterns over every for/keep_firing_for combination up to 3m.
func machineCases() []machineCase {
	cases := []machineCase{
		{steps: concat(repeat(2, "a"), repeat(1))},
		{forDur: 3 * time.Minute, steps: concat(repeat(4, "a"), repeat(1))},
		{forDur: 2 * time.Minute, steps: concat(repeat(2, "a"), repeat(1), repeat(3, "a"), repeat(1))},
		{forDur: 5 * time.Minute, keep: 10 * time.Minute, steps: concat(repeat(2, "a"), repeat(2))},
		{keep: 2 * time.Minute, steps: concat(repeat(1, "a"), repeat(1), repeat(1, "a"), repeat(3))},
		{forDur: time.Minute, steps: concat(repeat(2, "a", "b"), repeat(2, "b"))},
		{forDur: time.Minute, keep: time.Minute, steps: concat(repeat(4, "a"), repeat(5))},
	}
	rng := rand.New(rand.NewPCG(26, 1154))
	for _, forDur := range []time.Duration{0, time.Minute, 3 * time.Minute} {
		for _, keep := range []time.Duration{0, time.Minute, 3 * time.Minute} {
			for range 2 {
				steps := make([][]string, 30)
				for i := range steps {
					for _, k := range []string{"a", "b"} {
						// Runs of presence and absence, so that fors complete and keeps matter.
						if rng.IntN(10) < 7 == (i/4%2 == 0) {
							steps[i] = append(steps[i], k)
						}
					}
				}
				cases = append(cases, machineCase{forDur: forDur, keep: keep, steps: steps})
			}
		}
	}
	return cases
}

// TestMachineAgreesWithPromtool replays every case through the Machine, writes the firing
// alerts it reports at each evaluation as promtool expectations for the same rule and series,
// and has promtool's rule engine check them: the Machine fires and resolves exactly when
// Prometheus does.
func TestMachineAgreesWithPromtool(t *testing.T) {
	cases := machineCases()
	dir := t.TempDir()
	ruleFile, testFile := promtoolMachineFiles(t, cases)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), ruleFile, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yaml"), testFile, 0o644))
	out, ok := promtooltest.Run(t, dir, "test", "rules", "rules.test.yaml")
	require.True(t, ok, "promtool disagrees with the Machine:\n%s", out)
}

type promRule struct {
	Alert         string `yaml:"alert"`
	Expr          string `yaml:"expr"`
	For           string `yaml:"for,omitempty"`
	KeepFiringFor string `yaml:"keep_firing_for,omitempty"`
}

type promAlert struct {
	ExpLabels map[string]string `yaml:"exp_labels"`
}

type promAlertTest struct {
	EvalTime  string      `yaml:"eval_time"`
	Alertname string      `yaml:"alertname"`
	ExpAlerts []promAlert `yaml:"exp_alerts"`
}

type promSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

// promtoolMachineFiles renders the cases as one rule file (alert Ci reads x{case="i"}) and one
// promtool test whose expectations are the Machine's firing label sets at every evaluation.
func promtoolMachineFiles(t *testing.T, cases []machineCase) (rulesYAML, testYAML []byte) {
	t.Helper()
	var rules []promRule
	var series []promSeries
	var alerts []promAlertTest
	for i, c := range cases {
		name := fmt.Sprintf("C%d", i)
		rules = append(rules, promRule{
			Alert: name, Expr: fmt.Sprintf(`x{case="%d"} > 0`, i),
			For: promDuration(c.forDur), KeepFiringFor: promDuration(c.keep),
		})
		for _, k := range []string{"a", "b"} {
			vals := make([]string, len(c.steps))
			for s, keys := range c.steps {
				vals[s] = "0"
				if slices.Contains(keys, k) {
					vals[s] = "1"
				}
			}
			series = append(series, promSeries{
				Series: fmt.Sprintf(`x{case="%d",k="%s"}`, i, k), Values: strings.Join(vals, " "),
			})
		}
		m := NewMachine(c.forDur, c.keep)
		for s, keys := range c.steps {
			present := map[string]bool{}
			for _, k := range keys {
				present[k] = true
			}
			m.Step(at(s), present, func(string, Episode) {})
			test := promAlertTest{EvalTime: fmt.Sprintf("%dm", s), Alertname: name, ExpAlerts: []promAlert{}}
			for _, k := range []string{"a", "b"} {
				if m.Firing(k) {
					test.ExpAlerts = append(test.ExpAlerts, promAlert{ExpLabels: map[string]string{"case": fmt.Sprint(i), "k": k}})
				}
			}
			alerts = append(alerts, test)
		}
	}
	rulesYAML, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "machine", "rules": rules}}})
	require.NoError(t, err)
	testYAML, err = yaml.Marshal(map[string]any{
		"rule_files":          []string{"rules.yaml"},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "1m", "input_series": series, "alert_rule_test": alerts,
		}},
	})
	require.NoError(t, err)
	return rulesYAML, testYAML
}

func promDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf("%dm", int(d/time.Minute))
}
