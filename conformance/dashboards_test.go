package conformance_test

// Dashboards conformance (issue 6): every query of every generated Grafana dashboard parses with
// the real PromQL parser once Grafana's macros and variables are substituted, selects only
// catalog metrics and labels, and every catalog metric is on at least one panel.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/internal/selector"
	"github.com/stormwatch-go/stormwatch/rules"
)

// grafanaSubstitutions replace Grafana's interval macros with the durations Grafana would put in
// their place; longest names first so $__interval does not eat $__interval_ms.
var grafanaSubstitutions = []struct{ macro, value string }{
	{"$__rate_interval_ms", "300000"},
	{"$__rate_interval", "5m"},
	{"$__interval_ms", "60000"},
	{"$__interval", "1m"},
	{"$__range_ms", "3600000"},
	{"$__range_s", "3600"},
	{"$__range", "1h"},
}

// rateWindow is what $__rate_interval became: every range in a dashboard must be it.
const rateWindow = 5 * time.Minute

// variableRE matches a dashboard variable reference: $name, ${name} or ${name:format}.
var variableRE = regexp.MustCompile(`\$\{[a-zA-Z_][a-zA-Z0-9_]*(?::[a-z]+)?\}|\$[a-zA-Z_][a-zA-Z0-9_]*`)

// substitute replaces macros by durations and variables by a plain value (they only ever stand
// for label values, inside quotes; anywhere else the parser will reject the result).
func substitute(expr string) string {
	for _, s := range grafanaSubstitutions {
		expr = strings.ReplaceAll(expr, s.macro, s.value)
	}
	return variableRE.ReplaceAllString(expr, "value")
}

// dashQuery is one PromQL expression found in a dashboard.
type dashQuery struct {
	where  string
	expr   string
	legend string
	panel  bool
}

// grafanaJSON is the part of Grafana's dashboard model that holds queries.
type grafanaJSON struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr         string `json:"expr"`
			LegendFormat string `json:"legendFormat"`
			RefID        string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// queryResultRE matches Grafana's query_result(query) variable query.
var queryResultRE = regexp.MustCompile(`^query_result\((.*)\)$`)

func dashboardQueries(t *testing.T, cfg dashboards.Config) []dashQuery {
	t.Helper()
	files, err := dashboards.Generate(cfg)
	require.NoError(t, err)
	var out []dashQuery
	n := 0
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".json") {
			continue
		}
		n++
		var d grafanaJSON
		require.NoError(t, json.Unmarshal(f.Data, &d), f.Path)
		for _, p := range d.Panels {
			if p.Type == "row" {
				continue
			}
			require.NotEmpty(t, p.Targets, "%s: panel %q has no query", d.UID, p.Title)
			for _, tg := range p.Targets {
				out = append(out, dashQuery{
					where: fmt.Sprintf("%s panel %q %s", d.UID, p.Title, tg.RefID),
					expr:  tg.Expr, legend: tg.LegendFormat, panel: true,
				})
			}
		}
		for _, a := range d.Annotations.List {
			out = append(out, dashQuery{where: fmt.Sprintf("%s annotation %q", d.UID, a.Name), expr: a.Expr})
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, ok := v.Query.(string)
			require.True(t, ok, "%s variable %s: query is %T", d.UID, v.Name, v.Query)
			if m := queryResultRE.FindStringSubmatch(q); m != nil {
				require.Equal(t, "name", v.Name, "%s: only the name variable is a query_result()", d.UID)
				out = append(out, dashQuery{where: fmt.Sprintf("%s variable %s", d.UID, v.Name), expr: m[1]})
				continue
			}
			m := labelValuesRE.FindStringSubmatch(q)
			require.NotNil(t, m, "%s variable %s: %q is not label_values(selector, label)", d.UID, v.Name, q)
			require.Equal(t, v.Name, m[2], "%s variable %s lists another label", d.UID, v.Name)
			out = append(out, dashQuery{where: fmt.Sprintf("%s variable %s", d.UID, v.Name), expr: m[1]})
		}
	}
	require.Equal(t, 2, n, "Overview and Dependency")
	return out
}

