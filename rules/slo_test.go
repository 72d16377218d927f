package rules

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const day = 24 * time.Hour

// workbook is the multiwindow, multi-burn-rate table of The Site Reliability Workbook
// ("Alerting on SLOs", for a 30-day SLO), written down here independently of the generator.
var workbook = []struct {
	severity    string // the default severity: page → critical, ticket → warning
	factor      float64
	long, short string
	budgetSpent float64 // share of the 30-day budget a burn at factor spends in the long window
}{
	{"critical", 14.4, "1h", "5m", 0.02},
	{"critical", 6, "6h", "30m", 0.05},
	{"warning", 3, "1d", "2h", 0.10},
	{"warning", 1, "3d", "6h", 0.10},
}

// burnAlert is a generated burn-rate alert, parsed back from the rule file.
type burnAlert struct {
	severity, long, short string
	shortThr, longThr     float64
	shortSeries           string
	longSeries            string
	guard                 string
}

var burnExprRE = regexp.MustCompile(`^(\S+)\{[^}]*\} > ([0-9.]+)\nand\n(\S+)\{[^}]*\} > ([0-9.]+)(?:\nand\n(.*))?$`)

func parseSLOAlerts(t *testing.T, cfg Config) map[string][]burnAlert {
	t.Helper()
	out, err := GenerateSLORulesPrometheus(cfg)
	require.NoError(t, err)
	var file yamlRuleFile
	require.NoError(t, yaml.Unmarshal(out, &file))
	alerts := map[string][]burnAlert{}
	for _, g := range file.Groups {
		id := strings.TrimPrefix(g.Name, GroupSLOPrefix)
		for _, rl := range g.Rules {
			if rl.Alert == "" {
				continue
			}
			require.Equal(t, AlertErrorBudgetBurn, rl.Alert)
			m := burnExprRE.FindStringSubmatch(rl.Expr)
			require.NotNil(t, m, "unexpected burn expression:\n%s", rl.Expr)
			st, _ := strconv.ParseFloat(m[2], 64)
			lt, _ := strconv.ParseFloat(m[4], 64)
			alerts[id] = append(alerts[id], burnAlert{
				severity: rl.Labels["severity"], long: rl.Labels[LabelLongWindow], short: rl.Labels[LabelShortWindow],
				shortThr: st, longThr: lt, shortSeries: m[1], longSeries: m[3], guard: m[5],
			})
		}
	}
	return alerts
}

// TestBurnRateAlertsFollowTheWorkbook checks the four generated alerts against the workbook's
// table: windows, burn-rate thresholds (factor × error budget, on both windows), severities.
func TestBurnRateAlertsFollowTheWorkbook(t *testing.T) {
	for _, objective := range []float64{0.999, 0.99, 0.9995, 0.95} {
		alerts := parseSLOAlerts(t, Config{SLOs: []SLO{{Name: "payments", Objective: objective}}})["payments"]
		require.Len(t, alerts, len(workbook))
		for i, w := range workbook {
			a := alerts[i]
			assert.Equal(t, w.severity, a.severity)
			assert.Equal(t, w.long, a.long)
			assert.Equal(t, w.short, a.short)
			want := w.factor * (1 - objective)
			assert.InDelta(t, want, a.shortThr, 1e-12, "%g× short threshold at %v", w.factor, objective)
			assert.InDelta(t, want, a.longThr, 1e-12, "%g× long threshold at %v", w.factor, objective)
			assert.True(t, strings.HasSuffix(a.shortSeries, ":ratio_rate"+w.short), a.shortSeries)
			assert.True(t, strings.HasSuffix(a.longSeries, ":ratio_rate"+w.long), a.longSeries)
			// The budget a burn at the factor spends over the long window.
			long, err := time.ParseDuration(strings.Replace(w.long, "d", "h", 1))
			require.NoError(t, err)
			if strings.HasSuffix(w.long, "d") {
				long *= 24
			}
			assert.InDelta(t, w.budgetSpent, w.factor*long.Hours()/(30*24), 1e-9)
			assert.InDelta(t, w.budgetSpent, BurnRateRules[i].BudgetSpent(), 1e-9)
		}
	}
}

