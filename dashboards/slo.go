package dashboards

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
	"github.com/stormwatch-go/stormwatch/rules"
)

// GenerateSLOs returns the "<prefix> / SLOs" dashboard (uid "<prefix>-slos") for the dependency
// SLOs that slos describes — rules.SLOs of the rules' configuration: one row per SLO with its
// error budget remaining, its SLI over the period, the burn rate of the fast page's long
// window, and graphs of the SLI against the objective, the burn rate of every window against
// the alert thresholds, the calls and bad calls, and the budget over time. It reads the series
// the SLO rules record, so it shows data only where those rules run. No SLOs, no file. cfg is
// validated as by Generate, and its Selector is added to every query.
func GenerateSLOs(cfg Config, slos []rules.SLOInfo) ([]File, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if len(slos) == 0 {
		return nil, nil
	}
	dash, err := sloDashboard(r, slos)
	if err != nil {
		return nil, fmt.Errorf("dashboards: building %s%s: %w", r.uidPrefix, sloSuffix, err)
	}
	data, err := marshal(dash)
	if err != nil {
		return nil, fmt.Errorf("dashboards: encoding %s%s: %w", r.uidPrefix, sloSuffix, err)
	}
	return []File{{Path: Dir + "/" + r.uidPrefix + sloSuffix + ".json", Data: data}, lintFile(r, slos)}, nil
}

// sloQuery writes the queries of one SLO's row: its recorded series, selected by slo, the job
// and name variables and the configured selector.
type sloQuery struct {
	r    resolved
	info rules.SLOInfo
}

// sel selects one recorded series of the SLO. The job variable applies when the recorded
// series keep job (group_by).
func (q sloQuery) sel(series string) string {
	ms := []selector.Matcher{eq(rules.LabelSLO, q.info.ID)}
	if slices.Contains(q.info.GroupBy, labelJob) {
		ms = append(ms, variable(labelJob, varJob))
	}
	ms = append(ms, variable(catalog.LabelName, varName))
	ms = append(ms, q.r.selector...)
	return selector.Vector(series, ms...)
}

// burn is the burn rate over window i: the error ratio divided by the error budget.
func (q sloQuery) burn(i int) string {
	return q.sel(q.info.ErrorRatio[i]) + " / " + number(q.info.ErrorBudget)
}

// legend names one dependency of the SLO, with job when the series keep it.
func (q sloQuery) legend(suffix string) string {
	l := "{{" + catalog.LabelName + "}}"
	if slices.Contains(q.info.GroupBy, labelJob) {
		l += " ({{" + labelJob + "}})"
	}
	if suffix != "" {
		l += " " + suffix
	}
	return l
}

func number(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func sloDashboard(r resolved, slos []rules.SLOInfo) (dashboard.Dashboard, error) {
	b := newDashboard(r, "SLOs", sloSuffix,
		"Dependency SLOs: for each SLO, the error budget left over its period, the SLI against the objective and the burn rate of "+
			"every alert window against the multi-window, multi-burn-rate thresholds. Reads the series recorded by the SLO rules "+
			"(stormwatch-slo-rules.yaml). Generated; do not edit, regenerate with `stormwatch generate dashboards`.").
		Variables(sloVariables(r, slos)).
		Link(dashboardLink("Overview", uid(r, overviewSuffix))).
		Link(dashboardLink("Dependency", uid(r, dependencySuffix)))
	var rows []rowBuilder
	for i, info := range slos {
		rows = append(rows, sloRow(sloQuery{r: r, info: info}, uint32(100*(i+1))))
	}
	return addRows(b, rows...).Build()
}

// sloVariables are the datasource, job, instance and name variables. Job and instance list the
// processes exporting the catalog (the registry's overflow counter, as on the other
// dashboards): Grafana's dashboard linter asks for both, though the recorded series keep job
// only when the SLO rules group by it and never keep instance (the .lint file beside the
// dashboards says so, lintExclusions). Name lists the dependencies of the SLOs from the series
// they record, by metric name (no regular expression over __name__).
func sloVariables(r resolved, slos []rules.SLOInfo) []cog.Builder[dashboard.VariableModel] {
	q := newPromQL(r, false)
	withJob := true
	for _, s := range slos {
		withJob = withJob && slices.Contains(s.GroupBy, labelJob)
	}
	vars := []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(varDatasource).Label("Data source").Type(prometheusType),
		queryVariable(varJob, "Job", labelValues(q.anchor(), labelJob), true, allValue),
		queryVariable(varInstance, "Instance", labelValues(q.anchor(variable(labelJob, varJob)), labelInstance), true, allValue),
	}
	// One selector per recorded calls series, each with the ids of the SLOs that record it.
	var names []string
	ids := map[string][]string{}
	for _, s := range slos {
		if !slices.Contains(names, s.Calls) {
			names = append(names, s.Calls)
		}
		ids[s.Calls] = append(ids[s.Calls], s.ID)
	}
	var sels []string
	for _, n := range names {
		ms := []selector.Matcher{eq(rules.LabelSLO, ids[n][0])}
		if len(ids[n]) > 1 {
			quoted := make([]string, len(ids[n]))
			for i, id := range ids[n] {
				quoted[i] = regexpQuote(id)
			}
			ms[0] = oneOf(rules.LabelSLO, quoted...)
		}
		if withJob {
			ms = append(ms, variable(labelJob, varJob))
		}
		sels = append(sels, selector.Vector(n, append(ms, r.selector...)...))
	}
	if len(sels) == 1 {
		return append(vars, queryVariable(varName, "Dependency", labelValues(sels[0], catalog.LabelName), true, allValue))
	}
	expr := queryResult("count by (" + catalog.LabelName + ") (" + strings.Join(sels, " or ") + ")")
	return append(vars, queryVariable(varName, "Dependency", expr, true, allValue).Regex(nameRegex))
}