// scrapeLabels are added by Prometheus to every series.
var scrapeLabels = []string{"job", "instance"}

// selected is a vector selector resolved against the catalog.
type selected struct {
	metric catalog.Metric
	series string
}

// checker checks parsed queries against the catalog under one namespace.
type checker struct {
	t           *testing.T
	ns          string
	extraLabels []string // labels of the configured extra selector
	seen        map[string]bool
}

// resolve returns the catalog metrics a selector selects: by name, or by a __name__ regex that
// is an alternation of catalog series.
func (c *checker) resolve(where string, vs *parser.VectorSelector) []selected {
	var names []string
	if vs.Name != "" {
		names = []string{vs.Name}
	} else {
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName {
				continue
			}
			switch m.Type {
			case labels.MatchEqual:
				names = []string{m.Value}
			case labels.MatchRegexp:
				names = strings.Split(m.Value, "|")
			default:
				c.t.Errorf("%s: negative __name__ matcher %s", where, m)
			}
		}
	}
	require.NotEmpty(c.t, names, "%s: selector %s names no metric", where, vs)
	var out []selected
	for _, n := range names {
		m, ok := catalog.Lookup(c.ns, n)
		if !assert.True(c.t, ok, "%s: %s is not a catalog series under namespace %q", where, n, c.ns) {
			continue
		}
		out = append(out, selected{metric: m, series: n})
	}
	return out
}

// labelsOf are the label names a series of the metric carries.
func (c *checker) labelsOf(s selected) []string {
	ls := append(append(s.metric.LabelNames(), scrapeLabels...), c.extraLabels...)
	if s.metric.Type == catalog.Histogram && strings.HasSuffix(s.series, "_bucket") {
		ls = append(ls, "le")
	}
	return ls
}

func (c *checker) checkSelector(where string, vs *parser.VectorSelector) []string {
	var avail []string
	for _, s := range c.resolve(where, vs) {
		c.seen[s.metric.FullName(c.ns)] = true
		own := c.labelsOf(s)
		avail = append(avail, own...)
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName {
				continue
			}
			assert.Contains(c.t, own, m.Name, "%s: %s has no label %q", where, s.series, m.Name)
			l, ok := s.metric.Label(m.Name)
			if !ok || l.Values == nil {
				continue
			}
			// Values matched on a closed-set label must be in the set: a typo selects nothing.
			switch m.Type {
			case labels.MatchEqual, labels.MatchNotEqual:
				assert.Contains(c.t, l.Values, m.Value, "%s: %s", where, m)
			case labels.MatchRegexp, labels.MatchNotRegexp:
				if !strings.ContainsAny(m.Value, ".*+?()[]{}\\^$") {
					for _, v := range strings.Split(m.Value, "|") {
						assert.Contains(c.t, l.Values, v, "%s: %s", where, m)
					}
				}
			}
		}
	}
	return avail
}