// TestBurnRateWindowsScaleWithThePeriod: the windows keep the workbook's proportions to the
// period (so every rule still fires after spending the same share of the budget).
func TestBurnRateWindowsScaleWithThePeriod(t *testing.T) {
	for period, want := range map[time.Duration][][2]string{
		30 * day: {{"1h", "5m"}, {"6h", "30m"}, {"1d", "2h"}, {"3d", "6h"}},
		28 * day: {{"56m", "4m40s"}, {"5h36m", "28m"}, {"22h24m", "1h52m"}, {"2d19h12m", "5h36m"}},
		7 * day:  {{"14m", "1m10s"}, {"1h24m", "7m"}, {"5h36m", "28m"}, {"16h48m", "1h24m"}},
		6 * day:  {{"12m", "1m"}, {"1h12m", "6m"}, {"4h48m", "24m"}, {"14h24m", "1h12m"}},
		90 * day: {{"3h", "15m"}, {"18h", "1h30m"}, {"3d", "6h"}, {"9d", "18h"}},
	} {
		alerts := parseSLOAlerts(t, Config{SLOs: []SLO{{Name: "x", Objective: 0.999, Period: period}}})["x"]
		require.Len(t, alerts, 4)
		for i, w := range want {
			assert.Equal(t, w[0], alerts[i].long, "period %s", FormatDuration(period))
			assert.Equal(t, w[1], alerts[i].short, "period %s", FormatDuration(period))
		}
	}
}

// TestMinimumTrafficGuard: by default one failed call alone never reaches a threshold: the
// guard needs at least 1/threshold calls in the long window.
func TestMinimumTrafficGuard(t *testing.T) {
	infos, err := SLOs(Config{SLOs: []SLO{{Name: "a", Objective: 0.999}, {Name: "b", Objective: 0.99, MinCalls: 500}, {Name: "c", Objective: 0.999, MinCalls: 1}}})
	require.NoError(t, err)
	want := []int{70, 167, 334, 1000} // ⌈1/(14.4·0.001)⌉, ⌈1/(6·0.001)⌉, ⌈1/(3·0.001)⌉, ⌈1/(1·0.001)⌉
	for i, b := range infos[0].Burns {
		assert.Equal(t, want[i], b.MinCalls)
		assert.LessOrEqual(t, 1/float64(b.MinCalls), b.Threshold, "one failure among the guard's calls must not exceed the threshold")
		assert.Greater(t, 1/float64(b.MinCalls-1), b.Threshold, "the guard is the smallest such number")
	}
	for _, b := range infos[1].Burns {
		assert.Equal(t, 500, b.MinCalls)
	}
	for _, b := range infos[2].Burns {
		assert.Zero(t, b.MinCalls, "min_calls 1 turns the guard off")
	}
	alerts := parseSLOAlerts(t, Config{SLOs: []SLO{{Name: "a", Objective: 0.999}, {Name: "c", Objective: 0.999, MinCalls: 1}}})
	assert.Equal(t, "avg_over_time(job_name_slo:resilience_slo_calls:rate5m{slo=\"a\"}[1h]) * 3600 >= 70", alerts["a"][0].guard)
	assert.Empty(t, alerts["c"][0].guard)
}

