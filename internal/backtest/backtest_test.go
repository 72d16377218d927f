package backtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/internal/promtooltest"
	"github.com/stormwatch-go/stormwatch/rules"
)

const (
	retryRateRec = "job_name:resilience_retry_attempts_per_call:ratio_rate5m"
	retryLabels  = `{"job":"checkout","name":"payments"}`
	retryKey     = `{alertname="RetryRateHigh", job="checkout", name="payments", severity="warning"}`
)

func minute(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

// retryRate is the synthetic retry rate of the tests, by minute: 0.5 during the incident
// (minutes 20 to 29), 0.08 during a lesser bump (45 to 52), 0.01 otherwise.
func retryRate(ts time.Time) float64 {
	m := int(ts.Sub(t0) / time.Minute)
	switch {
	case m >= 20 && m < 30:
		return 0.5
	case m >= 45 && m < 53:
		return 0.08
	}
	return 0.01
}

// retryVolumeGuard is the rest of RetryRateHigh's expression after `<recorded> > X`: the
// minimum volume of retries, which the synthetic checkout/payments always meets.
const retryVolumeGuard = "\nand on (job, name)\njob_name:resilience_retry_attempts:rate5m * 300 >= 10"

// retryRateHigh answers RetryRateHigh's expression read from the server (`<recorded> > X`
// and the volume guard) from retryRate; every other expression (RetryRateSpike's, which
// starts alike, too) is empty.
func retryRateHigh(expr string, ts time.Time) map[string]float64 {
	rest, ok := strings.CutPrefix(expr, retryRateRec+" > ")
	if !ok {
		return nil
	}
	th, ok := strings.CutSuffix(rest, retryVolumeGuard)
	if !ok {
		return nil
	}
	x, err := strconv.ParseFloat(th, 64)
	if err != nil || retryRate(ts) <= x {
		return nil
	}
	return map[string]float64{retryLabels: retryRate(ts)}
}

func TestRunReplaysEveryAlertInChunks(t *testing.T) {
	f := &fakeAPI{series: retryRateHigh, hasSeries: func(string) bool { return true }}
	_, src := newFake(t, f, Auth{})
	groups, err := rules.Groups(rules.Config{})
	require.NoError(t, err)
	var progress []int
	rep, err := Run(context.Background(), groups, Options{Source: src, Start: t0, End: minute(60), Interval: time.Minute,
		ChunkSteps: 7, Progress: func(a string, done, total int) {
			if a == rules.AlertRetryRateHigh {
				progress = append(progress, done, total)
			}
		}})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 10, 2, 10, 3, 10, 4, 10, 5, 10, 6, 10, 7, 10, 8, 10, 9, 10, 10, 10}, progress,
		"66 steps (5m of warm-up for the for) in chunks of 7")
	var names []string
	for _, a := range rep.Alerts {
		names = append(names, a.Alert)
		if a.Alert != rules.AlertRetryRateHigh {
			assert.Zero(t, a.Pages, a.Alert)
			continue
		}
		// Bump at 45–52 (8 minutes, over the 5m for) pages too.
		require.Len(t, a.Series, 1)
		assert.Equal(t, retryKey, a.Series[0].Labels)
		assert.Equal(t, []Episode{
			{Pending: minute(20), Fired: minute(25), Resolved: minute(30)},
			{Pending: minute(45), Fired: minute(50), Resolved: minute(53)},
		}, a.Series[0].Episodes)
		assert.Equal(t, 2, a.Pages)
		assert.Equal(t, 48.0, a.PagesPerDay, "2 pages in an hour")
		assert.Equal(t, 8*time.Minute, a.FiringTime)
		assert.Equal(t, retryRateRec+" > 0.05"+retryVolumeGuard, a.Expr, "read from the server: it holds the recorded series")
	}
	assert.Len(t, names, len(rules.AlertNames()), "every default alert")
}

