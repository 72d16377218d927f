package dashboards

import (
	"strings"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// Grafana template variables and macros used in the queries.
const (
	varDatasource = "datasource"
	varJob        = "job"
	varInstance   = "instance"
	varName       = "name"

	// rateWindow is Grafana's range for rate(): at least four scrape intervals.
	rateWindow = "[$__rate_interval]"
)

// Target labels added by Prometheus at scrape time; every series carries them.
const (
	labelJob      = "job"
	labelInstance = "instance"
)

// labelMetricName is the label holding a series' metric name.
const labelMetricName = "__name__"

// promql writes the PromQL of one dashboard over catalog metrics. Every vector selector it
// writes carries the dashboard's variable matchers and the configured extra selector.
type promql struct {
	ns       string
	selector selector.Matchers
	// nameMatcher filters the `name` label: a regex match for multi-value variables, an exact
	// match for single-value ones.
	nameMatcher selector.Matcher
	// classic: the histograms are stored as classic buckets (_bucket, _sum, _count series);
	// otherwise as native histograms (one series each).
	classic bool
}

func newPromQL(r resolved, singleName bool) promql {
	q := promql{ns: r.ns, selector: r.selector, nameMatcher: variable(catalog.LabelName, varName), classic: r.classic}
	if singleName {
		q.nameMatcher = eq(catalog.LabelName, "$"+varName)
	}
	return q
}

// eq is the matcher label="value".
func eq(label, value string) selector.Matcher {
	return selector.Matcher{Name: label, Type: selector.MatchEqual, Value: value}
}

// ne is the matcher label!="value".
func ne(label, value string) selector.Matcher {
	return selector.Matcher{Name: label, Type: selector.MatchNotEqual, Value: value}
}

// oneOf is the matcher label=~"v1|v2|…" (values are catalog words: no regex escaping needed).
func oneOf(label string, values ...string) selector.Matcher {
	return selector.Matcher{Name: label, Type: selector.MatchRegexp, Value: strings.Join(values, "|")}
}

// variable is the matcher label=~"$variable" of a multi-value Grafana variable.
func variable(label, varName string) selector.Matcher { return oneOf(label, "$"+varName) }

// series returns the selector of series seriesName (a catalog metric's full name, or its
// _bucket/_sum/_count series) of metric m, with matchers first, then the dashboard's.
func (q promql) series(m catalog.Metric, seriesName string, matchers ...selector.Matcher) string {
	ms := make([]selector.Matcher, 0, len(matchers)+3+len(q.selector))
	ms = append(ms, matchers...)
	ms = append(ms, variable(labelJob, varJob), variable(labelInstance, varInstance))
	if _, ok := m.Label(catalog.LabelName); ok {
		ms = append(ms, q.nameMatcher)
	}
	ms = append(ms, q.selector...)
	return selector.Vector(seriesName, ms...)
}

// sel selects a counter or gauge.
func (q promql) sel(m catalog.Metric, matchers ...selector.Matcher) string {
	return q.series(m, m.FullName(q.ns), matchers...)
}

// bucket selects a histogram's _bucket series.
func (q promql) bucket(m catalog.Metric, matchers ...selector.Matcher) string {
	return q.series(m, histogramSeries(m, q.ns, "_bucket"), matchers...)
}

// histogramSeries returns the series of histogram m whose name ends in suffix, as the catalog
// lists it.
func histogramSeries(m catalog.Metric, ns, suffix string) string {
	for _, s := range m.SeriesNames(ns) {
		if strings.HasSuffix(s, suffix) {
			return s
		}
	}
	return m.FullName(ns) + suffix // not reached: every catalog histogram lists all three series
}

// rate is rate(sel[$__rate_interval]).
func (q promql) rate(m catalog.Metric, matchers ...selector.Matcher) string {
	return "rate(" + q.sel(m, matchers...) + rateWindow + ")"
}

// increase is increase(sel[$__rate_interval]).
func (q promql) increase(m catalog.Metric, matchers ...selector.Matcher) string {
	return "increase(" + q.sel(m, matchers...) + rateWindow + ")"
}

// quantile is the phi quantile of histogram m, aggregated over the by labels: of the native
// histograms, histogram_quantile(φ, sum by (by) (rate(m[w]))); of classic buckets,
// histogram_quantile(φ, sum by (by, le) (rate(m_bucket[w]))).
func (q promql) quantile(phi string, m catalog.Metric, by []string, matchers ...selector.Matcher) string {
	if !q.classic {
		inner := "rate(" + q.sel(m, matchers...) + rateWindow + ")"
		return "histogram_quantile(" + phi + ", " + sumBy(by, inner) + ")"
	}
	inner := "rate(" + q.bucket(m, matchers...) + rateWindow + ")"
	return "histogram_quantile(" + phi + ", " + sumBy(append(append([]string{}, by...), "le"), inner) + ")"
}

// sumRate is the per-second increase of histogram m's sum of observations, per series: of a
// native histogram histogram_sum(rate(m[w])), of classic buckets rate(m_sum[w]). Of a duration
// histogram it is the average number of observations in progress (Little's law): of the
// bulkhead's wait histogram, the average number of callers waiting.
func (q promql) sumRate(m catalog.Metric, matchers ...selector.Matcher) string {
	if !q.classic {
		return "histogram_sum(rate(" + q.sel(m, matchers...) + rateWindow + "))"
	}
	return "rate(" + q.series(m, histogramSeries(m, q.ns, "_sum"), matchers...) + rateWindow + ")"
}

// sumBy is sum by (labels) (expr), or sum(expr) without labels.
func sumBy(by []string, expr string) string { return agg("sum", by, expr) }

// maxBy is max by (labels) (expr), or max(expr) without labels.
func maxBy(by []string, expr string) string { return agg("max", by, expr) }

func agg(op string, by []string, expr string) string {
	if len(by) == 0 {
		return op + "(" + expr + ")"
	}
	return op + " by (" + strings.Join(by, ", ") + ") (" + expr + ")"
}

// ratio is num / (den > 0): empty rather than NaN or +Inf while the denominator is zero.
func ratio(num, den string) string { return num + " / (" + den + " > 0)" }

// zero makes expr answer 0 rather than no data when it selects nothing.
func zero(expr string) string { return expr + " or vector(0)" }

// presence returns a selector matching every series the catalog exports under the namespace
// (histograms by their _count series), for label_values() in the variables. With withName,
// only metrics that carry the `name` label.
func (q promql) presence(withName bool, matchers ...selector.Matcher) string {
	var names []string
	for _, m := range catalog.All() {
		if _, ok := m.Label(catalog.LabelName); withName && !ok {
			continue
		}
		if m.Type == catalog.Histogram {
			names = append(names, histogramSeries(m, q.ns, "_count"))
		} else {
			names = append(names, m.FullName(q.ns))
		}
	}
	ms := append([]selector.Matcher{oneOf(labelMetricName, names...)}, matchers...)
	ms = append(ms, q.selector...)
	return "{" + selector.Matchers(ms).String() + "}"
}

// labelValues is Grafana's label_values(selector, label) variable query.
func labelValues(selector, label string) string {
	return "label_values(" + selector + ", " + label + ")"
}