func TestSLOConfigErrors(t *testing.T) {
	ok := SLO{Name: "payments", Objective: 0.999}
	with := func(f func(*SLO)) []SLO {
		s := ok
		f(&s)
		return []SLO{s}
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
		value any
		text  string
	}{
		{"no name", Config{SLOs: with(func(s *SLO) { s.Name = "" })}, "slos[0].name", nil, "missing"},
		{"name and regex", Config{SLOs: with(func(s *SLO) { s.NameRegex = "x" })}, "slos[0].name_regex", "x", "not both"},
		{"regex without id", Config{SLOs: with(func(s *SLO) { s.Name, s.NameRegex = "", "pay.*" })}, "slos[0].id", nil, "needs an id"},
		{"bad regex", Config{SLOs: with(func(s *SLO) { s.Name, s.NameRegex, s.ID = "", "pay(", "p" })}, "slos[0].name_regex", "pay(", "regular expression"},
		{"regex matching empty", Config{SLOs: with(func(s *SLO) { s.Name, s.NameRegex, s.ID = "", "pay.*|", "p" })}, "slos[0].name_regex", "pay.*|", "empty name"},
		{"objective 1", Config{SLOs: with(func(s *SLO) { s.Objective = 1 })}, "slos[0].objective", 1.0, "(0, 1)"},
		{"objective 0", Config{SLOs: with(func(s *SLO) { s.Objective = 0 })}, "slos[0].objective", 0.0, "(0, 1)"},
		{"objective NaN", Config{SLOs: with(func(s *SLO) { s.Objective = math.NaN() })}, "slos[0].objective", nil, "(0, 1)"},
		{"objective 99 (a percentage)", Config{SLOs: with(func(s *SLO) { s.Objective = 99.9 })}, "slos[0].objective", 99.9, "0.999 for 99.9%"},
		{"objective too low", Config{SLOs: with(func(s *SLO) { s.Objective = 0.9 })}, "slos[0].objective", 0.9, "14.4×"},
		{"period too short", Config{SLOs: with(func(s *SLO) { s.Period = day })}, "slos[0].period", nil, "out of range [6d, 90d]"},
		{"period too long", Config{SLOs: with(func(s *SLO) { s.Period = 91 * day })}, "slos[0].period", nil, "out of range"},
		{"period fraction", Config{SLOs: with(func(s *SLO) { s.Period = 7*day + time.Millisecond })}, "slos[0].period", nil, "whole number of seconds"},
		{"source", Config{SLOs: with(func(s *SLO) { s.Source = "bulkhead" })}, "slos[0].source", "bulkhead", "retry, breaker"},
		{"min calls", Config{SLOs: with(func(s *SLO) { s.MinCalls = -1 })}, "slos[0].min_calls", -1, "out of range"},
		{"severity", Config{SLOs: with(func(s *SLO) { s.PageSeverity = "page" })}, "slos[0].page_severity", "page", "info, warning, critical"},
		{"ticket severity", Config{SLOs: with(func(s *SLO) { s.TicketSeverity = "low" })}, "slos[0].ticket_severity", "low", "info, warning, critical"},
		{"label name", Config{SLOs: with(func(s *SLO) { s.Labels = map[string]string{"team-name": "x"} })}, "slos[0].labels.team-name", nil, "valid label name"},
		{"label reserved", Config{SLOs: with(func(s *SLO) { s.Labels = map[string]string{"severity": "x"} })}, "slos[0].labels.severity", nil, "already carry"},
		{"label group_by", Config{SLOs: with(func(s *SLO) { s.Labels = map[string]string{"job": "x"} })}, "slos[0].labels.job", nil, "already carry"},
		{"id control char", Config{SLOs: with(func(s *SLO) { s.ID = "a\x01" })}, "slos[0].id", "a\x01", "printable"},
		{"id from name", Config{SLOs: with(func(s *SLO) { s.Name = " pay" })}, "slos[0].name", " pay", "white space"},
		{"duplicate id", Config{SLOs: []SLO{ok, ok}}, "slos[1].name", "payments", "twice"},
		{"group_by slo", Config{GroupBy: []string{"job", "name", "slo"}, SLOs: []SLO{ok}}, "group_by", nil, "SLO rules set themselves"},
		{"selector label slo", Config{Selector: `slo="x"`, SLOs: []SLO{ok}}, "group_by", nil, "SLO rules set themselves"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Equal(t, "rules", ce.Primitive)
			assert.Equal(t, tc.field, ce.Field)
			if tc.value != nil {
				assert.Equal(t, tc.value, ce.Value)
			}
			assert.Contains(t, ce.Error(), tc.text)
		})
	}
	require.NoError(t, Config{SLOs: []SLO{ok, {Name: "payments", ID: "payments-strict", Objective: 0.9999}}}.Validate())
	_, err := GenerateSLORules(Config{})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "slos", ce.Field)
}