// regexpQuote escapes the regular-expression metacharacters of an SLO id for a =~ matcher.
func regexpQuote(s string) string {
	out := make([]rune, 0, len(s))
	for _, c := range s {
		switch c {
		case '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$':
			out = append(out, '\\')
		}
		out = append(out, c)
	}
	return string(out)
}

// sloRow is the row of one SLO; id is its row's panel id, its panels follow.
func sloRow(q sloQuery, id uint32) rowBuilder {
	info := q.info
	dep := info.Name
	if info.NameRegex != "" {
		dep = "names matching " + info.NameRegex
	}
	period := rules.FormatDuration(info.Period)
	objective := info.Objective
	fast := info.Burns[0]
	fastWindow := slices.Index(info.Windows, fast.Long)

	budget := single{
		id: id + 1, title: "Error budget remaining (" + period + ")",
		description: "Share of the " + period + " error budget (" + pctText(info.ErrorBudget) + " of calls may fail) not yet spent: 1 − error ratio over the period / (1 − objective). " +
			"Below 0 the objective is missed. Needs " + period + " of recorded data to cover the whole period.",
		unit: units.PercentUnit, width: 6, expr: q.sel(info.BudgetRemaining), legend: q.legend(""),
		thresholds: thresholds(colorRed, step{0, colorOrange}, step{0.25, colorYellow}, step{0.5, colorGreen}),
		noValue:    "no calls",
	}
	sli := single{
		id: id + 2, title: "SLI over " + period,
		description: "Share of good calls over the period, against the objective of " + pctText(objective) + ".",
		unit:        units.PercentUnit, width: 6, expr: "1 - " + q.sel(info.PeriodErrorRatio), legend: q.legend(""),
		thresholds: thresholds(colorRed, step{objective, colorGreen}),
		noValue:    "no calls",
		decimals:   cog.ToPtr(3.0),
	}
	burnNow := single{
		id: id + 3, title: "Burn rate (" + rules.FormatDuration(fast.Long) + ")",
		description: "How many times faster than the objective allows the budget is being spent, over the fast page's long window. " +
			"1 spends exactly the budget over the period; the page fires at " + number(fast.Factor) + " (and above the same over " + rules.FormatDuration(fast.Short) + ").",
		unit: units.Short, width: 6, expr: q.burn(fastWindow), legend: q.legend(""),
		thresholds: burnThresholds(info),
		noValue:    "no calls",
		decimals:   cog.ToPtr(2.0),
	}
	guard := ""
	if fast.MinCalls > 0 {
		guard = fmt.Sprintf(" The alerts need at least %d calls in their long window (%s for the fast page).", fast.MinCalls, rules.FormatDuration(fast.Long))
	}
	calls := single{
		id: id + 4, title: "Calls (" + rules.FormatDuration(info.Windows[0]) + ")",
		description: "Calls per second the SLI counts (source " + string(info.Source) + ").",
		unit:        units.RequestsPerSecond, width: 6, expr: q.sel(info.Calls), legend: q.legend(""),
		thresholds: thresholds(colorBlue),
		noValue:    "no calls",
	}

	var burnTargets []target
	for i, w := range info.Windows {
		burnTargets = append(burnTargets, target{expr: q.burn(i), legend: q.legend(rules.FormatDuration(w))})
	}
	panels := []cog.Builder[dashboard.Panel]{
		budget.build(), sli.build(), burnNow.build(), calls.build(),
		sloGraph{
			id: id + 5, title: "SLI", width: half,
			description: "Share of good calls over the shortest window and over the fast page's long window, against the objective (dashed).",
			unit:        units.PercentUnit,
			targets: []target{
				{expr: "1 - " + q.sel(info.ErrorRatio[0]), legend: q.legend(rules.FormatDuration(info.Windows[0]))},
				{expr: "1 - " + q.sel(info.ErrorRatio[fastWindow]), legend: q.legend(rules.FormatDuration(fast.Long))},
			},
			thresholds: thresholds(colorRed, step{objective, colorGreen}),
			softMin:    cog.ToPtr(objective - 2*info.ErrorBudget),
			max:        cog.ToPtr(1.0),
		}.build(),
		sloGraph{
			id: id + 6, title: "Burn rate by window", width: half,
			description: "Error ratio over each window divided by the error budget (log scale). The dashed lines are the alert thresholds: " +
				burnRules(info) + ". An alert fires when both of its windows are above its threshold." + guard,
			unit:       units.Short,
			targets:    burnTargets,
			thresholds: burnThresholds(info),
			log:        true,
		}.build(),
		sloGraph{
			id: id + 7, title: "Calls and bad calls", width: half,
			description: "Calls the SLI counts and the bad ones among them, per second over " + rules.FormatDuration(info.Windows[0]) + ".",
			unit:        units.RequestsPerSecond,
			targets: []target{
				{expr: q.sel(info.Calls), legend: q.legend("calls")},
				{expr: q.sel(info.BadCalls), legend: q.legend("bad")},
			},
			thresholds: thresholds(colorGreen),
		}.build(),
		sloGraph{
			id: id + 8, title: "Error budget remaining", width: half,
			description: "Share of the " + period + " error budget not yet spent, over time. It falls while calls fail and comes back as bad hours leave the period.",
			unit:        units.PercentUnit,
			targets:     []target{{expr: q.sel(info.BudgetRemaining), legend: q.legend("")}},
			thresholds:  thresholds(colorRed, step{0, colorGreen}),
			max:         cog.ToPtr(1.0),
		}.build(),
	}
	return row(id, fmt.Sprintf("SLO %s: %s, %s over %s", info.ID, dep, pctText(objective), period), panels...)
}

