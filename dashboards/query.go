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

// promql writes the PromQL of one dashboard over catalog metrics. Every vector selector it
// writes carries the dashboard's variable matchers and the configured extra selector.
type promql struct {
	ns       string
	selector selector.Matchers
	// nameMatcher filters the `name` label: a regex match for multi-value variables, an exact
	// match for single-value ones.
	nameMatcher selector.Matcher
	// hist is the form in which the histograms are stored.
	hist histForm
}

// histForm is the form in which Prometheus stores the latency histograms, for the queries.
type histForm int

const (
	// histEither: whichever the server stored, classic buckets (a Prometheus without native
	// histogram ingestion, VictoriaMetrics) or native histograms (ingestion on): each histogram
	// query is the classic one `or` the native one. The classic series (m_bucket, m_sum,
	// m_count) and the native one (m) have different names, so at most one side selects data
	// for a given target, and a fleet that mixes both gets the union.
	histEither  histForm = iota
	histNative           // native histograms only (one series each)
	histClassic          // classic buckets only (_bucket, _sum, _count series)
)

func newPromQL(r resolved, singleName bool) promql {
	q := promql{ns: r.ns, selector: r.selector, nameMatcher: variable(catalog.LabelName, varName)}
	switch {
	case r.classic:
		q.hist = histClassic
	case r.native:
		q.hist = histNative
	}
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

// quantile is the phi quantile of histogram m, aggregated over the by labels: of classic
// buckets, histogram_quantile(φ, sum by (by, le) (rate(m_bucket[w]))); of native histograms,
// histogram_quantile(φ, sum by (by) (rate(m[w]))); of either, the first `or` the second.
func (q promql) quantile(phi string, m catalog.Metric, by []string, matchers ...selector.Matcher) string {
	classic := "histogram_quantile(" + phi + ", " +
		sumBy(append(append([]string{}, by...), "le"), "rate("+q.bucket(m, matchers...)+rateWindow+")") + ")"
	native := "histogram_quantile(" + phi + ", " + sumBy(by, q.rate(m, matchers...)) + ")"
	return q.either(classic, native)
}

// mean is the mean observation of histogram m over the rate window, aggregated over the by
// labels: of classic buckets sum(rate(m_sum)) / sum(rate(m_count)), of native histograms
// histogram_avg(sum(rate(m))); empty while nothing was observed.
func (q promql) mean(m catalog.Metric, by []string, matchers ...selector.Matcher) string {
	classic := ratio(sumBy(by, q.rateOf(m, "_sum", matchers...)), sumBy(by, q.rateOf(m, "_count", matchers...)))
	native := "histogram_avg(" + sumBy(by, q.rate(m, matchers...)) + ")"
	return q.either(classic, native)
}

// sumRate is the per-second increase of histogram m's sum of observations, aggregated over the
// by labels: of classic buckets sum(rate(m_sum[w])); of native histograms
// histogram_sum(sum(rate(m[w]))). Of a duration histogram it is the average number of
// observations in progress (Little's law): of the bulkhead's wait histogram, the average number
// of callers waiting.
//
// Of either form, the native side is histogram_avg(sum(rate(m[w]))) * sum(rate(observations[w])),
// observations being a counter of m's observations (empty while it is 0): VictoriaMetrics'
// MetricsQL, which must parse every query, has histogram_avg but neither histogram_sum nor
// histogram_count.
func (q promql) sumRate(m catalog.Metric, by []string, observations catalog.Metric, matchers ...selector.Matcher) string {
	classic := sumBy(by, q.rateOf(m, "_sum", matchers...))
	switch q.hist {
	case histClassic:
		return classic
	case histNative:
		return "histogram_sum(" + sumBy(by, q.rate(m, matchers...)) + ")"
	}
	return classic + " or histogram_avg(" + sumBy(by, q.rate(m, matchers...)) + ") * (" +
		sumBy(by, q.rate(observations, matchers...)) + " > 0)"
}

// rateOf is rate() of histogram m's series with the given suffix (_bucket, _sum, _count).
func (q promql) rateOf(m catalog.Metric, suffix string, matchers ...selector.Matcher) string {
	return "rate(" + q.series(m, histogramSeries(m, q.ns, suffix), matchers...) + rateWindow + ")"
}

// either is the query of the histogram form in use: classic, native, or classic `or` native.
func (q promql) either(classic, native string) string {
	switch q.hist {
	case histClassic:
		return classic
	case histNative:
		return native
	}
	return classic + " or " + native
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

// anchor selects the registry's overflow counter, which every process exporting the catalog
// exports for every primitive kind from the start (at 0): the job, instance and group_by
// variables list their values from the label index of this one metric, cheap on a large TSDB
// (no regular expression over __name__).
func (q promql) anchor(matchers ...selector.Matcher) string {
	ms := append(append([]selector.Matcher{}, matchers...), q.selector...)
	return selector.Vector(catalog.RegistryOverflow.FullName(q.ns), ms...)
}

// nameAnchors are one series of every named primitive, each always exported (from 0) with
// the primitive's name: a breaker's rejections, a retry's attempts, a bulkhead's permits, a
// timeout's timed-out attempts, a fallback's invocations of cause error.
var nameAnchors = []struct {
	m        catalog.Metric
	matchers []selector.Matcher
}{
	{catalog.BreakerNotPermitted, nil},
	{catalog.RetryAttempts, nil},
	{catalog.BulkheadMaxConcurrent, nil},
	{catalog.TimeoutCalls, []selector.Matcher{eq(catalog.LabelKind, catalog.TimeoutTimedOut.String())}},
	{catalog.FallbackCalls, []selector.Matcher{eq(catalog.LabelCause, catalog.CauseError.String())}},
}

// names is the instant query behind the name variable: the names of every primitive, one
// series per name, from one series of each primitive kind selected by its metric name
// (nameAnchors) and the matchers.
func (q promql) names(matchers ...selector.Matcher) string {
	var parts []string
	for _, a := range nameAnchors {
		ms := append(append(append([]selector.Matcher{}, a.matchers...), matchers...), q.selector...)
		parts = append(parts, selector.Vector(a.m.FullName(q.ns), ms...))
	}
	return "count by (" + catalog.LabelName + ") (" + strings.Join(parts, " or ") + ")"
}

// queryResult is Grafana's query_result(query) variable query; nameRegex extracts the value of
// the name label from each of its lines.
func queryResult(query string) string { return "query_result(" + query + ")" }

// nameRegex extracts the name label's value from a query_result() line.
const nameRegex = `/` + catalog.LabelName + `="([^"]+)"/`

// labelValues is Grafana's label_values(selector, label) variable query.
func labelValues(selector, label string) string {
	return "label_values(" + selector + ", " + label + ")"
}
