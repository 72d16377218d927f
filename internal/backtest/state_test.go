package backtest

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Unix(0, 0).UTC()

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

// replaySteps feeds the machine one evaluation a minute from t0: steps[i] lists the label sets
// present at minute i. It returns the episodes by label set, closing the machine at the end.
func replaySteps(m *Machine, steps [][]string) map[string][]Episode {
	out := map[string][]Episode{}
	done := func(k string, e Episode) { out[k] = append(out[k], e) }
	for i, keys := range steps {
		present := map[string]bool{}
		for _, k := range keys {
			present[k] = true
		}
		m.Step(at(i), present, done)
	}
	m.Close(done)
	return out
}

func repeat(n int, keys ...string) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = keys
	}
	return out
}

func concat(parts ...[][]string) [][]string {
	var out [][]string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Prometheus's own TestKeepFiringFor (rules/alerting_test.go): http_requests 75 85 70 70 10x5
// at 1m, `> 50`, for 1m, keep_firing_for 1m: pending at 0, firing at 1m, still firing at 4m
// (the first evaluation without the series), resolved at 5m.
func TestMachineKeepFiringForAsPrometheus(t *testing.T) {
	m := NewMachine(time.Minute, time.Minute)
	got := replaySteps(m, concat(repeat(4, "a"), repeat(5)))
	assert.Equal(t, map[string][]Episode{"a": {{Pending: at(0), Fired: at(1), Resolved: at(5)}}}, got)
}

func TestMachine(t *testing.T) {
	cases := []struct {
		name      string
		forDur    time.Duration
		keep      time.Duration
		steps     [][]string
		episodes  map[string][]Episode
		firingEnd []string // label sets firing after the last step
	}{
		{
			name: "for 0 fires at the first evaluation", steps: concat(repeat(2, "a"), repeat(1)),
			episodes: map[string][]Episode{"a": {{Pending: at(0), Fired: at(0), Resolved: at(2)}}},
		},
		{
			name: "fires when ts - activeAt >= for, exactly", forDur: 3 * time.Minute, steps: concat(repeat(4, "a"), repeat(1)),
			episodes: map[string][]Episode{"a": {{Pending: at(0), Fired: at(3), Resolved: at(4)}}},
		},
		{
			name: "a break while pending restarts the for", forDur: 2 * time.Minute,
			steps:    concat(repeat(2, "a"), repeat(1), repeat(3, "a"), repeat(1)),
			episodes: map[string][]Episode{"a": {{Pending: at(0), Resolved: at(2)}, {Pending: at(3), Fired: at(5), Resolved: at(6)}}},
		},
		{
			name: "keep_firing_for does not hold a pending alert", forDur: 5 * time.Minute, keep: 10 * time.Minute,
			steps:    concat(repeat(2, "a"), repeat(2)),
			episodes: map[string][]Episode{"a": {{Pending: at(0), Resolved: at(2)}}},
		},
		{
			name: "a return during keep_firing_for continues the episode and restarts the keep", keep: 2 * time.Minute,
			steps:    concat(repeat(1, "a"), repeat(1), repeat(1, "a"), repeat(3)),
			episodes: map[string][]Episode{"a": {{Pending: at(0), Fired: at(0), Resolved: at(5)}}},
		},
		{
			name: "label sets are independent; open episodes have no resolution", forDur: time.Minute,
			steps: concat(repeat(2, "a", "b"), repeat(2, "b")),
			episodes: map[string][]Episode{
				"a": {{Pending: at(0), Fired: at(1), Resolved: at(2)}},
				"b": {{Pending: at(0), Fired: at(1)}},
			},
			firingEnd: []string{"b"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMachine(c.forDur, c.keep)
			var firing []string
			done := func(k string, e Episode) {}
			for i, keys := range c.steps {
				present := map[string]bool{}
				for _, k := range keys {
					present[k] = true
				}
				m.Step(at(i), present, done)
			}
			for _, k := range []string{"a", "b"} {
				if m.Firing(k) {
					firing = append(firing, k)
				}
			}
			assert.Equal(t, c.firingEnd, firing)
			assert.Equal(t, c.episodes, replaySteps(NewMachine(c.forDur, c.keep), c.steps))
		})
	}
}

func TestKeyIsPrometheusAlertIdentity(t *testing.T) {
	k := Key(model.Metric{"__name__": "x", "job": "a", "severity": "info"}, "Alert", map[string]string{"severity": "warning"})
	require.Equal(t, `{alertname="Alert", job="a", severity="warning"}`, k)
}

func TestEpisodeFiringFor(t *testing.T) {
	assert.Equal(t, time.Duration(0), Episode{Pending: at(0)}.FiringFor(at(9)))
	assert.Equal(t, 2*time.Minute, Episode{Fired: at(1), Resolved: at(3)}.FiringFor(at(9)))
	assert.Equal(t, 8*time.Minute, Episode{Fired: at(1)}.FiringFor(at(9)))
}