// TestSLORulesFollowConventions: names, group sizes, annotations, and the selector in every
// raw vector selector.
func TestSLORulesFollowConventions(t *testing.T) {
	cfg := Config{
		Namespace: "acme", Selector: `env="prod"`, GroupBy: []string{"cluster", "job", "name"},
		SLOs: []SLO{
			{Name: "payments", Objective: 0.999, Labels: map[string]string{"team": "{{ pay }}"}},
			{ID: "core", NameRegex: "inventory|recs", Objective: 0.99, Period: 7 * day, Source: SLOSourceBreaker, FallbacksGood: true},
		},
	}
	groups, err := SLOGroups(cfg)
	require.NoError(t, err)
	// The recording rules of both SLOs in one group, each SLO's four alerts in a group of its own.
	require.Len(t, groups, 3)
	assert.Equal(t, GroupSLORecording, groups[0].Name)
	assert.Len(t, groups[0].Rules, 2*11)
	for i, id := range []string{"payments", "core"} {
		assert.Equal(t, GroupSLOPrefix+id, groups[i+1].Name)
		assert.Len(t, groups[i+1].Rules, 4)
	}
	for _, g := range groups {
		for _, rl := range g.Rules {
			assert.Equal(t, rl.Record != "", g.Name == GroupSLORecording, "%s%s in %s", rl.Record, rl.Alert, g.Name)
			for _, raw := range regexp.MustCompile(`acme_[a-z_]+_total\{[^}]*\}`).FindAllString(rl.Expr, -1) {
				assert.Contains(t, raw, `env="prod"`, raw)
			}
			if rl.Record != "" {
				assert.Regexp(t, recordingName, rl.Record)
				assert.True(t, strings.HasPrefix(rl.Record, "cluster_job_name_env_slo:acme_slo_"), rl.Record)
				continue
			}
			assert.LessOrEqual(t, len(rl.Alert), 40)
			assert.Regexp(t, camelCase, rl.Alert)
			assert.Contains(t, Severities, rl.Labels["severity"])
			assert.Equal(t, "/d/"+SLODashboardUID+"?var-job={{ $labels.job | urlquery }}&var-name={{ $labels.name | urlquery }}", rl.Annotations["dashboard_url"])
			for _, a := range []string{"summary", "description", "runbook_url"} {
				assert.NotEmpty(t, rl.Annotations[a], a)
			}
			assert.Contains(t, rl.Annotations["description"], "{{ $value | humanizePercentage }}")
			assert.NotContains(t, rl.Annotations["summary"], "{{")
		}
	}
	assert.Equal(t, `{{ "{{ pay }}" }}`, groups[1].Rules[0].Labels["team"], "configured strings reach alerts literally")

	// The default rule file and tests know nothing of the SLOs.
	withSLOs, err := Generate(cfg)
	require.NoError(t, err)
	without := cfg
	without.SLOs = nil
	plain, err := Generate(without)
	require.NoError(t, err)
	assert.Equal(t, string(plain), string(withSLOs))
}

// TestSLOInfoNamesTheRecordedSeries: SLOs describes exactly what the rule file records.
func TestSLOInfoNamesTheRecordedSeries(t *testing.T) {
	cfg := Config{SLOs: []SLO{{Name: "payments", Objective: 0.999}, {ID: "core", NameRegex: "a|b", Objective: 0.99, Period: 28 * day}}}
	infos, err := SLOs(cfg)
	require.NoError(t, err)
	groups, err := SLOGroups(cfg)
	require.NoError(t, err)
	require.Equal(t, GroupSLORecording, groups[0].Name)
	for _, info := range infos {
		recorded := map[string]bool{}
		for _, rl := range groups[0].Rules {
			recorded[rl.Record] = recorded[rl.Record] || rl.Labels[LabelSLO] == info.ID
		}
		for _, name := range append([]string{info.Calls, info.BadCalls, info.PeriodErrorRatio, info.BudgetRemaining}, info.ErrorRatio...) {
			assert.True(t, recorded[name], "%s is not recorded", name)
		}
		assert.Len(t, info.Windows, 7)
		assert.Len(t, info.Burns, 4)
		assert.Equal(t, []string{"job", "name"}, info.GroupBy)
	}
	assert.Equal(t, "job_name_slo:resilience_slo_error_budget_remaining:ratio30d", infos[0].BudgetRemaining)
	assert.Equal(t, "job_name_slo:resilience_slo_bad_per_call:ratio_rate4m40s", infos[1].ErrorRatio[0])
}

