package conformance_test

// What the default rules and dashboards rate() exists from the start: every counter (and
// histogram) a generated rule or panel feeds to rate() or increase() is exported at 0 by a fresh
// registry with the default collector — for every label value the query names — so alerts and
// panels work from the first event. The collector exports rare label values only once they
// occur; this test keeps the generators from depending on one of those.

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
	"github.com/stormwatch-go/stormwatch/rules"
)

// occurrenceOnly are the metrics whose label values all appear only once counted (a decision of
// the series budget): a query may rate them, but cannot rely on a series at 0.
var occurrenceOnly = map[string]string{
	catalog.RetryErrors.Name: "failure classes appear when they first occur",
}

// exposedSeries is one series of a fresh registry: its family (a histogram's own name) and
// labels.
type exposedSeries struct {
	family string
	labels map[string]string
	value  float64
}

// freshExposition gathers the default collector of a registry holding one dependency behind a
// full pipeline (slow-call detection on, a retry budget, a queueing bulkhead, an adaptive limiter
// and a throttle), before any call.
func freshExposition(t *testing.T) []exposedSeries {
	t.Helper()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	_, err = reg.Pipeline("payments", instrument.PipelineConfig{
		Retry:    &retry.Config{},
		Breaker:  &breaker.Config{SlowCallDuration: time.Second},
		Bulkhead: &bulkhead.Config{MaxWait: 100 * time.Millisecond},
		Timeout:  &timeout.Config{},
		Fallback: &fallback.Config{},
		Limit:    &limit.Config{},
		Throttle: &throttle.Config{},
		Hedge:    &hedge.Config{},
	})
	require.NoError(t, err)
	c, err := collector.New(reg)
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	var out []exposedSeries
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := exposedSeries{family: mf.GetName(), labels: map[string]string{}, value: value(m)}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

// ratedSelector is a vector selector under rate() or increase(): the catalog metric and the
// matchers on its own labels (not the scrape's, not the dashboards' variables).
type ratedSelector struct {
	where    string
	metric   catalog.Metric
	matchers []*labels.Matcher
}

func ratedSelectors(t *testing.T, where, expr string) []ratedSelector {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	require.NoError(t, err, "%s: %s", where, expr)
	var out []ratedSelector
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		call, ok := node.(*parser.Call)
		if !ok || (call.Func.Name != "rate" && call.Func.Name != "increase") {
			return nil
		}
		vs := call.Args[0].(*parser.MatrixSelector).VectorSelector.(*parser.VectorSelector)
		m, ok := catalog.Lookup(catalog.DefaultNamespace, vs.Name)
		if !ok {
			return nil // a recorded series
		}
		rs := ratedSelector{where: where, metric: m}
		for _, lm := range vs.LabelMatchers {
			if _, own := m.Label(lm.Name); own && lm.Name != catalog.LabelName {
				rs.matchers = append(rs.matchers, lm)
			}
		}
		out = append(out, rs)
		return nil
	})
	return out
}

// alternatives splits the selector into one selector per label value it names: a=~"x|y"
// becomes a="x" and a="y". Negative matchers stay as they are.
func (rs ratedSelector) alternatives() [][]*labels.Matcher {
	out := [][]*labels.Matcher{nil}
	for _, m := range rs.matchers {
		var values []string
		switch m.Type {
		case labels.MatchEqual:
			values = []string{m.Value}
		case labels.MatchRegexp:
			values = strings.Split(m.Value, "|")
		default:
			for i := range out {
				out[i] = append(out[i], m)
			}
			continue
		}
		var next [][]*labels.Matcher
		for _, o := range out {
			for _, v := range values {
				next = append(next, append(append([]*labels.Matcher{}, o...), labels.MustNewMatcher(labels.MatchEqual, m.Name, v)))
			}
		}
		out = next
	}
	return out
}

func (s exposedSeries) matches(family string, ms []*labels.Matcher) bool {
	if s.family != family {
		return false
	}
	for _, m := range ms {
		if !m.Matches(s.labels[m.Name]) {
			return false
		}
	}
	return true
}

func TestRatedSeriesStartAtZero(t *testing.T) {
	var selectors []ratedSelector
	groups, err := rules.Groups(rules.Config{})
	require.NoError(t, err)
	for _, g := range groups {
		for _, r := range g.Rules {
			selectors = append(selectors, ratedSelectors(t, "rule "+r.Record+r.Alert, r.Expr)...)
		}
	}
	nRules := len(selectors)
	for _, cfg := range []dashboards.Config{{}, {Histograms: dashboards.ClassicHistograms}} {
		for _, q := range dashboardQueries(t, cfg) {
			selectors = append(selectors, ratedSelectors(t, q.where, forEvaluation(q.expr))...)
		}
	}
	require.NotZero(t, nRules, "the rules rate counters")
	require.Greater(t, len(selectors), nRules, "the dashboards rate counters")

	exposed := freshExposition(t)
	checked := map[string]bool{}
	for _, rs := range selectors {
		family := rs.metric.FullName(catalog.DefaultNamespace)
		if reason, ok := occurrenceOnly[rs.metric.Name]; ok {
			assert.Empty(t, rs.matchers, "%s: %s names label values, but %s", rs.where, family, reason)
			continue
		}
		for _, ms := range rs.alternatives() {
			key := family
			for _, m := range ms {
				key += m.String()
			}
			if checked[key] {
				continue
			}
			checked[key] = true
			found := false
			for _, s := range exposed {
				if s.matches(family, ms) {
					found = true
					assert.Zero(t, s.value, "%s: %s%v", rs.where, family, ms)
				}
			}
			assert.True(t, found, "%s rates %s%v, which a fresh registry does not export", rs.where, family, ms)
		}
	}
	t.Logf("%d rated selectors; series sets checked: %v", len(selectors), slices.Sorted(maps.Keys(checked)))
}

// TestRatedSeriesCheckSeesMissingValues: the check above would fail on a query rating a label
// value that only appears once it occurs.
func TestRatedSeriesCheckSeesMissingValues(t *testing.T) {
	exposed := freshExposition(t)
	for expr, want := range map[string]bool{
		`rate(resilience_circuitbreaker_transitions_total{from="closed", to="open"}[5m])`:      true,
		`rate(resilience_circuitbreaker_transitions_total{from="open", to="half_open"}[5m])`:   false,
		`rate(resilience_retry_calls_total{kind=~"successful_with_retry|aborted"}[5m])`:        false,
		`rate(resilience_circuitbreaker_calls_total{kind=~"slow_failed|slow_successful"}[5m])`: true,
		`rate(resilience_circuitbreaker_calls_total{kind="ignored"}[5m])`:                      false,
	} {
		rss := ratedSelectors(t, "self-test", expr)
		require.Len(t, rss, 1)
		all := true
		for _, ms := range rss[0].alternatives() {
			found := false
			for _, s := range exposed {
				found = found || s.matches(rss[0].metric.FullName(catalog.DefaultNamespace), ms)
			}
			all = all && found
		}
		assert.Equal(t, want, all, expr)
	}
}