// check parses q and checks every selector, range, function argument and grouping in it.
func (c *checker) check(p parser.Parser, q dashQuery) {
	expr, err := p.ParseExpr(substitute(q.expr))
	if !assert.NoError(c.t, err, "%s: %q", q.where, q.expr) {
		return
	}
	// Labels available under each node, for by() clauses.
	var avail func(n parser.Node) []string
	avail = func(n parser.Node) []string {
		var out []string
		parser.Inspect(n, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				for _, s := range c.resolve(q.where, vs) {
					out = append(out, c.labelsOf(s)...)
				}
			}
			return nil
		})
		return out
	}
	var outer []string // grouping labels of the outermost aggregation(s)
	nSel := 0
	parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			nSel++
			c.checkSelector(q.where, n)
		case *parser.MatrixSelector:
			assert.Equal(c.t, rateWindow, n.Range, "%s: range %s is not $__rate_interval", q.where, n.Range)
		case *parser.Call:
			switch n.Func.Name {
			case "rate", "increase", "irate":
				ms := n.Args[0].(*parser.MatrixSelector)
				for _, s := range c.resolve(q.where, ms.VectorSelector.(*parser.VectorSelector)) {
					ok := s.metric.Type == catalog.Counter || s.metric.Type == catalog.Histogram
					assert.True(c.t, ok, "%s: %s() over %s, a %s", q.where, n.Func.Name, s.series, s.metric.Type)
				}
			case "histogram_quantile":
				agg, ok := n.Args[1].(*parser.AggregateExpr)
				if assert.True(c.t, ok, "%s: histogram_quantile over an aggregation", q.where) {
					// Over classic buckets it keeps le; over native histograms there is none.
					classic := false
					parser.Inspect(agg.Expr, func(node parser.Node, _ []parser.Node) error {
						if vs, ok := node.(*parser.VectorSelector); ok {
							for _, s := range c.resolve(q.where, vs) {
								classic = classic || strings.HasSuffix(s.series, "_bucket")
							}
						}
						return nil
					})
					if classic {
						assert.Contains(c.t, agg.Grouping, "le", "%s: histogram_quantile keeps le", q.where)
					} else {
						assert.NotContains(c.t, agg.Grouping, "le", "%s: a native histogram has no le", q.where)
					}
				}
			}
		case *parser.AggregateExpr:
			assert.False(c.t, n.Without, "%s: without() hides which labels survive", q.where)
			have := avail(n.Expr)
			for _, g := range n.Grouping {
				assert.Contains(c.t, have, g, "%s: by (%s) names a label no selected series has", q.where, g)
			}
			if keepsLabels(n) {
				break // topk and bottomk select series, labels and all
			}
			inAgg := false
			for _, a := range path {
				if ae, ok := a.(*parser.AggregateExpr); ok && !keepsLabels(ae) {
					inAgg = true
				}
			}
			if !inAgg {
				outer = append(outer, n.Grouping...)
			}
		}
		return nil
	})
	assert.NotZero(c.t, nSel, "%s: no vector selector", q.where)
	// A legend may only name labels that survive the outermost aggregation.
	for _, m := range regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`).FindAllStringSubmatch(q.legend, -1) {
		assert.Contains(c.t, outer, m[1], "%s: legend {{%s}} names a label aggregated away", q.where, m[1])
	}
}

// keepsLabels reports whether an aggregation returns its input series with their labels.
func keepsLabels(n *parser.AggregateExpr) bool {
	return n.Op == parser.TOPK || n.Op == parser.BOTTOMK
}

func TestDashboardQueriesParseAndUseOnlyCatalogMetricsAndLabels(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, tc := range []struct {
		name        string
		cfg         dashboards.Config
		ns          string
		extraLabels []string
	}{
		{"default", dashboards.Config{}, catalog.DefaultNamespace, nil},
		{"namespace", dashboards.Config{Namespace: "acme"}, "acme", nil},
		{"no namespace", dashboards.Config{Namespace: rules.NoNamespace}, "", nil},
		{"selector", dashboards.Config{Selector: `cluster="eu-1", env!~"dev|test"`}, catalog.DefaultNamespace, []string{"cluster", "env"}},
		{"prefixes", dashboards.Config{TitlePrefix: "Shop", UIDPrefix: "shop", Provisioning: true}, catalog.DefaultNamespace, nil},
		{"classic histograms", dashboards.Config{Histograms: dashboards.ClassicHistograms}, catalog.DefaultNamespace, nil},
		{"group_by", dashboards.Config{GroupBy: []string{"cluster", "job"}, Selector: `env="prod"`}, catalog.DefaultNamespace, []string{"cluster", "env"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &checker{t: t, ns: tc.ns, extraLabels: tc.extraLabels, seen: map[string]bool{}}
			qs := dashboardQueries(t, tc.cfg)
			require.NotEmpty(t, qs)
			for _, q := range qs {
				c.check(p, q)
			}
		})
	}
}

func TestDashboardsShowEveryCatalogMetric(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	c := &checker{t: t, ns: catalog.DefaultNamespace, seen: map[string]bool{}}
	for _, q := range dashboardQueries(t, dashboards.Config{}) {
		if q.panel { // variables and annotations do not count: a metric must be on a panel
			c.check(p, q)
		}
	}
	// Exported only by a collector with full detail: no default panel depends on them.
	fullDetailOnly := map[string]bool{
		catalog.BreakerFailureRateThreshold.FullName(catalog.DefaultNamespace): true,
		catalog.BreakerOpenDuration.FullName(catalog.DefaultNamespace):         true,
		catalog.BulkheadWaiting.FullName(catalog.DefaultNamespace):             true,
		// Housekeeping of idle eviction (off by default): no panel yet.
		catalog.RegistryEvicted.FullName(catalog.DefaultNamespace): true,
	}
	for _, m := range catalog.All() {
		assert.Equal(t, !fullDetailOnly[m.FullName(catalog.DefaultNamespace)], c.seen[m.FullName(catalog.DefaultNamespace)],
			"%s on a panel (every metric the default collector exports, and no other)", m.FullName(catalog.DefaultNamespace))
	}
}

func TestDashboardSelectorReachesEverySelector(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	const sel = `cluster="eu-1"`
	for _, q := range dashboardQueries(t, dashboards.Config{Selector: sel}) {
		expr, err := p.ParseExpr(substitute(q.expr))
		require.NoError(t, err, q.where)
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				assert.True(t, slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
					return m.Name == "cluster" && m.Type == labels.MatchEqual && m.Value == "eu-1"
				}), "%s: %s lacks the configured selector", q.where, vs)
			}
			return nil
		})
	}
}

func TestSubstituteLeavesNoGrafanaSyntax(t *testing.T) {
	got := substitute(`rate(x{a=~"$job", b="${name}", c="${instance:regex}"}[$__rate_interval]) / $__range_s + $__interval_ms`)
	assert.Equal(t, `rate(x{a=~"value", b="value", c="value"}[5m]) / 3600 + 60000`, got)
	_, err := parser.NewParser(parser.Options{}).ParseExpr(substitute(`rate(x[$job])`))
	assert.Error(t, err, "a variable outside a label value does not parse")
}

// Synthetic scrape of one process with one primitive of every kind called "checkout", its
// breaker open since t=600s: every series of the catalog, every closed label value.
const (
	evalJob      = "app"
	evalInstance = "app-1:9464"
	evalName     = "checkout"
	evalTripped  = 600 // tripped_since, Unix seconds
	evalAt       = 20 * time.Minute
)

// combos returns every combination of the closed-set label values of m (the name label and the
// overflow counter's primitive label included), as matcher lists.
func combos(m catalog.Metric) [][]string {
	out := [][]string{{`job="` + evalJob + `"`, `instance="` + evalInstance + `"`}}
	for _, l := range m.Labels {
		values := l.Values
		if l.Name == catalog.LabelName {
			values = []string{evalName}
		}
		var next [][]string
		for _, c := range out {
			for _, v := range values {
				next = append(next, append(append([]string{}, c...), l.Name+`="`+v+`"`))
			}
		}
		out = next
	}
	return out
}

// gaugeValue is the constant value of a gauge series in the synthetic scrape.
func gaugeValue(m catalog.Metric, ls []string) float64 {
	switch m.FullName(catalog.DefaultNamespace) {
	case catalog.BreakerState.FullName(catalog.DefaultNamespace):
		if slicesContains(ls, catalog.LabelState+`="`+catalog.StateOpen.String()+`"`) {
			return 1
		}
		return 0
	case catalog.BreakerTrippedSince.FullName(catalog.DefaultNamespace):
		return evalTripped
	case catalog.BreakerFailureRate.FullName(catalog.DefaultNamespace), catalog.BreakerSlowCallRate.FullName(catalog.DefaultNamespace):
		return 0.6
	case catalog.BreakerFailureRateThreshold.FullName(catalog.DefaultNamespace), catalog.BreakerSlowCallRateThreshold.FullName(catalog.DefaultNamespace):
		return 0.5
	}
	return 4
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// syntheticSeries is the synthetic scrape, one sample a minute from 0 to 30m: counters grow by
// 1 a minute, histograms observe one value per bucket a minute, gauges hold gaugeValue.
func syntheticSeries(form histForm) []storage.Series {
	var out []storage.Series
	add := func(name string, ls []string, f func(minute int) float64) {
		b := labels.NewScratchBuilder(len(ls) + 2)
		b.Add(labels.MetricName, name)
		for _, l := range ls {
			k, v, _ := strings.Cut(l, "=")
			b.Add(k, strings.Trim(v, `"`))
		}
		b.Sort()
		var samples []chunks.Sample
		for m := 0; m <= 30; m++ {
			samples = append(samples, floatSample{t: int64(m) * time.Minute.Milliseconds(), f: f(m)})
		}
		out = append(out, storage.NewListSeries(b.Labels(), samples))
	}
	perMinute := func(n int) func(int) float64 { return func(m int) float64 { return float64(n * m) } }
	addNative := func(name string, ls []string, perMin int) {
		b := labels.NewScratchBuilder(len(ls) + 1)
		b.Add(labels.MetricName, name)
		for _, l := range ls {
			k, v, _ := strings.Cut(l, "=")
			b.Add(k, strings.Trim(v, `"`))
		}
		b.Sort()
		var samples []chunks.Sample
		for m := 0; m <= 30; m++ {
			n := uint64(m * perMin)
			h := &histogram.Histogram{
				Schema: catalog.NativeSchema, ZeroThreshold: catalog.NativeZeroThreshold, Count: n, Sum: observed * float64(n),
				PositiveSpans: []histogram.Span{{Offset: -13, Length: 1}}, PositiveBuckets: []int64{int64(n)}, // (0.088, 0.1]
			}
			samples = append(samples, histogramSample{t: int64(m) * time.Minute.Milliseconds(), h: h.ToFloat(nil)})
		}
		out = append(out, storage.NewListSeries(b.Labels(), samples))
	}
	for _, m := range catalog.All() {
		name := m.FullName(catalog.DefaultNamespace)
		for _, ls := range combos(m) {
			switch m.Type {
			case catalog.Counter:
				add(name, ls, perMinute(1))
			case catalog.Gauge:
				v := gaugeValue(m, ls)
				add(name, ls, func(int) float64 { return v })
			case catalog.Histogram:
				// One observation a minute (a wait per admission decision) of `observed` seconds: as the native histogram (one
				// series of the metric's own name, the observation in one bucket) and as the
				// classic buckets of the collector's default exposition (+Inf, _sum and _count
				// only, for a histogram without default bounds).
				perMin := 1
				if m.Name == catalog.BulkheadWaitDuration.Name {
					perMin = len(catalog.Admissions) // one wait per admission decision
				}
				if form != histClassic {
					addNative(name, ls, perMin)
				}
				if form == histNative {
					continue
				}
				for _, le := range append(append([]float64{}, catalog.DefaultBuckets(m)...), math.Inf(1)) {
					n := 0
					if observed <= le {
						n = perMin
					}
					add(name+"_bucket", append(append([]string{}, ls...), `le="`+formatLe(le)+`"`), perMinute(n))
				}
				add(name+"_count", ls, perMinute(perMin))
				add(name+"_sum", ls, func(m int) float64 { return observed * float64(m*perMin) })
			}
		}
	}
	return out
}