func TestRunInlinesMissingRecordingRules(t *testing.T) {
	f := &fakeAPI{hasSeries: func(string) bool { return false }}
	_, src := newFake(t, f, Auth{})
	groups, err := rules.Groups(rules.Config{})
	require.NoError(t, err)
	rep, err := Run(context.Background(), groups, Options{Source: src, Start: t0, End: minute(10), Interval: time.Minute})
	require.NoError(t, err)
	for _, a := range rep.Alerts {
		assert.NotContains(t, a.Expr, ":rate5m", "%s reads no recorded series", a.Alert)
		assert.NotContains(t, a.Expr, ":increase15m", "%s reads no recorded series", a.Alert)
		if a.Alert == rules.AlertRetryRateHigh {
			assert.Contains(t, a.Expr, "sum by (job, name) (rate(resilience_retry_attempts_total[5m]))")
			require.Len(t, a.Notes, 1)
			assert.Contains(t, a.Notes[0], retryRateRec)
		}
		if a.Alert == rules.AlertRetryRateSpike {
			// avg_over_time(job_name:resilience_retry_attempts:rate5m[1h] offset 15m)
			assert.Contains(t, a.Expr, "avg_over_time(((sum by (job, name) (rate(resilience_retry_attempts_total[5m]))))[1h:1m] offset 15m)",
				"a range over a recorded series becomes a subquery")
			// job_name:resilience_retry_attempts:rate5m offset 1h
			assert.Contains(t, a.Expr, "last_over_time(((sum by (job, name) (rate(resilience_retry_attempts_total[5m]))))[1m:1m] offset 1h)",
				"an offset of an instant selector over a recorded series moves to a subquery")
		}
	}
	for _, q := range f.queries {
		assert.NotContains(t, q, ":rate5m")
	}
}

func TestRunValidates(t *testing.T) {
	_, src := newFake(t, &fakeAPI{}, Auth{})
	for _, o := range []Options{
		{Start: t0, End: minute(1), Interval: time.Minute},
		{Source: src, Start: t0, End: minute(1)},
		{Source: src, Start: minute(1), End: minute(1), Interval: time.Minute},
		{Source: src, Start: t0, End: minute(1), Interval: time.Minute, Recording: "both"},
	} {
		_, err := Run(context.Background(), nil, o)
		require.Error(t, err)
	}
}

func TestCompareWithALERTS(t *testing.T) {
	alerts := `ALERTS{alertname="RetryRateHigh", alertstate="firing"}`
	f := &fakeAPI{hasSeries: func(string) bool { return true }, series: func(expr string, ts time.Time) map[string]float64 {
		if expr != alerts {
			return retryRateHigh(expr, ts)
		}
		m := int(ts.Sub(t0) / time.Minute)
		out := map[string]float64{}
		if (m >= 26 && m < 31) || (m >= 51 && m < 54) { // one evaluation later than the replay
			out[`{"__name__":"ALERTS","alertname":"RetryRateHigh","alertstate":"firing","job":"checkout","name":"payments","severity":"warning"}`] = 1
		}
		if m >= 5 && m < 7 { // only on the server
			out[`{"__name__":"ALERTS","alertname":"RetryRateHigh","alertstate":"firing","job":"search","name":"payments","severity":"warning"}`] = 1
		}
		return out
	}}
	_, src := newFake(t, f, Auth{})
	groups, err := rules.Groups(rules.Config{})
	require.NoError(t, err)
	rep, err := Run(context.Background(), groups, Options{Source: src, Start: t0, End: minute(60), Interval: time.Minute})
	require.NoError(t, err)
	ags, err := Compare(context.Background(), src, rep, 1, nil)
	require.NoError(t, err)
	for _, ag := range ags {
		if ag.Alert != rules.AlertRetryRateHigh {
			assert.Equal(t, 100.0, ag.Percent, ag.Alert)
			assert.Zero(t, ag.Replayed+ag.Recorded, ag.Alert)
			continue
		}
		// Replayed 25–29 and 50–52 (8 steps), recorded 26–30 and 51–53 (8) plus 5–6 (2) elsewhere:
		// 16 of 18 steps matched within one step.
		assert.Equal(t, 8, ag.Replayed)
		assert.Equal(t, 10, ag.Recorded)
		assert.InDelta(t, 100*16.0/18, ag.Percent, 1e-9)
		assert.Empty(t, ag.OnlyReplayed)
		assert.Equal(t, []Interval{{Labels: `{alertname="RetryRateHigh", job="search", name="payments", severity="warning"}`, From: minute(5), To: minute(7)}}, ag.OnlyRecorded)
	}
	ags, err = Compare(context.Background(), src, rep, 0, nil)
	require.NoError(t, err)
	for _, ag := range ags {
		if ag.Alert == rules.AlertRetryRateHigh {
			assert.InDelta(t, 100*12.0/18, ag.Percent, 1e-9, "without tolerance the shifted ends do not match")
		}
	}
}

