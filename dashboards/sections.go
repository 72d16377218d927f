package dashboards

import (
	"strconv"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// view says how a dashboard groups its series: per dependency (Overview) or per process of one
// dependency (Dependency).
type view struct {
	q promql
	// agg groups rates and ratios; aggLegend names one such series.
	agg       []string
	aggLegend string
	// inst groups per-process gauges (state, window rates, in-flight); instLegend names one.
	inst       []string
	instLegend string
}

// with returns labels followed by extra.
func with(labels []string, extra ...string) []string {
	return append(append([]string{}, labels...), extra...)
}

// legendWith appends {{label}} to a legend.
func legendWith(legend, label string) string { return legend + " {{" + label + "}}" }

// stateColors colours every breaker state of the catalog in the state timeline.
var stateColors = map[string]string{
	catalog.StateClosed.String():      colorGreen,
	catalog.StateOpen.String():        colorRed,
	catalog.StateHalfOpen.String():    colorYellow,
	catalog.StateForcedOpen.String():  colorDarkRed,
	catalog.StateDisabled.String():    colorGrey,
	catalog.StateMetricsOnly.String(): colorBlue,
}

// stateCode encodes the effective breaker state as its index in catalog.Names(catalog.States[:])
// (closed = 0): one term per state, index × (the state's gauge == 1), joined by or — exactly one
// term survives per breaker, and states the collector does not export (forced_open, disabled,
// metrics_only until first visited) simply contribute no term.
func (v view) stateCode() string {
	var terms []string
	for i, s := range catalog.Names(catalog.States[:]) {
		terms = append(terms, strconv.Itoa(i)+" * ("+maxBy(v.inst, v.q.sel(catalog.BreakerState, eq(catalog.LabelState, s)))+" == 1)")
	}
	return strings.Join(terms, "\nor ")
}

// stateMapping maps state codes back to state names and colours.
func stateMapping() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{valueText(catalog.Names(catalog.States[:]), stateColors, 0)}
}

// quantileTargets draws the 50th, 95th and 99th percentile of histogram m.
func (v view) quantileTargets(m catalog.Metric, by []string, legend string, phis ...string) []target {
	var ts []target
	for _, phi := range phis {
		ts = append(ts, target{
			expr:   v.q.quantile(phi, m, by),
			legend: legend + " p" + percentile(phi),
		})
	}
	return ts
}

// percentile turns "0.95" into "95".
func percentile(phi string) string {
	if len(phi) > 2 && phi[:2] == "0." {
		p := phi[2:]
		if len(p) == 1 {
			p += "0"
		}
		return p
	}
	return phi
}

// rowBuilder is one dashboard row and the panels below it.
type rowBuilder struct {
	row    *dashboard.RowBuilder
	panels []cog.Builder[dashboard.Panel]
}

func row(id uint32, title string, panels ...cog.Builder[dashboard.Panel]) rowBuilder {
	return rowBuilder{row: dashboard.NewRowBuilder(title).Id(id), panels: panels}
}

