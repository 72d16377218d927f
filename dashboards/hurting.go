package dashboards

import (
	"encoding/json"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// breakerHurtStates are the states in which a breaker rejects calls: open and forced open (both
// "open" in the table) and half-open.
func breakerHurtStates() []string {
	return []string{catalog.StateOpen.String(), catalog.StateHalfOpen.String(), catalog.StateForcedOpen.String()}
}

// The worst breaker state of a dependency, as the table ranks it.
const (
	rankClosed   = 0 // closed, disabled or metrics-only on every instance
	rankHalfOpen = 1
	rankOpen     = 2 // open or forced open on some instance
)

// Column titles of the "who is hurting" table.
const (
	colBreaker   = "Breaker"
	colNotClosed = "Not closed for"
	colCause     = "Trip cause"
	colRejected  = "Rejected"
	colRetryRate = "Retry rate"
	colDenials   = "Budget denials"
	colFallbacks = "Fallbacks"
	colLimited   = "Limiter rejected"
)

// hurtingColumn is one value column of the table: a query returning one series per
// dependency.
type hurtingColumn struct {
	title string
	expr  string
	unit  string
	// labels are further label columns the query brings (the trip cause), renamed.
	labels map[string]string
	// overrides are further field settings.
	overrides []dashboard.DynamicConfigValue
}

// hurtingTable is the Overview's first panel: "who is hurting", one row per dependency (the
// group_by labels: job and name by default) with its worst breaker state, how long it has not
// been closed and why it tripped, its breaker rejection ratio, retry rate, budget denials and
// fallback rate; worst first; every row links to the dependency's Dependency dashboard.
func hurtingTable(r resolved, q promql, depUID string) *table.PanelBuilder {
	by := r.groupBy
	state := func(states ...string) string {
		return q.sel(catalog.BreakerState, oneOf(catalog.LabelState, states...))
	}
	cols := []hurtingColumn{
		{
			title: colBreaker,
			expr: maxBy(by, "2 * "+state(catalog.StateOpen.String(), catalog.StateForcedOpen.String())+
				" or "+state(catalog.StateHalfOpen.String())),
			unit: units.NoUnit,
			overrides: []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: generic([]dashboard.ValueMapping{valueText([]string{"closed", "half-open", "open"},
					map[string]string{"closed": colorGreen, "half-open": colorYellow, "open": colorRed}, rankClosed)})},
				{Id: "custom.cellOptions", Value: map[string]any{"type": string(common.TableCellDisplayModeColorBackground)}},
			},
		},
		{
			title: colNotClosed,
			// The oldest current episode of the dependency's breakers, and the cause of its trip.
			expr:   "time() - bottomk by (" + strings.Join(by, ", ") + ") (1, " + agg("min", with(by, catalog.LabelCause), q.sel(catalog.BreakerTrippedSince)+" > 0") + ")",
			unit:   units.Seconds,
			labels: map[string]string{catalog.LabelCause: colCause},
		},
		{
			title: colRejected,
			expr: ratio(sumBy(by, q.rate(catalog.BreakerNotPermitted)),
				sumBy(by, q.rate(catalog.BreakerCalls))+" + "+sumBy(by, q.rate(catalog.BreakerNotPermitted))),
			unit: units.PercentUnit,
			overrides: []dashboard.DynamicConfigValue{
				{Id: "thresholds", Value: thresholdsConfig(colorGreen, step{0.01, colorOrange}, step{0.1, colorRed})},
				{Id: "custom.cellOptions", Value: map[string]any{"type": string(common.TableCellDisplayModeColorText)}},
			},
		},
		{
			title: colRetryRate,
			expr:  ratio(sumBy(by, q.rate(catalog.RetryAttempts)), sumBy(by, q.rate(catalog.RetryCalls))),
			unit:  units.PercentUnit,
			overrides: []dashboard.DynamicConfigValue{
				{Id: "thresholds", Value: thresholdsConfig(colorGreen, step{0.05, colorOrange}, step{0.2, colorRed})},
				{Id: "custom.cellOptions", Value: map[string]any{"type": string(common.TableCellDisplayModeColorText)}},
			},
		},
		{
			title: colDenials,
			expr:  sumBy(by, q.rate(catalog.RetryBudgetDenied)),
			unit:  units.OpsPerSecond,
		},
		{
			title: colFallbacks,
			expr:  sumBy(by, q.rate(catalog.FallbackCalls)),
			unit:  units.OpsPerSecond,
		},
		{
			title: colLimited,
			expr: ratio(sumBy(by, q.rate(catalog.LimiterCalls, eq(catalog.LabelKind, catalog.AdmissionRejected.String()))),
				sumBy(by, q.rate(catalog.LimiterCalls))),
			unit: units.PercentUnit,
			overrides: []dashboard.DynamicConfigValue{
				{Id: "thresholds", Value: thresholdsConfig(colorGreen, step{0.01, colorOrange}, step{0.1, colorRed})},
				{Id: "custom.cellOptions", Value: map[string]any{"type": string(common.TableCellDisplayModeColorText)}},
			},
		},
	}

	targets := make([]cog.Builder[variants.Dataquery], len(cols))
	rename := map[string]string{}
	index := map[string]int{}
	exclude := map[string]bool{"Time": true}
	i := 0
	for _, l := range by {
		index[l] = i
		i++
	}
	for c, col := range cols {
		ref := refID(c)
		targets[c] = prometheus.NewDataqueryBuilder().
			Datasource(datasourceRef()).
			Expr(col.expr).
			LegendFormat("__auto").
			RefId(ref).
			Format(prometheus.PromQueryFormatTable).
			Instant()
		rename["Value #"+ref] = col.title
		index["Value #"+ref] = i
		i++
		for l, title := range col.labels {
			rename[l] = title
			index[l] = i
			i++
		}
	}
	b := table.NewPanelBuilder().
		Id(10).
		Title("Who is hurting").
		Description("One row per dependency (" + strings.Join(by, ", ") + "), worst first: open breakers, then half-open ones, " +
			"then by breaker rejection ratio and retry rate. " + colBreaker + ": the worst state across the instances (forced open counts as open; " +
			"disabled and metrics-only as closed). " + colNotClosed + ": since the oldest current trip; " + colCause + ": the cause of that trip " +
			"(slow_call_rate: the dependency answers, but too slowly). " + colRejected + ": calls the breaker rejected, of all calls. " +
			colRetryRate + ": extra attempts per logical call. " + colLimited + ": calls the adaptive concurrency limiter rejected, of its admission decisions. Rates over $__rate_interval. Click a row for the dependency's own dashboard.").
		Datasource(datasourceRef()).
		Targets(targets).
		Height(graphHeight).
		Span(gridWidth).
		Unit(units.Short).
		Transformations([]dashboard.DataTransformerConfig{
			{Id: "merge", Options: map[string]any{}},
			{Id: "organize", Options: map[string]any{"excludeByName": exclude, "indexByName": index, "renameByName": rename}},
		}).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			sortBy(colBreaker), sortBy(colRejected), sortBy(colRetryRate),
		}).
		ShowHeader(true).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}).CountRows(false)).
		DataLinks([]cog.Builder[dashboard.DashboardLink]{
			dashboard.NewDashboardLinkBuilder("Open ${__data.fields." + catalog.LabelName + "} in the Dependency dashboard").
				Type(dashboard.DashboardLinkTypeLink).
				Url(dependencyURL(r, depUID, func(l string) string { return "${__data.fields." + l + "}" })).
				Icon("dashboard").
				Tooltip("").
				Tags([]string{}),
		})
	for _, col := range cols {
		b = b.OverrideByName(col.title, append([]dashboard.DynamicConfigValue{{Id: "unit", Value: col.unit}}, col.overrides...))
	}
	return b
}

func sortBy(title string) cog.Builder[common.TableSortByFieldState] {
	return common.NewTableSortByFieldStateBuilder().DisplayName(title).Desc(true)
}

// thresholdsConfig is an absolute thresholds config for a field override.
func thresholdsConfig(base string, steps ...step) any {
	ts := []dashboard.Threshold{{Color: base}}
	for _, s := range steps {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return generic(dashboard.ThresholdsConfig{Mode: dashboard.ThresholdsModeAbsolute, Steps: ts})
}

// generic returns v as the JSON decoder returns it (maps, slices, float64s): what a field
// override's value decodes to, so that the dashboards round-trip byte for byte.
func generic(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic("dashboards: " + err.Error()) // SDK types always encode
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic("dashboards: " + err.Error())
	}
	return out
}