// histForm is the form in which a synthetic scrape holds the histograms.
type histForm int

const (
	histBoth    histForm = iota // native histograms and classic buckets
	histClassic                 // classic buckets: a Prometheus with its default configuration, VictoriaMetrics
	histNative                  // native histograms: a Prometheus with scrape_native_histograms
)

func (f histForm) String() string {
	return [...]string{"both forms", "classic buckets", "native histograms"}[f]
}

// observed is the one observation a minute of every synthetic histogram: in the native bucket
// (2^(-14/4), 2^(-13/4)] ≈ (0.088, 0.105] s.
const observed = 0.1

// floatSample is a float sample for storage.NewListSeries.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                      { return s.t }
func (s floatSample) ST() int64                     { return 0 }
func (s floatSample) F() float64                    { return s.f }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }

// histogramSample is a native histogram sample for storage.NewListSeries.
type histogramSample struct {
	t int64
	h *histogram.FloatHistogram
}

func (s histogramSample) T() int64                      { return s.t }
func (s histogramSample) ST() int64                     { return 0 }
func (s histogramSample) F() float64                    { return 0 }
func (s histogramSample) H() *histogram.Histogram       { return nil }
func (s histogramSample) FH() *histogram.FloatHistogram { return s.h }
func (s histogramSample) Type() chunkenc.ValueType      { return chunkenc.ValFloatHistogram }
func (s histogramSample) Copy() chunks.Sample           { return histogramSample{s.t, s.h.Copy()} }