// sloPromtoolConfigs are the SLO configurations checked with promtool: both sources, the
// period's extremes, strict objectives, a custom guard, namespace, selector and group_by.
var sloPromtoolConfigs = map[string]Config{
	"retry 99.9% 30d": {SLOs: []SLO{{Name: "payments", Objective: 0.999}}},
	"breaker 99% 7d, fallbacks good, regex": {SLOs: []SLO{{ID: "core", NameRegex: "inventory|recs", Objective: 0.99, Period: 7 * day,
		Source: SLOSourceBreaker, FallbacksGood: true}}},
	"two SLOs alike": {SLOs: []SLO{{Name: "payments", Objective: 0.999}, {Name: "inventory", Objective: 0.9995}}},
	"hostile id and labels": {GroupBy: []string{"name"}, SLOs: []SLO{{ID: `pay"me{{nts}}\ ü`, NameRegex: `pay.*|x"y`, Objective: 0.99, Period: 14 * day,
		Labels: map[string]string{"team": `{{ .Value }}"`, "runbook": "x}}"}}}},
	"custom": {
		Namespace: "acme", Selector: `env="prod", job=~"checkout|cart"`, GroupBy: []string{"cluster", "job", "name"},
		RunbookBaseURL: "https://wiki.example.com/rb",
		SLOs: []SLO{
			{ID: "payments-strict", Name: "payments", Objective: 0.9999, Period: 28 * day, MinCalls: 200,
				PageSeverity: "warning", TicketSeverity: "info", Labels: map[string]string{"team": "payments"}},
			{Name: "ledger", Objective: 0.95, Period: 6 * day, MinCalls: 1},
		},
	},
}

// TestPromtoolAcceptsGeneratedSLORulesAndTests runs `promtool check rules --lint=all
// --lint-fatal` and `promtool test rules` on the SLO rule file and its generated tests.
func TestPromtoolAcceptsGeneratedSLORulesAndTests(t *testing.T) {
	promtool(t)
	for name, cfg := range sloPromtoolConfigs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			rulesYAML, err := GenerateSLORulesPrometheus(cfg)
			require.NoError(t, err)
			testsYAML, err := GenerateSLOTests(cfg, "slo-rules.yaml")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "slo-rules.yaml"), rulesYAML, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "slo-rules.test.yaml"), testsYAML, 0o644))
			out, ok := runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "slo-rules.yaml")
			require.True(t, ok, "promtool check rules:\n%s", out)
			out, ok = runPromtool(t, dir, "test", "rules", "slo-rules.test.yaml")
			require.True(t, ok, "promtool test rules:\n%s", out)
		})
	}
}

// TestSLOTestsCoverEveryScenario: every SLO gets the fast-burn, slow-burn, blip, idle,
// low-traffic, budget and SLI tests, and the scenarios assert what their names say.
func TestSLOTestsCoverEveryScenario(t *testing.T) {
	out, err := GenerateSLOTests(sloPromtoolConfigs["custom"], "r.yaml")
	require.NoError(t, err)
	var file yamlTestFile
	require.NoError(t, yaml.Unmarshal(out, &file))
	assert.Equal(t, "1m", file.EvaluationInterval)
	assert.Equal(t, []string{GroupSLORecording, "stormwatch-slo-payments-strict", "stormwatch-slo-ledger"}, file.GroupEvalOrder)
	names := map[string][]yamlTestGroup{}
	for _, g := range file.Tests {
		id := regexp.MustCompile(`\(slo "([^"]+)"\)`).FindStringSubmatch(g.Name)[1]
		names[id] = append(names[id], g)
	}
	for id, want := range map[string][]string{
		"payments-strict": {"a fast burn", "a slow burn", "blip", "idle", "low traffic", "budget arithmetic", "SLI:", "SLI before the first failure"},
		"ledger":          {"a fast burn", "a slow burn", "blip", "idle", "budget arithmetic", "SLI:", "SLI before the first failure"},
	} {
		require.Len(t, names[id], len(want), id)
		for i, w := range want {
			assert.Contains(t, names[id][i].Name, w)
		}
	}
	// Fast burn: silent, then the 1h-equivalent page (severity as configured) fires.
	fast := names["payments-strict"][0]
	require.Len(t, fast.AlertRuleTests, 2)
	last := fast.AlertRuleTests[1].ExpAlerts
	require.NotEmpty(t, last)
	var windows []string
	for _, a := range last {
		windows = append(windows, a.ExpLabels[LabelLongWindow])
		assert.Equal(t, "payments", a.ExpLabels["team"])
		assert.Equal(t, "payments-strict", a.ExpLabels[LabelSLO])
		assert.Equal(t, "https://wiki.example.com/rb/"+AlertErrorBudgetBurn, a.ExpAnnotations["runbook_url"])
	}
	assert.Contains(t, windows, "56m")
	for _, a := range fast.AlertRuleTests[0].ExpAlerts {
		assert.NotEqual(t, "56m", a.ExpLabels[LabelLongWindow], "the fast page fires only at the second check")
	}
	// Slow burn: tickets only (severity info here), never a page (warning here).
	for _, at := range names["payments-strict"][1].AlertRuleTests {
		for _, a := range at.ExpAlerts {
			assert.Equal(t, "info", a.ExpLabels["severity"])
		}
	}
	// Blip, idle, low traffic: no alert at any check.
	for _, i := range []int{2, 3, 4} {
		for _, at := range names["payments-strict"][i].AlertRuleTests {
			assert.Empty(t, at.ExpAlerts, names["payments-strict"][i].Name)
		}
	}
}