func (v view) breakerRow(r resolved, links bool, depUID string) rowBuilder {
	q := v.q
	tl := timeline{
		id:    101,
		title: "Breaker state",
		description: "Effective state of every circuit breaker (the state gauge). Green is closed; red open; yellow " +
			"half-open (probing); dark red forced open by an operator; grey disabled; blue metrics-only.",
		targets:  []target{{expr: v.stateCode(), legend: v.instLegend}},
		mappings: stateMapping(),
		height:   graphHeight,
	}
	if links {
		tl.links = dependencyLink(r, depUID)
	}
	return row(100, "Circuit breakers",
		tl.build(),
		graph{
			id:    102,
			title: "Trips",
			description: "Transitions into open within each $__rate_interval window, by the state the breaker left " +
				"(closed: a fresh trip; half_open: a failed probe).",
			unit:  units.Short,
			width: third,
			bars:  true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelFrom), q.increase(catalog.BreakerTransitions, eq(catalog.LabelTo, catalog.StateOpen.String()))),
				legend: legendWith(v.aggLegend, catalog.LabelFrom) + " → " + catalog.StateOpen.String(),
			}},
		}.build(),
		graph{
			id:          103,
			title:       "Not-permitted calls",
			description: "Calls the breaker rejected without calling the dependency, per second.",
			unit:        units.OpsPerSecond,
			width:       third,
			targets:     []target{{expr: sumBy(v.agg, q.rate(catalog.BreakerNotPermitted)), legend: v.aggLegend}},
		}.build(),
		graph{
			id:    104,
			title: "Breaker rejection ratio",
			description: "Share of calls the breaker rejected: not-permitted / (permitted + not-permitted). " +
				"This is the user impact of an open breaker.",
			unit:  units.PercentUnit,
			width: third,
			ratio: true,
			targets: []target{{
				expr: ratio(sumBy(v.agg, q.rate(catalog.BreakerNotPermitted)),
					sumBy(v.agg, q.rate(catalog.BreakerCalls))+" + "+sumBy(v.agg, q.rate(catalog.BreakerNotPermitted))),
				legend: v.aggLegend,
			}},
		}.build(),
		graph{
			id:          105,
			title:       "Permitted calls by outcome",
			description: "Calls the breaker let through, per second, by outcome (slow calls exceeded the slow-call duration threshold).",
			unit:        units.OpsPerSecond,
			width:       half,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelKind), q.rate(catalog.BreakerCalls)),
				legend: legendWith(v.aggLegend, catalog.LabelKind),
			}},
		}.build(),
		graph{
			id:          106,
			title:       "Call latency",
			description: "50th, 95th and 99th percentile duration of permitted calls, from the call duration histogram.",
			unit:        units.Seconds,
			width:       half,
			targets:     v.quantileTargets(catalog.BreakerCallDuration, v.agg, v.aggLegend, "0.5", "0.95", "0.99"),
		}.build(),
		graph{
			id:    107,
			title: "Failure rate",
			description: "Failure ratio in each breaker's sliding window (gaps: fewer calls than the minimum, and while " +
				"open: the window starts afresh). The breaker trips when it reaches the configured failure-rate threshold " +
				"(50% by default; the threshold itself is exported only by a collector with full detail).",
			unit:  units.PercentUnit,
			width: half,
			ratio: true,
			targets: []target{
				{expr: maxBy(v.inst, q.sel(catalog.BreakerFailureRate)), legend: v.instLegend},
			},
		}.build(),
		graph{
			id:    108,
			title: "Slow-call rate vs threshold",
			description: "Slow-call ratio in each breaker's sliding window against the configured slow-call-rate " +
				"threshold (dashed red). A rising slow-call rate is the earliest sign of a degrading dependency.",
			unit:   units.PercentUnit,
			width:  half,
			ratio:  true,
			dashed: []string{refID(1)},
			targets: []target{
				{expr: maxBy(v.inst, q.sel(catalog.BreakerSlowCallRate)), legend: v.instLegend},
				{expr: maxBy(v.agg, q.sel(catalog.BreakerSlowCallRateThreshold)), legend: v.aggLegend + " threshold"},
			},
		}.build(),
		graph{
			id:    109,
			title: "Time since trip",
			description: "How long each not-closed breaker has been in its current episode (from the tripped-since " +
				"timestamp), labelled with the cause of the trip that began it. Far above the breaker's open duration means " +
				"probes keep failing: the dependency is still down. Cause slow_call_rate: the dependency answers, but too " +
				"slowly — look at the call latency.",
			unit:  units.Seconds,
			width: half,
			targets: []target{
				{expr: "time() - " + maxBy(with(v.inst, catalog.LabelCause), q.sel(catalog.BreakerTrippedSince)+" > 0"), legend: legendWith(v.instLegend, catalog.LabelCause)},
			},
		}.build(),
		graph{
			id:          110,
			title:       "State transitions",
			description: "All committed state transitions within each $__rate_interval window, by source and target state.",
			unit:        units.Short,
			width:       half,
			bars:        true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelFrom, catalog.LabelTo), q.increase(catalog.BreakerTransitions)),
				legend: legendWith(v.aggLegend, catalog.LabelFrom) + " → {{" + catalog.LabelTo + "}}",
			}},
		}.build(),
	)
}

