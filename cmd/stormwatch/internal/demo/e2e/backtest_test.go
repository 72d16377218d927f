//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/internal/backtest"
	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

// backtestJSON is what `stormwatch backtest -o json` prints.
type backtestJSON struct {
	Report      *backtest.Report      `json:"report"`
	Agreement   []backtest.Agreement  `json:"agreement"`
	Suggestions []backtest.Suggestion `json:"suggestions"`
	Snippet     string                `json:"config_snippet"`
}

func runBacktest(t *testing.T, args ...string) backtestJSON {
	t.Helper()
	cmd := exec.Command(stormwatchBin, append([]string{"backtest", "-o", "json"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stormwatch backtest %v: %s", args, stderr.String())
	var got backtestJSON
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	return got
}

// checkBacktest backtests the scenario matrix's history (its demos, one Prometheus 3.16
// evaluating the demo profile's rules, from began to end):
//   - the replay, reading the recorded series from the server (--recording auto finds them
//     there), agrees with Prometheus's own ALERTS at ≥ 95 % for every alert that fired, and no
//     firing interval is on one side only; with every recording rule inlined, at ≥ 90 % and
//     again no interval on one side only;
//   - --suggest, with the outage scenario's fault window marked as the incident and the rules
//     restricted to the outage and steady jobs, proposes a config under which every outage
//     alert that pages does so inside the window and nothing fires for the steady job, and the
//     generated promtool tests of that config pass.
//
// It shares the matrix's demos and Prometheus rather than running its own: one history serves
// both checks, at half the load on the machine.
func checkBacktest(t *testing.T, fleet *e2eprom.Fleet, dir, profile string, began, end time.Time) {
	t.Helper()
	url := fleet.API.URL
	from, to := began.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)
	for _, mode := range []string{"auto", "inline"} {
		got := runBacktest(t, "--prometheus", url, "--from", from, "--to", to, "-c", profile, "--compare-alerts", "--recording", mode)
		require.NotNil(t, got.Report)
		require.Equal(t, time.Second, got.Report.Interval, "the interval of the server's stormwatch rule groups")
		for _, a := range got.Report.Alerts {
			if mode == "auto" {
				// The server holds every recorded series: nothing is inlined. An alert that
				// reads ALERTS (Flapping's hysteresis) says it reads the server's alert state.
				notes := slices.DeleteFunc(slices.Clone(a.Notes), func(n string) bool { return strings.HasPrefix(n, "reads ALERTS") })
				assert.Empty(t, notes, "%s: the server holds every recorded series: nothing inlined", a.Alert)
			} else {
				assert.NotContains(t, a.Expr, ":ratio_rate30s", "%s: recording rules inlined", a.Alert)
			}
		}
		checkAgreement(t, mode, got.Agreement)
	}
	outage := fleet.Demo(t, matrixJob(demo.ScenarioOutage))
	checkSuggest(t, url, dir, profile, outage.Started, began, end)
}

// checkAgreement asserts the replay's agreement with ALERTS, per alert that fired on either side.
func checkAgreement(t *testing.T, mode string, agreement []backtest.Agreement) {
	t.Helper()
	fired := 0
	for _, ag := range agreement {
		if ag.Replayed+ag.Recorded == 0 {
			continue
		}
		fired++
		t.Logf("%s: %s agreement %.1f%% (replayed %d, recorded %d steps)", mode, ag.Alert, ag.Percent, ag.Replayed, ag.Recorded)
		// Inlined, a recording rule is evaluated on the replay's grid rather than read as the
		// server recorded it at its own evaluation offsets: a transition may move by one more
		// step (measured: 96 to 100 %, against 100 % reading the recorded series).
		want := 95.0
		if mode == "inline" {
			want = 90
		}
		assert.GreaterOrEqual(t, ag.Percent, want, "%s: %s agrees with ALERTS", mode, ag.Alert)
		assert.Empty(t, ag.OnlyReplayed, "%s: %s fired in the replay only", mode, ag.Alert)
		assert.Empty(t, ag.OnlyRecorded, "%s: %s fired on the server only", mode, ag.Alert)
	}
	assert.GreaterOrEqual(t, fired, 8, "%s: the scenarios fire most alerts", mode)
}

// checkSuggest tunes the profile for the outage window (demo time 0:15 to 1:15) over the outage
// and steady jobs, and checks the tuned config.
func checkSuggest(t *testing.T, url, dir, profile string, outageStart, began, end time.Time) {
	t.Helper()
	sel := `job=~"` + matrixJob(demo.ScenarioOutage) + "|" + matrixJob(demo.ScenarioSteady) + `"`
	scoped := writeConfig(t, dir, "scoped.yaml", profile, map[string]any{"selector": sel}, "")
	winFrom, winTo := outageStart.Add(15*time.Second), outageStart.Add(75*time.Second)
	incident := winFrom.UTC().Format(time.RFC3339Nano) + "/" + winTo.UTC().Format(time.RFC3339Nano) + ":payments-down"
	from, to := began.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)
	got := runBacktest(t, "--prometheus", url, "--from", from, "--to", to, "-c", scoped, "--suggest", "--incident", incident)
	require.NotEmpty(t, got.Suggestions)
	t.Logf("suggested:\n%s", got.Snippet)
	caught := map[string]bool{}
	for _, s := range got.Suggestions {
		assert.Zero(t, s.BestScore.FalsePages, "%s: the proposal pages outside the incident", s.Alert)
		if s.BestScore.Caught == 1 {
			caught[s.Alert] = true
		}
	}
	assert.GreaterOrEqual(t, len(caught), 4, "the outage is caught by several alerts: %v", caught)

	tuned := writeConfig(t, dir, "tuned.yaml", scoped, nil, got.Snippet)
	rep := runBacktest(t, "--prometheus", url, "--from", from, "--to", to, "-c", tuned).Report
	require.NotNil(t, rep)
	for _, a := range rep.Alerts {
		for _, s := range a.Series {
			if len(s.Episodes) > 0 {
				assert.NotContains(t, s.Labels, matrixJob(demo.ScenarioSteady), "%s fires for the steady scenario", a.Alert)
			}
			for _, e := range s.Episodes {
				assert.False(t, e.Fired.Before(winFrom) || e.Fired.After(winTo), "%s %s fires at %s, outside the outage window %s to %s",
					a.Alert, s.Labels, e.Fired, winFrom, winTo)
			}
		}
		if caught[a.Alert] {
			assert.NotZero(t, a.Pages, "%s was proposed to catch the outage", a.Alert)
		}
	}

	out := filepath.Join(dir, "tuned")
	b, err := exec.Command(stormwatchBin, "generate", "all", "-c", tuned, "-o", out).CombinedOutput()
	require.NoError(t, err, "%s", b)
	promtool := filepath.Join(filepath.Dir(e2eprom.PrometheusBin(t, e2eprom.ModuleRoot(t))), "promtool")
	test := exec.Command(promtool, "test", "rules", "stormwatch-rules.test.yaml")
	test.Dir = out
	b, err = test.CombinedOutput()
	require.NoError(t, err, "promtool test rules on the tuned config's generated tests:\n%s", b)
}

// writeConfig writes dir/name: the YAML of base with set's keys replaced and the alerts of
// snippet (a config fragment) merged over base's.
func writeConfig(t *testing.T, dir, name, base string, set map[string]any, snippet string) string {
	t.Helper()
	b, err := os.ReadFile(base)
	require.NoError(t, err)
	cfg := map[string]any{}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	for k, v := range set {
		cfg[k] = v
	}
	if snippet != "" {
		var over map[string]map[string]map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(snippet), &over))
		alerts, _ := cfg["alerts"].(map[string]any)
		if alerts == nil {
			alerts = map[string]any{}
		}
		for a, fields := range over["alerts"] {
			cur, _ := alerts[a].(map[string]any)
			if cur == nil {
				cur = map[string]any{}
			}
			for k, v := range fields {
				cur[k] = v
			}
			alerts[a] = cur
		}
		cfg["alerts"] = alerts
	}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}