// The incident is minutes 20–35 (retry rate 0.5 for 10 minutes); the bump at 45–52 (0.08 for
// 8 minutes) pages under the defaults (0.05 for 5m). A longer for cannot tell them apart: 10m
// (one grid step away) misses the incident as well. The nearest setting that catches the
// incident and not the bump is the threshold 0.1 (two grid steps: 0.075 is still under the
// bump) with the default for; the other alerts see neither and keep theirs.
func TestSuggest(t *testing.T) {
	f := &fakeAPI{series: retryRateHigh, hasSeries: func(string) bool { return true }}
	_, src := newFake(t, f, Auth{})
	incidents := []Incident{{Name: "payments down", Start: minute(20), End: minute(35)}}
	sugg, err := Suggest(context.Background(), rules.Config{}, Options{Source: src, Start: t0, End: minute(70), Interval: time.Minute}, incidents)
	require.NoError(t, err)
	require.Len(t, sugg, len(rules.AlertNames()))
	for _, s := range sugg {
		if s.Alert != rules.AlertRetryRateHigh {
			assert.False(t, s.Changed, s.Alert)
			continue
		}
		assert.Equal(t, Setting{Threshold: 0.05, For: 5 * time.Minute}, s.Current)
		assert.Equal(t, Score{Caught: 1, FalsePages: 1, Delay: 5 * time.Minute}, s.CurrentScore)
		assert.Equal(t, Setting{Threshold: 0.1, For: 5 * time.Minute}, s.Best)
		assert.Equal(t, Score{Caught: 1, Delay: 5 * time.Minute}, s.BestScore)
		assert.True(t, s.Changed)
	}
	assert.Equal(t, "alerts:\n  RetryRateHigh:\n    threshold: 0.1\n    for: 5m\n", Snippet(sugg))

	tuned, err := Apply(rules.Config{}, sugg)
	require.NoError(t, err)
	require.Equal(t, 0.1, *tuned.Alerts[rules.AlertRetryRateHigh].Threshold)
	promtoolTestsPass(t, tuned)
}

// promtoolTestsPass runs the generated promtool tests of cfg (through internal/promtooltest:
// sharded across the CPUs, no wall-clock limit below its hang guard, a passing file set
// remembered by digest).
func promtoolTestsPass(t *testing.T, cfg rules.Config) {
	t.Helper()
	promtooltest.Path(t) // skips when bin/promtool is absent
	dir := t.TempDir()
	rulesYAML, err := rules.GeneratePrometheus(cfg)
	require.NoError(t, err)
	tests, err := rules.GenerateTests(cfg, "rules.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yaml"), tests, 0o644))
	out, ok := promtooltest.Run(t, dir, "test", "rules", "rules.test.yaml")
	require.True(t, ok, "promtool test rules:\n%s", out)
	require.Contains(t, out, "SUCCESS")
}