func (v view) retryRow() rowBuilder {
	q := v.q
	callsWithRetry := q.rate(catalog.RetryCalls, oneOf(catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String(), catalog.RetryFailedWithRetry.String()))
	return row(200, "Retries",
		graph{
			id:    201,
			title: "Retry rate",
			description: "Extra attempts per logical call: rate(attempts) / rate(calls). 10% means one call in ten " +
				"needed a retry, or fewer calls needed several; sustained values above 5% deserve attention.",
			unit:  units.PercentUnit,
			width: third,
			targets: []target{{
				expr:   ratio(sumBy(v.agg, q.rate(catalog.RetryAttempts)), sumBy(v.agg, q.rate(catalog.RetryCalls))),
				legend: v.aggLegend,
			}},
		}.build(),
		graph{
			id:    202,
			title: "Rescue rate",
			description: "Share of retried calls that finally succeeded: successful_with_retry / (successful_with_retry + " +
				"failed_with_retry). Low values mean retries are hammering a persistent fault.",
			unit:  units.PercentUnit,
			width: third,
			ratio: true,
			targets: []target{{
				expr:   ratio(sumBy(v.agg, q.rate(catalog.RetryCalls, eq(catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()))), sumBy(v.agg, callsWithRetry)),
				legend: v.aggLegend,
			}},
		}.build(),
		graph{
			id:          203,
			title:       "Retry outcomes",
			description: "Logical calls through a retry, per second, by final outcome.",
			unit:        units.OpsPerSecond,
			width:       third,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelKind), q.rate(catalog.RetryCalls)),
				legend: legendWith(v.aggLegend, catalog.LabelKind),
			}},
		}.build(),
		graph{
			id:          204,
			title:       "Failed attempts by error class",
			description: "Failed attempts per second by failure class (connection refused, 5xx, 429, timeout, …).",
			unit:        units.OpsPerSecond,
			width:       half,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelClass), q.rate(catalog.RetryErrors)),
				legend: legendWith(v.aggLegend, catalog.LabelClass),
			}},
		}.build(),
		graph{
			id:    205,
			title: "Backoff delays by source",
			description: "Mean delay actually waited before a retry, by what set it: the backoff policy or the " +
				"server's Retry-After.",
			unit:  units.Seconds,
			width: half,
			targets: []target{{
				expr:   q.mean(catalog.RetryBackoff, with(v.agg, catalog.LabelSource)),
				legend: legendWith(v.aggLegend, catalog.LabelSource) + " mean",
			}},
		}.build(),
		graph{
			id:    206,
			title: "Retry budget tokens",
			description: "Tokens left in each retry budget. At zero, retries are refused until successful calls " +
				"refill it: the budget is containing a retry storm.",
			unit:    units.Short,
			width:   half,
			targets: []target{{expr: maxBy(v.inst, q.sel(catalog.RetryBudgetTokens)), legend: v.instLegend}},
		}.build(),
		graph{
			id:          207,
			title:       "Retry budget denials",
			description: "Retries refused by the retry budget, per second.",
			unit:        units.OpsPerSecond,
			width:       half,
			targets:     []target{{expr: sumBy(v.agg, q.rate(catalog.RetryBudgetDenied)), legend: v.aggLegend}},
		}.build(),
	)
}

