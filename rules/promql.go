package rules

import (
	"fmt"
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
// which hold no regular-expression metacharacters); over one value, an equality matcher (a
// regular expression matching one string is redundant: pint's promql/regexp).
func re(label string, values ...string) selector.Matcher {
	if len(values) == 1 {
		return eq(label, values[0])
	}
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

// Recorded series the alerts use. Only the first level of each primitive reads raw counters
// (one rate() per counter, two for the breaker's calls); every other rule and every alert
// builds on recorded series.
func (r *resolved) rec(extra []string, p catalog.Primitive, metric, ops string) string {
	return r.recorded(extra, p, metric, ops)
}

var kindLevel = []string{catalog.LabelKind}

func (r *resolved) recBreakerCallsByKind() string {
	return r.rec(kindLevel, catalog.CircuitBreaker, rateName(catalog.BreakerCalls), r.rateOp())
}
func (r *resolved) recBreakerCalls() string {
	return r.rec(nil, catalog.CircuitBreaker, rateName(catalog.BreakerCalls), r.rateOp())
}
func (r *resolved) recBreakerNotPermitted() string {
	return r.rec(nil, catalog.CircuitBreaker, rateName(catalog.BreakerNotPermitted), r.rateOp())
}
func (r *resolved) recBreakerRejectionRatio() string {
	return r.rec(nil, catalog.CircuitBreaker, "not_permitted_per_attempted_calls", "ratio_"+r.rateOp())
}
func (r *resolved) recRetryCallsByKind() string {
	return r.rec(kindLevel, catalog.Retry, rateName(catalog.RetryCalls), r.rateOp())
}
func (r *resolved) recRetryCalls() string {
	return r.rec(nil, catalog.Retry, rateName(catalog.RetryCalls), r.rateOp())
}
func (r *resolved) recRetryAttempts() string {
	return r.rec(nil, catalog.Retry, rateName(catalog.RetryAttempts), r.rateOp())
}
func (r *resolved) recBudgetDenied() string {
	return r.rec(nil, catalog.Retry, rateName(catalog.RetryBudgetDenied), r.rateOp())
}
func (r *resolved) recRetryRate() string {
	return r.rec(nil, catalog.Retry, "attempts_per_call", "ratio_"+r.rateOp())
}
func (r *resolved) recRescueRate() string {
	return r.rec(nil, catalog.Retry, "rescued_per_retried_call", "ratio_"+r.rateOp())
}
func (r *resolved) recBulkheadCallsByKind() string {
	return r.rec(kindLevel, catalog.Bulkhead, rateName(catalog.BulkheadCalls), r.rateOp())
}
func (r *resolved) recBulkheadRejectionRatio() string {
	return r.rec(nil, catalog.Bulkhead, "rejected_per_call", "ratio_"+r.rateOp())
}
func (r *resolved) recFallbacksByCause() string {
	return r.rec([]string{catalog.LabelCause}, catalog.Fallback, rateName(catalog.FallbackCalls), r.rateOp())
}
func (r *resolved) recFallbacks() string {
	return r.rec(nil, catalog.Fallback, rateName(catalog.FallbackCalls), r.rateOp())
}

// dependency is the pseudo-primitive of the recorded series about a dependency as its callers
// see it (whichever primitives guard it).
const dependency catalog.Primitive = "dependency"

func (r *resolved) recFailed() string {
	return r.rec(nil, dependency, "failed_calls", r.rateOp())
}
func (r *resolved) recCalls() string { return r.rec(nil, dependency, "calls", r.rateOp()) }
func (r *resolved) recUnrescued() string {
	return r.rec(nil, dependency, "unrescued_failed_calls", r.rateOp())
}
func (r *resolved) recUnrescuedRatio() string {
	return r.rec(nil, dependency, "unrescued_failed_per_call", "ratio_"+r.rateOp())
}

// recImpact is the recorded evidence, per process, that a breaker hurts callers: calls it
// rejected, or half-open probes that failed, within impactWindow (absent without any).
func (r *resolved) recImpact() string {
	return r.rec([]string{labelInstance}, catalog.CircuitBreaker, "rejected_or_failed_probes", "increase"+FormatDuration(impactWindow))
}

// recordingRules are the rules of the stormwatch-recording group, dependencies first.
//
// What costs Prometheus at fleet scale is a series read or written per dependency and cycle
// (a read decodes the series' head chunk: a rate() over a raw counter costs about what an
// instant read of a recorded series does), so the rules write and read as few series per
// dependency as the alerts' meaning allows. The rates of rare events (rejections, budget
// refusals, the callers' failures and what fallbacks did not rescue), the by-kind rates and
// the trips are recorded only where they are not zero, and the ratios only where the events
// they are about occur (the rescue ratio is 0 where retried calls were not rescued): every
// reader compares them above a positive threshold, or falls back to a zero built from a series
// recorded at zero too (the breaker's and the retry's calls, the retry's attempts, the
// callers' calls), so a healthy dependency costs six recorded series and no alert reads most
// of them. The breaker's total calls are a rate() of the raw counter (the by-kind rates may
// all be absent, and nothing of the breaker's is recorded at zero to fall back on).
func (r *resolved) recordingRules() []Rule {
	g, gi := r.by(false), r.by(true)
	sum := func(by, expr string) string { return "sum by (" + by + ") (" + expr + ")" }
	rate := func(by string, m catalog.Metric, own ...selector.Matcher) string {
		return sum(by, "rate("+r.rangeOf(r.sel(r.name(m), own...))+")")
	}
	kinds := func(rec string, ks ...fmt.Stringer) string {
		names := make([]string, len(ks))
		for i, k := range ks {
			names[i] = k.String()
		}
		return sum(g, r.sel(rec, re(catalog.LabelKind, names...)))
	}
	byKind, byCause := r.by(false, catalog.LabelKind), r.by(false, catalog.LabelCause)
	S := r.sel
	or := "\nor on (" + g + ")\n"
	zero := func(rec string) string { return S(rec) + " * 0" } // 0 wherever rec is recorded
	breakerFailed := kinds(r.recBreakerCallsByKind(), catalog.CallFailed, catalog.CallSlowFailed)
	np, cbCalls, rcCalls := S(r.recBreakerNotPermitted()), S(r.recBreakerCalls()), S(r.recRetryCalls())
	return []Rule{
		{Record: r.recBreakerNotPermitted(), Expr: rate(g, catalog.BreakerNotPermitted) + " > 0"},
		{Record: r.recBreakerCallsByKind(), Expr: rate(byKind, catalog.BreakerCalls) + " > 0"},
		{Record: r.recBreakerCalls(), Expr: rate(g, catalog.BreakerCalls)},
		{Record: r.recBreakerRejectionRatio(), Expr: np + "\n/\n(" + cbCalls + " + " + np + ")"},
		{Record: r.recRetryAttempts(), Expr: rate(g, catalog.RetryAttempts)},
		{Record: r.recRetryCallsByKind(), Expr: rate(byKind, catalog.RetryCalls) + " > 0"},
		{Record: r.recRetryCalls(), Expr: sum(g, S(r.recRetryCallsByKind())) + or + zero(r.recRetryAttempts())},
		{Record: r.recBudgetDenied(), Expr: rate(g, catalog.RetryBudgetDenied) + " > 0"},
		{Record: r.recRetryRate(), Expr: "(" + S(r.recRetryAttempts()) + " > 0)\n/\n" + rcCalls},
		{Record: r.recRescueRate(), Expr: "(\n  " + kinds(r.recRetryCallsByKind(), catalog.RetrySuccessfulWithRetry) + "\n  or on (" + g + ")\n  " +
			kinds(r.recRetryCallsByKind(), catalog.RetryFailedWithRetry) + " * 0\n)\n/\n" +
			kinds(r.recRetryCallsByKind(), catalog.RetrySuccessfulWithRetry, catalog.RetryFailedWithRetry)},
		{Record: r.recBulkheadCallsByKind(), Expr: rate(byKind, catalog.BulkheadCalls) + " > 0"},
		{Record: r.recBulkheadRejectionRatio(), Expr: kinds(r.recBulkheadCallsByKind(), catalog.AdmissionRejected) + "\n/\n" + sum(g, S(r.recBulkheadCallsByKind()))},
		{Record: r.recFallbacksByCause(), Expr: rate(byCause, catalog.FallbackCalls)},
		{Record: r.recFallbacks(), Expr: sum(g, S(r.recFallbacksByCause()))},
		// The callers' view: the retry's final outcomes where there is a retry, else the
		// breaker's failed and rejected calls.
		{Record: r.recFailed(), Expr: "(\n" + indent(kinds(r.recRetryCallsByKind(), catalog.RetryFailedWithoutRetry, catalog.RetryFailedWithRetry)+
			or+zero(r.recRetryCalls())+
			or+breakerFailed+" + on ("+g+") "+np+or+breakerFailed+or+np, "  ") + "\n) > 0"},
		{Record: r.recCalls(), Expr: rcCalls + or + cbCalls + " + on (" + g + ") " + np + or + cbCalls},
		{Record: r.recUnrescued(), Expr: "clamp_min(\n  " + S(r.recFailed()) + "\n  - on (" + g + ")\n  (" + S(r.recFallbacks()) + " or on (" + g + ") " + S(r.recFailed()) + " * 0),\n  0\n)"},
		{Record: r.recUnrescuedRatio(), Expr: S(r.recUnrescued()) + "\n/\n(" + S(r.recCalls()) + " > 0)"},
		{Record: r.recBreakerTrips(), Expr: sum(gi, "increase("+
			r.sel(r.name(catalog.BreakerTransitions), eq(catalog.LabelFrom, catalog.StateClosed.String()), eq(catalog.LabelTo, catalog.StateOpen.String()))+
			"["+FormatDuration(flappingWindow)+"])") + " > 0"},
		{Record: r.recImpact(), Expr: r.impactExpr(impactWindow)},
	}
}

// last renders last_over_time(series[gauge lookback]): a gauge's latest sample within three
// scrape intervals. Prometheus marks every series of a target stale when a scrape fails, so a
// gauge read as it is vanishes for one evaluation and restarts the for of the alerts on it;
// read through last_over_time it survives two missed scrapes in a row, and a target that
// disappears for good leaves the alerts within about two scrape intervals.
func (r *resolved) last(series string) string {
	return "last_over_time(" + series + "[" + FormatDuration(r.gaugeLookback) + "])"
}

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
