package conformance_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	promqlengine "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/internal/backtest"
	"github.com/stormwatch-go/stormwatch/rules"
)

// The backtest's replay is checked against the generated promtool tests: for every test of
// the generated rules, the test's input series are loaded into Prometheus's own engine, the
// backtest replays every alert over the test's span at its evaluation interval (range queries
// on that engine, recording rules inlined since the storage holds no recorded series), and at
// every eval_time of the test the alerts the replay has firing must be exactly the test's
// exp_alerts: the same series and expectations give the same firing times.

type promtoolFile struct {
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	Tests              []struct {
		Name        string         `yaml:"name"`
		Interval    model.Duration `yaml:"interval"`
		InputSeries []struct {
			Series string `yaml:"series"`
			Values string `yaml:"values"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			EvalTime  model.Duration `yaml:"eval_time"`
			Alertname string         `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// loadSeries reads a promtool input series (`metric{labels} values`, expanding notation),
// one sample per interval from 0.
func loadSeries(t *testing.T, desc string, interval time.Duration) storage.Series {
	ls, vals, err := parser.NewParser(parser.Options{}).ParseSeriesDesc(desc)
	require.NoError(t, err, desc)
	var samples []chunks.Sample
	for i, v := range vals {
		if !v.Omitted {
			samples = append(samples, floatSample{t: int64(i) * interval.Milliseconds(), f: v.Value})
		}
	}
	return storage.NewListSeries(ls, samples)
}

// engineSource answers range queries with Prometheus's engine over in-memory series.
type engineSource struct {
	engine  *promqlengine.Engine
	storage storage.Queryable
}

func (s engineSource) QueryRange(ctx context.Context, expr string, r backtest.Range) (model.Matrix, error) {
	q, err := s.engine.NewRangeQuery(ctx, s.storage, nil, expr, r.Start, r.End, r.Step)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("%s: %w", expr, res.Err)
	}
	m, err := res.Matrix()
	if err != nil {
		return nil, err
	}
	out := make(model.Matrix, 0, len(m))
	for _, s := range m {
		ss := &model.SampleStream{Metric: model.Metric{}}
		s.Metric.Range(func(l labels.Label) { ss.Metric[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
		for _, p := range s.Floats {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.Time(p.T), Value: model.SampleValue(p.F)})
		}
		out = append(out, ss)
	}
	return out, nil
}

// HasSeries says no: the storage holds only the input series, so recording rules are inlined.
func (engineSource) HasSeries(context.Context, string, time.Time, time.Time) (bool, error) {
	return false, nil
}

// firingAt returns the label sets of alert the replay had firing at ts.
func firingAt(rep *backtest.Report, alert string, ts time.Time) []string {
	var out []string
	for _, a := range rep.Alerts {
		if a.Alert != alert {
			continue
		}
		for _, s := range a.Series {
			for _, e := range s.Episodes {
				if !e.Fired.After(ts) && (e.Resolved.IsZero() || e.Resolved.After(ts)) {
					out = append(out, s.Labels)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func checkReplayMatchesPromtool(t *testing.T, cfg rules.Config) {
	groups, err := rules.Groups(cfg)
	require.NoError(t, err)
	testsYAML, err := rules.GenerateTests(cfg, "rules.yaml")
	require.NoError(t, err)
	checkReplay(t, groups, testsYAML, 50)
}

// checkReplay replays groups over every test of the promtool test file testsYAML and compares
// the alerts firing at each eval_time with the test's expectations; at least min of them.
func checkReplay(t *testing.T, groups []rules.Group, testsYAML []byte, min int) {
	var file promtoolFile
	require.NoError(t, yaml.Unmarshal(testsYAML, &file))
	engine := promqlengine.NewEngine(promqlengine.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute,
		LookbackDelta: 5 * time.Minute, Parser: parser.NewParser(parser.Options{})})
	t.Cleanup(func() { require.NoError(t, engine.Close()) })
	step := time.Duration(file.EvaluationInterval)
	checked := 0
	for _, tc := range file.Tests {
		if len(tc.AlertRuleTest) == 0 {
			continue
		}
		var store memStorage
		for _, s := range tc.InputSeries {
			store.series = append(store.series, loadSeries(t, s.Series+" "+s.Values, time.Duration(tc.Interval)))
		}
		var end time.Duration
		for _, at := range tc.AlertRuleTest {
			end = max(end, time.Duration(at.EvalTime))
		}
		rep, err := backtest.Run(context.Background(), groups, backtest.Options{
			Source: engineSource{engine, store}, Start: time.Unix(0, 0), End: time.Unix(0, 0).Add(end),
			Interval: step, Recording: backtest.RecordingInline, ChunkSteps: 7,
		})
		require.NoError(t, err, tc.Name)
		for _, at := range tc.AlertRuleTest {
			var want []string
			for _, ea := range at.ExpAlerts {
				want = append(want, backtest.Key(nil, at.Alertname, ea.ExpLabels))
			}
			sort.Strings(want)
			ts := time.Unix(0, 0).Add(time.Duration(at.EvalTime))
			assert.Equal(t, want, firingAt(rep, at.Alertname, ts), "%s: %s at %s", tc.Name, at.Alertname, time.Duration(at.EvalTime))
			checked++
		}
	}
	assert.GreaterOrEqual(t, checked, min, "alert expectations checked")
	t.Logf("%d alert expectations of %d promtool tests reproduced by the replay", checked, len(file.Tests))
}

func TestBacktestReplayMatchesPromtoolDefaults(t *testing.T) {
	checkReplayMatchesPromtool(t, rules.Config{})
}

// The demo profile's short windows and fors and its 1s scrapes, plus a keep_firing_for.
func TestBacktestReplayMatchesPromtoolTuned(t *testing.T) {
	d := func(s string) *time.Duration { v, _ := time.ParseDuration(s); return &v }
	th := func(v float64) *float64 { return &v }
	checkReplayMatchesPromtool(t, rules.Config{RateWindow: 30 * time.Second, ScrapeInterval: time.Second, Alerts: map[string]rules.AlertConfig{
		rules.AlertStuckOpen:            {Threshold: th(25), For: d("10s")},
		rules.AlertRetryRateHigh:        {For: d("50s")},
		rules.AlertRetryBudgetExhausted: {For: d("90s"), KeepFiringFor: d("2m")},
		rules.AlertBulkheadSaturated:    {For: d("15s")},
		rules.AlertFallbackSustained:    {For: d("65s")},
	}})
}

// The SLO burn-rate alerts, whose recording rules nest (base rates over 5m, then longer windows
// built from them): inlined, their replay reproduces the generated SLO tests too.
func TestBacktestReplayMatchesPromtoolSLOs(t *testing.T) {
	cfg := rules.Config{SLOs: []rules.SLO{{Name: "payments", Objective: 0.999}}}
	groups, err := rules.SLOGroups(cfg)
	require.NoError(t, err)
	testsYAML, err := rules.GenerateSLOTests(cfg, "slo.yaml")
	require.NoError(t, err)
	checkReplay(t, groups, testsYAML, 4)
}