func (v view) bulkheadRow() rowBuilder {
	q := v.q
	return row(300, "Bulkheads",
		graph{
			id:    301,
			title: "In-flight vs max concurrent calls",
			description: "Bulkhead permits in use against the configured maximum (dashed red). Lines pressed against " +
				"the maximum mean callers queue or are rejected.",
			unit:   units.Short,
			width:  half,
			dashed: []string{refID(1)},
			targets: []target{
				{expr: maxBy(v.inst, q.sel(catalog.BulkheadInflight)), legend: v.instLegend},
				{expr: maxBy(v.inst, q.sel(catalog.BulkheadMaxConcurrent)), legend: v.instLegend + " max"},
			},
		}.build(),
		graph{
			id:    302,
			title: "Waiting callers",
			description: "Average number of callers waiting for a bulkhead permit over $__rate_interval: the time waited " +
				"per second, from the wait histogram (Little's law) — unlike a scrape-time sample, it misses no burst.",
			unit:  units.Short,
			width: half,
			targets: []target{{
				// Every admission decision is one observation of the wait histogram.
				expr:   q.sumRate(catalog.BulkheadWaitDuration, v.inst, catalog.BulkheadCalls),
				legend: v.instLegend,
			}},
		}.build(),
		graph{
			id:          303,
			title:       "Bulkhead rejection ratio",
			description: "Share of admission decisions that rejected the call: rejected / (permitted + rejected).",
			unit:        units.PercentUnit,
			width:       third,
			ratio:       true,
			targets: []target{{
				expr:   ratio(sumBy(v.agg, q.rate(catalog.BulkheadCalls, eq(catalog.LabelKind, catalog.AdmissionRejected.String()))), sumBy(v.agg, q.rate(catalog.BulkheadCalls))),
				legend: v.aggLegend,
			}},
		}.build(),
		graph{
			id:          304,
			title:       "Admission decisions",
			description: "Bulkhead admission decisions per second.",
			unit:        units.OpsPerSecond,
			width:       third,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelKind), q.rate(catalog.BulkheadCalls)),
				legend: legendWith(v.aggLegend, catalog.LabelKind),
			}},
		}.build(),
		graph{
			id:    305,
			title: "Wait for a permit",
			description: "Mean time callers waited for a bulkhead permit, admitted or not, from the wait histogram's " +
				"sum and count (which every store has: waits carry no classic buckets by default).",
			unit:  units.Seconds,
			width: third,
			targets: []target{{
				expr:   q.mean(catalog.BulkheadWaitDuration, v.agg),
				legend: v.aggLegend + " mean",
			}},
		}.build(),
	)
}

func (v view) fallbackRow() rowBuilder {
	q := v.q
	return row(400, "Fallbacks",
		graph{
			id:          401,
			title:       "Fallbacks by cause",
			description: "Fallback invocations per second by why the primary path was abandoned. Sustained fallbacks mean the service is running degraded.",
			unit:        units.OpsPerSecond,
			width:       half,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelCause), q.rate(catalog.FallbackCalls)),
				legend: legendWith(v.aggLegend, catalog.LabelCause),
			}},
		}.build(),
		graph{
			id:          402,
			title:       "Fallbacks",
			description: "Fallback invocations per second.",
			unit:        units.OpsPerSecond,
			width:       half,
			targets:     []target{{expr: sumBy(v.agg, q.rate(catalog.FallbackCalls)), legend: v.aggLegend}},
		}.build(),
	)
}

func (v view) timeoutRow() rowBuilder {
	q := v.q
	return row(500, "Timeouts",
		graph{
			id:          501,
			title:       "Attempts under a time limit by outcome",
			description: "Attempts run under a time limit, per second, by outcome.",
			unit:        units.OpsPerSecond,
			width:       half,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelKind), q.rate(catalog.TimeoutCalls)),
				legend: legendWith(v.aggLegend, catalog.LabelKind),
			}},
		}.build(),
		graph{
			id:          502,
			title:       "Timed-out ratio",
			description: "Share of attempts that hit their time limit.",
			unit:        units.PercentUnit,
			width:       half,
			ratio:       true,
			targets: []target{{
				expr:   ratio(sumBy(v.agg, q.rate(catalog.TimeoutCalls, eq(catalog.LabelKind, catalog.TimeoutTimedOut.String()))), sumBy(v.agg, q.rate(catalog.TimeoutCalls))),
				legend: v.aggLegend,
			}},
		}.build(),
	)
}