func TestGrids(t *testing.T) {
	assert.Equal(t, []float64{0.0125, 0.025, 0.0375, 0.05, 0.075, 0.1, 0.2}, ThresholdGrid(rules.Config{}, rules.AlertRetryRateHigh, 0.05))
	assert.Equal(t, []float64{2, 3, 5, 6, 12}, ThresholdGrid(rules.Config{}, rules.AlertFlapping, 3), "whole numbers in [2, 40]")
	assert.Equal(t, []float64{0, 0.01, 0.1, 0.5, 1, 5}, ThresholdGrid(rules.Config{}, rules.AlertFallbackSustained, 0))
	assert.Equal(t, []float64{0.125, 0.25, 0.375, 0.5, 0.75}, ThresholdGrid(rules.Config{}, rules.AlertOpenFleetWide, 0.5), "(0, 1) excludes 1 and 2")
	assert.Equal(t, []time.Duration{0, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute},
		ForGrid(5*time.Minute, time.Minute))
	assert.Equal(t, []time.Duration{time.Minute, 90 * time.Second, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute},
		forGrid(rules.AlertRetryBudgetExhausted, 90*time.Second, time.Second), "denials in every minute: no for under a minute")
}

// CircuitBreakerFlapping holds while it is firing by reading its own ALERTS series. A server
// without them (the rules never ran there) gets the replay's own firing alerts instead, one
// evaluation at a time: 3 trips in 15m at minutes 10–14 fire it, one trip in the window
// (minutes 15–29) holds it only because it is firing, and it resolves at 30.
func TestRunReplaysOwnALERTS(t *testing.T) {
	flapKey := `{alertname="CircuitBreakerFlapping", instance="10.0.0.1:9464", job="checkout", name="payments", severity="warning"}`
	f := &fakeAPI{hasSeries: func(m string) bool { return !strings.HasPrefix(m, "ALERTS") },
		series: func(expr string, ts time.Time) map[string]float64 {
			if !strings.Contains(expr, "job_name_instance:resilience_circuitbreaker_trips:increase15m >= 3") {
				return nil
			}
			if strings.Contains(expr, "ALERTS{") {
				panic("the server holds no ALERTS: the replay must provide its own")
			}
			held := strings.Contains(expr, `label_replace(label_replace(label_replace(label_replace(label_replace(vector(1), "alertname", "CircuitBreakerFlapping", "", ""), "instance", "10.0.0.1:9464", "", ""), "job", "checkout", "", ""), "name", "payments", "", ""), "severity", "warning", "", ""), "alertstate", "firing", "", "")`)
			m := int(ts.Sub(t0) / time.Minute)
			if (m >= 10 && m < 15) || (held && m >= 15 && m < 30) {
				return map[string]float64{`{"instance":"10.0.0.1:9464","job":"checkout","name":"payments"}`: 1}
			}
			return nil
		}}
	_, src := newFake(t, f, Auth{})
	groups, err := rules.Groups(rules.Config{})
	require.NoError(t, err)
	rep, err := Run(context.Background(), groups, Options{Source: src, Start: t0, End: minute(60), Interval: time.Minute})
	require.NoError(t, err)
	found := false
	for _, a := range rep.Alerts {
		if a.Alert != rules.AlertFlapping {
			continue
		}
		found = true
		require.Len(t, a.Series, 1)
		assert.Equal(t, flapKey, a.Series[0].Labels)
		assert.Equal(t, []Episode{{Pending: minute(10), Fired: minute(10), Resolved: minute(30)}}, a.Series[0].Episodes,
			"held by its own firing state until the trips leave the window")
		assert.Equal(t, []string{"reads its own ALERTS, which the server does not hold in the range: replayed step by step, reading the replay's own firing alerts"}, a.Notes)
	}
	assert.True(t, found, rules.AlertFlapping)
}