// memStorage is an in-memory storage.Queryable over a fixed set of series.
type memStorage struct{ series []storage.Series }

func (s memStorage) Querier(int64, int64) (storage.Querier, error) { return s, nil }

func (s memStorage) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
	for _, series := range s.series {
		ls := series.Labels()
		if slices.IndexFunc(ms, func(m *labels.Matcher) bool { return !m.Matches(ls.Get(m.Name)) }) < 0 {
			out = append(out, series)
		}
	}
	slices.SortFunc(out, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &seriesSet{series: out, i: -1}
}

func (s memStorage) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (s memStorage) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (s memStorage) Close() error { return nil }

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// forEvaluation substitutes Grafana's macros, "All" for the multi-value variables and the one
// name for the single-value name variable.
func forEvaluation(expr string) string {
	for _, s := range grafanaSubstitutions {
		expr = strings.ReplaceAll(expr, s.macro, s.value)
	}
	for _, v := range []string{"job", "instance", "name"} {
		expr = strings.ReplaceAll(expr, `=~"$`+v+`"`, `=~".*"`)
	}
	return strings.ReplaceAll(expr, `="$name"`, `="`+evalName+`"`)
}

// TestDashboardQueriesReturnData evaluates every query of the default dashboards with the
// Prometheus engine against a synthetic scrape holding every catalog series: each returns data
// (no vector-matching mistake silently empties a panel), and the key numbers are right.
func TestDashboardQueriesReturnData(t *testing.T) {
	for _, form := range []histForm{histBoth, histClassic, histNative} {
		t.Run(form.String(), func(t *testing.T) { testDashboardQueriesReturnData(t, form) })
	}
}