// TestSLOReplayMatchesPrometheusRate pins the replay's rate() to hand-computed values:
// a full window extrapolates to its start; a series younger than the window by half an
// interval; a counter's extrapolation stops at zero.
func TestSLOReplayMatchesPrometheusRate(t *testing.T) {
	v := []float64{100, 115, 130, 145, 160, 175, 190, 205, 220, 235, 250, 265, 280, 295, 310, 325, 340, 355, 370, 385, 400, 415, 430}
	r, ok := rateAt(v, 22, 5*time.Minute) // 20 samples, 19 intervals of 15: 285s sampled, 15s to the start
	require.True(t, ok)
	assert.InDelta(t, 1.0, r, 1e-12)
	r, ok = rateAt(v, 1, 5*time.Minute) // 2 samples: extrapolated by half an interval at the start
	require.True(t, ok)
	assert.InDelta(t, 15*(22.5/15)/300, r, 1e-12)
	_, ok = rateAt(v, 0, 5*time.Minute)
	assert.False(t, ok, "one sample has no rate")
	zero := []float64{0, 15, 30}
	r, _ = rateAt(zero, 2, 5*time.Minute) // starts at 0: no extrapolation before it
	assert.InDelta(t, 30.0/300, r, 1e-12)
	assert.Equal(t, 2, firstIn(5*time.Minute, 5*time.Minute-20*time.Second, step), "ranges are left-open")
}

// TestSLORunbook: the runbook explains the burn rate, the budget and the SLI's counters, lists
// every SLO with its thresholds and guard, and is indexed.
func TestSLORunbook(t *testing.T) {
	files, err := GenerateRunbooks(sloPromtoolConfigs["custom"])
	require.NoError(t, err)
	var index, rb string
	for _, f := range files {
		switch f.Path {
		case RunbookDir + "/README.md":
			index = string(f.Data)
		case RunbookDir + "/" + AlertErrorBudgetBurn + "/README.md":
			rb = string(f.Data)
		}
	}
	require.NotEmpty(t, rb)
	assert.Contains(t, index, "["+AlertErrorBudgetBurn+"]("+AlertErrorBudgetBurn+"/README.md)")
	for _, want := range []string{
		"burn rate", "error budget", "## Reading the error budget remaining", "## Mitigate",
		"acme_retry_calls_total", "successful_with_retry", "failed_with_retry", "aborted", "http_4xx",
		"acme_circuitbreaker_not_permitted_calls_total", "fallbacks_good",
		"### payments-strict", "99.99% over 4w", "| warning | 14.4× | 0.144% | 56m | 4m40s | 200 |",
		"### ledger", "| critical | 14.4× | 72% | 12m | 1m | none |",
		"stormwatch / SLOs",
	} {
		assert.Contains(t, rb, want)
	}
	plain, err := GenerateRunbooks(Config{})
	require.NoError(t, err)
	for _, f := range plain {
		assert.NotContains(t, f.Path, AlertErrorBudgetBurn)
		assert.NotContains(t, string(f.Data), AlertErrorBudgetBurn)
	}
}