// burnThresholds colours burn rates by the alert thresholds: green below the slowest ticket,
// orange from the tickets', red from the pages'.
func burnThresholds(info rules.SLOInfo) *dashboard.ThresholdsConfigBuilder {
	var steps []step
	for i := len(info.Burns) - 1; i >= 0; i-- {
		c := colorOrange
		if info.Burns[i].Page {
			c = colorRed
		}
		steps = append(steps, step{info.Burns[i].Factor, c})
	}
	return thresholds(colorGreen, steps...)
}

// burnRules describes the alert rules: "14.4× over 1h and 5m (critical), …".
func burnRules(info rules.SLOInfo) string {
	s := ""
	for i, b := range info.Burns {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s× over %s and %s (%s)", number(b.Factor), rules.FormatDuration(b.Long), rules.FormatDuration(b.Short), b.Severity)
	}
	return s
}

// pctText renders a share as a percentage: 0.999 → 99.9%.
func pctText(v float64) string { return strconv.FormatFloat(v*100, 'g', 6, 64) + "%" }

// sloGraph is a time series panel of the SLOs dashboard: thresholds drawn as dashed lines, an
// optional soft minimum (availability sits just under 100%) and log scale (burn rates span
// 0.1 to 1000).
type sloGraph struct {
	id          uint32
	title       string
	description string
	unit        string
	width       uint32
	targets     []target
	thresholds  *dashboard.ThresholdsConfigBuilder
	softMin     *float64
	max         *float64
	log         bool
}

func (g sloGraph) build() *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().
		Id(g.id).
		Title(g.title).
		Description(g.description).
		Datasource(datasourceRef()).
		Targets(queries(g.targets, false)).
		Unit(g.unit).
		Height(graphHeight).
		Span(g.width).
		Legend(legend()).
		Tooltip(tooltip()).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: cog.ToPtr(false)}).
		Thresholds(g.thresholds).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
	if g.softMin != nil {
		b = b.AxisSoftMin(*g.softMin)
	}
	if g.max != nil {
		b = b.Max(*g.max)
	}
	if g.log {
		b = b.ScaleDistribution(common.NewScaleDistributionConfigBuilder().Type(common.ScaleDistributionLog).Log(10))
	}
	return b
}