// testDashboardQueriesReturnData is TestDashboardQueriesReturnData with the histograms stored
// in the given form.
func testDashboardQueriesReturnData(t *testing.T, form histForm) {
	store := memStorage{series: syntheticSeries(form)}
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples:    1_000_000,
		Timeout:       10 * time.Second,
		LookbackDelta: 5 * time.Minute,
		Parser:        parser.NewParser(parser.Options{}),
	})
	t.Cleanup(func() { require.NoError(t, engine.Close()) })
	eval := func(expr string) promql.Vector {
		t.Helper()
		q, err := engine.NewInstantQuery(context.Background(), store, nil, expr, time.Unix(0, 0).Add(evalAt))
		require.NoError(t, err, expr)
		defer q.Close()
		res := q.Exec(context.Background())
		require.NoError(t, res.Err, expr)
		v, err := res.Vector()
		require.NoError(t, err, expr)
		return v
	}
	// The dashboards generated for the one form the server stores return data too.
	only := map[histForm]dashboards.Histograms{histClassic: dashboards.ClassicHistograms, histNative: dashboards.NativeHistograms}
	if h, ok := only[form]; ok {
		for _, q := range dashboardQueries(t, dashboards.Config{Histograms: h}) {
			expr := forEvaluation(q.expr)
			v := eval(expr)
			assert.NotEmpty(t, v, "histograms: %s: %s returns no data: %s", h, q.where, expr)
		}
	}
	byWhere := map[string]promql.Vector{}
	for _, q := range dashboardQueries(t, dashboards.Config{}) {
		expr := forEvaluation(q.expr)
		_, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
		require.NoError(t, err, q.where)
		v := eval(expr)
		assert.NotEmpty(t, v, "%s returns no data: %s", q.where, expr)
		for _, s := range v {
			assert.False(t, math.IsNaN(s.F) || math.IsInf(s.F, 0), "%s: %v", q.where, s)
		}
		byWhere[q.where] = v
	}
	one := func(where string) float64 {
		t.Helper()
		v, ok := byWhere[where]
		require.True(t, ok, "no query %s", where)
		require.Len(t, v, 1, where)
		return v[0].F
	}
	// The state timeline encodes open as its index in catalog.States.
	assert.Equal(t, float64(slicesIndex(catalog.Names(catalog.States[:]), catalog.StateOpen.String())), one(`stormwatch-overview panel "Breaker state" A`))
	assert.Equal(t, 1.0, one(`stormwatch-overview panel "Dependencies with a breaker open" A`))
	// The "who is hurting" table: one row for the one dependency, in every column.
	assert.Equal(t, 2.0, one(`stormwatch-overview panel "Who is hurting" A`), "open ranks 2")
	assert.InDelta(t, evalAt.Seconds()-evalTripped, one(`stormwatch-overview panel "Who is hurting" B`), 1e-9)
	assert.InDelta(t, 1.0/float64(len(catalog.CallKinds)+1), one(`stormwatch-overview panel "Who is hurting" C`), 1e-9)
	assert.InDelta(t, 1.0/float64(len(catalog.RetryKinds)), one(`stormwatch-overview panel "Who is hurting" D`), 1e-9)
	assert.InDelta(t, 1.0/60, one(`stormwatch-overview panel "Who is hurting" E`), 1e-9)
	assert.InDelta(t, float64(len(catalog.Causes))/60, one(`stormwatch-overview panel "Who is hurting" F`), 1e-9)
	assert.NotEmpty(t, byWhere[`stormwatch-overview panel "Who is hurting" B`][0].Metric.Get(catalog.LabelCause), "the trip cause is a column")
	// Retry rate = rate(attempts) / rate(calls): 1 attempt a minute over 5 call kinds a minute.
	assert.InDelta(t, 1.0/float64(len(catalog.RetryKinds)), one(`stormwatch-overview panel "Worst retry rate" A`), 1e-9)
	// Rejection ratios.
	assert.InDelta(t, 1.0/float64(len(catalog.Admissions)), one(`stormwatch-overview panel "Worst bulkhead rejections" A`), 1e-9)
	assert.InDelta(t, 1.0/float64(len(catalog.CallKinds)+1), one(`stormwatch-overview panel "Breaker rejection ratio" A`), 1e-9)
	assert.InDelta(t, 1.0/float64(len(catalog.TimeoutKinds)), one(`stormwatch-overview panel "Timed-out ratio" A`), 1e-9)
	// Rescue rate: successful_with_retry / (successful_with_retry + failed_with_retry).
	assert.InDelta(t, 0.5, one(`stormwatch-overview panel "Rescue rate" A`), 1e-9)
	// Time since the trip.
	// Time since the trip, per trip cause (the synthetic scrape has a series of every cause).
	require.Len(t, byWhere[`stormwatch-overview panel "Time since trip" A`], len(catalog.TripCauses))
	for _, s := range byWhere[`stormwatch-overview panel "Time since trip" A`] {
		assert.InDelta(t, evalAt.Seconds()-evalTripped, s.F, 1e-9)
	}
	assert.InDelta(t, evalAt.Seconds()-evalTripped, one(`stormwatch-dependency panel "Longest not-closed episode" A`), 1e-9)
	// Bulkhead utilisation: in-flight 4 of max 4.
	assert.InDelta(t, 1.0, one(`stormwatch-dependency panel "Bulkhead utilisation" A`), 1e-9)
	// Every retry outcome, error class, fallback cause and transition has its own series.
	assert.Len(t, byWhere[`stormwatch-overview panel "Retry outcomes" A`], len(catalog.RetryKinds))
	assert.Len(t, byWhere[`stormwatch-overview panel "Failed attempts by error class" A`], len(catalog.Classes))
	assert.Len(t, byWhere[`stormwatch-overview panel "Fallbacks by cause" A`], len(catalog.Causes))
	assert.Len(t, byWhere[`stormwatch-overview panel "Backoff delays by source" A`], len(catalog.Names(catalog.DelaySources[:])))
	// The mean backoff delay is the one observation, whichever form is stored.
	for _, s := range byWhere[`stormwatch-overview panel "Backoff delays by source" A`] {
		assert.InDelta(t, observed, s.F, 1e-9, "mean backoff")
	}
	// Callers waiting (Little's law): the wait per second — one observation of 0.1 s per
	// admission decision, one decision of each kind a minute — whichever form is stored.
	require.NotEmpty(t, byWhere[`stormwatch-dependency panel "Waiting callers" A`])
	for _, s := range byWhere[`stormwatch-dependency panel "Waiting callers" A`] {
		assert.InDelta(t, observed*float64(len(catalog.Admissions))/60, s.F, 1e-9, "callers waiting: %v", s)
	}
	// The mean wait for a permit is the one observation, whichever form is stored.
	require.NotEmpty(t, byWhere[`stormwatch-overview panel "Wait for a permit" A`])
	for _, s := range byWhere[`stormwatch-overview panel "Wait for a permit" A`] {
		assert.InDelta(t, observed, s.F, 1e-9, "mean wait")
	}
	// Quantiles: of the native histograms, in the observation's native bucket
	// (2^(-14/4), 2^(-13/4)]; of the default classic buckets (a factor 8 apart), in the classic
	// bucket that holds it, (1/32, 1/4].
	lo, hi := math.Exp2(-14.0/4), math.Exp2(-13.0/4)
	if form != histNative { // the classic side of `or` first
		lo, hi = 1.0/32, 1.0/4
	}
	for _, where := range []string{`stormwatch-overview panel "Call latency" A`} {
		require.NotEmpty(t, byWhere[where], where)
		for _, s := range byWhere[where] {
			assert.True(t, s.F > lo && s.F <= hi, "%s: %v not in (%v, %v]", where, s, lo, hi)
		}
	}
}

