package rules

import (
	"slices"
	"strconv"
	"strings"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// This file holds the small PromQL builders the rules are written with. Every metric name
// comes from the catalog; every vector selector gets the configured selector.

// name returns the full name of a catalog metric under the configured namespace.
func (r *resolved) name(m catalog.Metric) string { return m.FullName(r.ns) }

// sel renders a vector selector for series with the configured selector and the rule's own
// matchers appended.
func (r *resolved) sel(series string, own ...selector.Matcher) string {
	return selector.Vector(series, append(slices.Clone(r.matchers), own...)...)
}

// eq is a rule's own equality matcher.
func eq(label, value string) selector.Matcher {
	return selector.Matcher{Name: label, Type: selector.MatchEqual, Value: value}
}

// re is a rule's own regular-expression matcher over a closed set of values (catalog words,
// which hold no regular-expression metacharacters).
func re(label string, values ...string) selector.Matcher {
	return selector.Matcher{Name: label, Type: selector.MatchRegexp, Value: strings.Join(values, "|")}
}

// labels returns the aggregation labels, plus instance for per-process expressions, plus
// extra.
func (r *resolved) labels(perInstance bool, extra ...string) []string {
	out := slices.Clone(r.groupBy)
	if perInstance {
		out = append(out, labelInstance)
	}
	return append(out, extra...)
}

// by renders an aggregation's label list.
func (r *resolved) by(perInstance bool, extra ...string) string {
	return strings.Join(r.labels(perInstance, extra...), ", ")
}

// recorded names a recording rule's output: level:metric:operations, where level is the
// aggregation labels joined by underscores and metric is the catalog metric's full name
// without _total (or a derived name under the same primitive).
func (r *resolved) recorded(extraLevel []string, p catalog.Primitive, metric, ops string) string {
	level := strings.Join(r.labels(false, extraLevel...), "_")
	return level + ":" + catalog.Metric{Primitive: p, Name: metric}.FullName(r.ns) + ":" + ops
}

// rateName is the metric part of a recorded rate of a counter: its name without _total.
func rateName(m catalog.Metric) string { return strings.TrimSuffix(m.Name, "_total") }

// window renders the configured rate window in PromQL duration syntax ("5m").
func (r *resolved) window() string { return FormatDuration(r.rateWindow) }

// rangeOf renders a range selector over the rate window: series[5m].
func (r *resolved) rangeOf(series string) string { return series + "[" + r.window() + "]" }

// rateOp is the operations part of a recorded rate's name: rate5m for the default window.
func (r *resolved) rateOp() string { return "rate" + r.window() }

// Recorded series the alerts use.
func (r *resolved) recBreakerCalls() string {
	return r.recorded(nil, catalog.CircuitBreaker, rateName(catalog.BreakerCalls), r.rateOp())
}

func (r *resolved) recBreakerNotPermitted() string {
	return r.recorded(nil, catalog.CircuitBreaker, rateName(catalog.BreakerNotPermitted), r.rateOp())
}

func (r *resolved) recBreakerRejectionRatio() string {
	return r.recorded(nil, catalog.CircuitBreaker, "not_permitted_per_attempted_calls", "ratio_"+r.rateOp())
}

func (r *resolved) recRetryCallsByKind() string {
	return r.recorded([]string{catalog.LabelKind}, catalog.Retry, rateName(catalog.RetryCalls), r.rateOp())
}

func (r *resolved) recRetryAttempts() string {
	return r.recorded(nil, catalog.Retry, rateName(catalog.RetryAttempts), r.rateOp())
}

func (r *resolved) recRetryRate() string {
	return r.recorded(nil, catalog.Retry, "attempts_per_call", "ratio_"+r.rateOp())
}

func (r *resolved) recRescueRate() string {
	return r.recorded(nil, catalog.Retry, "rescued_per_retried_call", "ratio_"+r.rateOp())
}

func (r *resolved) recBulkheadCallsByKind() string {
	return r.recorded([]string{catalog.LabelKind}, catalog.Bulkhead, rateName(catalog.BulkheadCalls), r.rateOp())
}

func (r *resolved) recBulkheadRejectionRatio() string {
	return r.recorded(nil, catalog.Bulkhead, "rejected_per_call", "ratio_"+r.rateOp())
}

func (r *resolved) recFallbacksByCause() string {
	return r.recorded([]string{catalog.LabelCause}, catalog.Fallback, rateName(catalog.FallbackCalls), r.rateOp())
}

// recordingRules are the rules of the stormwatch-recording group, dependencies first.
func (r *resolved) recordingRules() []Rule {
	by := r.by(false)
	byKind := r.by(false, catalog.LabelKind)
	byCause := r.by(false, catalog.LabelCause)
	rate := func(m catalog.Metric, own ...selector.Matcher) string {
		return "rate(" + r.rangeOf(r.sel(r.name(m), own...)) + ")"
	}
	return []Rule{
		{Record: r.recBreakerCalls(), Expr: "sum by (" + by + ") (" + rate(catalog.BreakerCalls) + ")"},
		{Record: r.recBreakerNotPermitted(), Expr: "sum by (" + by + ") (" + rate(catalog.BreakerNotPermitted) + ")"},
		{Record: r.recBreakerRejectionRatio(), Expr: r.sel(r.recBreakerNotPermitted()) + "\n/\n(" +
			r.sel(r.recBreakerCalls()) + " + " + r.sel(r.recBreakerNotPermitted()) + ")"},
		{Record: r.recRetryCallsByKind(), Expr: "sum by (" + byKind + ") (" + rate(catalog.RetryCalls) + ")"},
		{Record: r.recRetryAttempts(), Expr: "sum by (" + by + ") (" + rate(catalog.RetryAttempts) + ")"},
		{Record: r.recRetryRate(), Expr: r.sel(r.recRetryAttempts()) + "\n/\nsum by (" + by + ") (" + r.sel(r.recRetryCallsByKind()) + ")"},
		{Record: r.recRescueRate(), Expr: "sum by (" + by + ") (" + r.sel(r.recRetryCallsByKind(), eq(catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String())) + ")\n/\n" +
			"sum by (" + by + ") (" + r.sel(r.recRetryCallsByKind(), re(catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String(), catalog.RetryFailedWithRetry.String())) + ")"},
		{Record: r.recBulkheadCallsByKind(), Expr: "sum by (" + byKind + ") (" + rate(catalog.BulkheadCalls) + ")"},
		{Record: r.recBulkheadRejectionRatio(), Expr: "sum by (" + by + ") (" + r.sel(r.recBulkheadCallsByKind(), eq(catalog.LabelKind, catalog.AdmissionRejected.String())) + ")\n/\n" +
			"sum by (" + by + ") (" + r.sel(r.recBulkheadCallsByKind()) + ")"},
		{Record: r.recFallbacksByCause(), Expr: "sum by (" + byCause + ") (" + rate(catalog.FallbackCalls) + ")"},
		{Record: r.recBreakerTrips(), Expr: "sum by (" + r.by(true) + ") (increase(" +
			r.sel(r.name(catalog.BreakerTransitions), eq(catalog.LabelFrom, catalog.StateClosed.String()), eq(catalog.LabelTo, catalog.StateOpen.String())) +
			"[" + FormatDuration(flappingWindow) + "]))"},
	}
}

// last renders last_over_time(series[rate window]): a gauge's latest sample within the rate
// window. Prometheus marks every series of a target stale when a scrape fails, so a gauge read
// as it is vanishes for one evaluation and restarts the for of the alerts on it; read through
// last_over_time it survives missed scrapes (the rate window holds several), and a target that
// disappears for good leaves the alerts within one rate window.
func (r *resolved) last(series string) string { return "last_over_time(" + r.rangeOf(series) + ")" }

// labelSel renders a vector selector of series for a query inside an alert template: one
// `label=%q` per output label of the alert (queryTemplate fills them in from $labels), then
// the configured selector, its % signs doubled for printf.
func (r *resolved) labelSel(perInstance bool, series string) string {
	var parts []string
	for _, l := range r.labels(perInstance) {
		parts = append(parts, l+"=%q")
	}
	for _, m := range r.matchers {
		parts = append(parts, strings.ReplaceAll(m.String(), "%", "%%"))
	}
	return series + "{" + strings.Join(parts, ", ") + "}"
}

// queryTemplate renders alert template text that runs query (built with labelSel for the
// same perInstance) for the alert's own labels and expands body with the result as dot, or
// elseText when the query returns nothing.
func (r *resolved) queryTemplate(query string, perInstance bool, body, elseText string) string {
	var args strings.Builder
	for _, l := range r.labels(perInstance) {
		args.WriteString(" $labels." + l)
	}
	return "{{ with printf " + strconv.Quote(query) + args.String() + " | query }}" + body + "{{ else }}" + elseText + "{{ end }}"
}

// recBreakerTrips is the recorded number of trips (closed → open) per process over the
// flapping window.
func (r *resolved) recBreakerTrips() string {
	return r.recorded([]string{labelInstance}, catalog.CircuitBreaker, "trips", "increase"+FormatDuration(flappingWindow))
}
