package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// limitRow draws the adaptive limiters and the client-side throttles: where the limit is and
// why (latency against the baseline), what it refuses, and what the throttle sheds.
func (v view) limitRow() rowBuilder {
	q := v.q
	return row(600, "Adaptive limits and throttles",
		graph{
			id:    601,
			title: "Limit vs in-flight",
			description: "The adaptive concurrency limit, the calls holding a permit, the callers queued and the " +
				"configured minimum (dashed red). In-flight pressed against the limit means the limiter is the " +
				"bottleneck; a limit lying on the minimum means the dependency is slow at any concurrency.",
			unit:   units.Short,
			width:  half,
			dashed: []string{refID(3)},
			targets: []target{
				{expr: maxBy(v.inst, q.sel(catalog.LimiterLimit)), legend: v.instLegend + " limit"},
				{expr: maxBy(v.inst, q.sel(catalog.LimiterInflight)), legend: v.instLegend + " in flight"},
				{expr: maxBy(v.inst, q.sel(catalog.LimiterQueued)), legend: v.instLegend + " queued"},
				{expr: maxBy(v.inst, q.sel(catalog.LimiterMinLimit)), legend: v.instLegend + " min"},
			},
		}.build(),
		graph{
			id:    602,
			title: "Latency vs baseline",
			description: "Average latency of the limiter's last window against its no-load baseline. The limit " +
				"shrinks when the sample rises well above the baseline; a baseline that climbs means the " +
				"dependency became slower under light load.",
			unit:  units.Seconds,
			width: half,
			targets: []target{
				{expr: maxBy(v.inst, q.sel(catalog.LimiterSampleLatency)), legend: v.instLegend + " sample"},
				{expr: maxBy(v.inst, q.sel(catalog.LimiterBaselineLatency)), legend: v.instLegend + " baseline"},
			},
		}.build(),
		graph{
			id:          603,
			title:       "Limiter rejection ratio",
			description: "Share of admission decisions that rejected the call: rejected / all decisions.",
			unit:        units.PercentUnit,
			width:       third,
			ratio:       true,
			targets: []target{{
				expr:   ratio(sumBy(v.agg, q.rate(catalog.LimiterCalls, eq(catalog.LabelKind, catalog.AdmissionRejected.String()))), sumBy(v.agg, q.rate(catalog.LimiterCalls))),
				legend: v.aggLegend,
			}},
		}.build(),
		graph{
			id:          604,
			title:       "Limiter rejections by reason",
			description: "Calls rejected per second: limit reached without a queue, queue full, queue wait timed out, caller's deadline.",
			unit:        units.OpsPerSecond,
			width:       third,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelReason), q.rate(catalog.LimiterRejections)),
				legend: legendWith(v.aggLegend, catalog.LabelReason),
			}},
		}.build(),
		graph{
			id:          605,
			title:       "What admitted calls taught the limiter",
			description: "Admitted calls per second: measured latency, dropped (timed out or refused as overloaded: shrinks the limit), ignored (the caller left).",
			unit:        units.OpsPerSecond,
			width:       third,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelKind), q.rate(catalog.LimiterSamples)),
				legend: legendWith(v.aggLegend, catalog.LabelKind),
			}},
		}.build(),
		graph{
			id:    606,
			title: "Throttle shedding probability",
			description: "Client-side throttle: the probability with which a new request is shed locally, " +
				"max(0, (requests − K·accepts)/(requests + 1)) over its window. Above 0 the dependency accepts less than 1/K of the requests.",
			unit:    units.PercentUnit,
			width:   half,
			ratio:   true,
			targets: []target{{expr: maxBy(v.inst, q.sel(catalog.ThrottleProbability)), legend: v.instLegend}},
		}.build(),
		graph{
			id:          607,
			title:       "Throttle outcomes",
			description: "Requests per second accepted or refused by the dependency, and shed locally (throttled).",
			unit:        units.OpsPerSecond,
			width:       half,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelKind), q.rate(catalog.ThrottleCalls)),
				legend: legendWith(v.aggLegend, catalog.LabelKind),
			}},
		}.build(),
	)
}
