package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// hedgeRow draws hedged requests: the extra load hedging adds, whether hedges win (wasted load
// when they rarely do), the budget's refusals and the delay in use.
func (v view) hedgeRow() rowBuilder {
	q := v.q
	started := func() string {
		return sumBy(v.agg, q.rate(catalog.HedgeAttempts, ne(catalog.LabelOutcome, catalog.HedgeBudgetDenied.String())))
	}
	return row(700, "Hedged requests",
		graph{
			id:    701,
			title: "Extra load from hedging",
			description: "Hedges that ran per call: (won + lost + cancelled) / calls. The load hedging adds to the " +
				"dependency; about 1 − the delay's quantile when the delay follows the latency.",
			unit:  units.PercentUnit,
			width: half,
			ratio: true,
			targets: []target{{
				expr:   ratio(started(), sumBy(v.agg, q.rate(catalog.HedgeCalls))),
				legend: v.aggLegend,
			}},
		}.build(),
		graph{
			id:    704,
			title: "Hedge win ratio",
			description: "Share of the hedges that ran whose answer was the call's: won / (won + lost + cancelled). " +
				"Low means hedging adds load for nothing: the slow calls are slow whatever attempt serves them, or the delay is too short.",
			unit:  units.PercentUnit,
			width: half,
			ratio: true,
			targets: []target{{
				expr:   ratio(sumBy(v.agg, q.rate(catalog.HedgeAttempts, eq(catalog.LabelOutcome, catalog.HedgeWon.String()))), started()),
				legend: v.aggLegend,
			}},
		}.build(),
		graph{
			id:          702,
			title:       "Hedges by outcome",
			description: "Hedges per second: won (their answer was the call's), lost (failed), cancelled (another attempt won first), budget_denied (refused by the budget shared with retries; never ran).",
			unit:        units.OpsPerSecond,
			width:       half,
			stacked:     true,
			targets: []target{{
				expr:   sumBy(with(v.agg, catalog.LabelOutcome), q.rate(catalog.HedgeAttempts)),
				legend: legendWith(v.aggLegend, catalog.LabelOutcome),
			}},
		}.build(),
		graph{
			id:          703,
			title:       "Hedge delay",
			description: "The delay after which a call is hedged: fixed, or a recent quantile of first-attempt latencies (0 while it warms up).",
			unit:        units.Seconds,
			width:       half,
			targets:     []target{{expr: maxBy(v.inst, q.sel(catalog.HedgeDelay)), legend: v.instLegend}},
		}.build(),
	)
}