func slicesIndex(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// FuzzDashboardSelector: whatever extra selector dashboards.Generate accepts is a PromQL
// selector, and every generated query still parses with the real PromQL parser and carries the
// selector's matchers, as the dashboards render them.
func FuzzDashboardSelector(f *testing.F) {
	for _, s := range []string{
		`job="checkout"`, `a='it\'s', b=~"x|y",`, "a=~`\\d+`", `a!~"(a|b)+", b!=""`,
		`a="\q"`, `a=~"("`, `{a="b"}`, `a="\u00e9\x41\101"`, `A!~"(A|$A)0",A=""`, `A!~")0(0"`, `a='it\"0'`,
	} {
		f.Add(s)
	}
	p := parser.NewParser(parser.Options{})
	f.Fuzz(func(t *testing.T, sel string) {
		files, err := dashboards.Generate(dashboards.Config{Selector: sel})
		if err != nil {
			return // rejected: fine, the check may be stricter than PromQL
		}
		_, err = promqlSelector(sel)
		require.NoError(t, err, "accepted selector %q is not a PromQL selector", sel)
		ms, err := selector.Parse("dashboards", sel)
		require.NoError(t, err, "selector %q", sel)
		want, err := p.ParseMetricSelector(substitute("{" + ms.String() + "}")) // "$x" in a value reads as a variable
		require.NoError(t, err, "selector %q", sel)
		for _, file := range files {
			var d grafanaJSON
			require.NoError(t, json.Unmarshal(file.Data, &d))
			for _, panel := range d.Panels {
				for _, tg := range panel.Targets {
					expr, err := p.ParseExpr(substitute(tg.Expr))
					require.NoError(t, err, "selector %q: %s", sel, tg.Expr)
					parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
						if vs, ok := node.(*parser.VectorSelector); ok {
							for _, w := range want {
								require.True(t, slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
									return m.Name == w.Name && m.Type == w.Type && m.Value == w.Value
								}), "selector %q: %s lacks %s", sel, vs, w)
							}
						}
						return nil
					})
				}
			}
		}
	})
}
