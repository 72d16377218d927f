// Package dashboards generates stormwatch's Grafana dashboards as code, with the Grafana
// Foundation SDK, from the metric catalog (catalog).
//
// Every metric name in every query comes from the catalog, so a dashboard can never query a
// metric the collector does not export. Two dashboards are generated:
//
//   - "<prefix> / Overview" (uid "<prefix>-overview"): every circuit breaker, retry, bulkhead,
//     fallback and timeout, with headline stats, breaker trips as annotations and the variables
//     datasource, job, instance and name (multi-value).
//   - "<prefix> / Dependency" (uid "<prefix>-dependency"): the same panels for one name, broken
//     down per instance.
//
// The JSON is deterministic (stable uids, panel ids and key order) so regenerated files diff
// cleanly. Generate returns the files; the stormwatch CLI writes them
// (`stormwatch generate dashboards -o out/`).
package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/genconfig"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// File is one generated file.
type File struct {
	// Path is relative to the output directory and uses forward slashes, e.g.
	// "dashboards/stormwatch-overview.json".
	Path string
	// Data is the file's content.
	Data []byte
}

// Dir is the directory, relative to the output directory, that holds the generated files.
const Dir = "dashboards"

// Generate validates cfg and returns the dashboards as Grafana JSON files (Overview, then
// Dependency) and, with cfg.Provisioning, a Grafana file-provisioning YAML. The output depends
// only on cfg: the same config always yields the same bytes.
func Generate(cfg Config) ([]File, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	var files []File
	for _, d := range []struct {
		suffix string
		build  func(resolved) (dashboard.Dashboard, error)
	}{
		{overviewSuffix, overview},
		{dependencySuffix, dependency},
	} {
		dash, err := d.build(r)
		if err != nil {
			return nil, fmt.Errorf("dashboards: building %s%s: %w", r.uidPrefix, d.suffix, err)
		}
		data, err := marshal(dash)
		if err != nil {
			return nil, fmt.Errorf("dashboards: encoding %s%s: %w", r.uidPrefix, d.suffix, err)
		}
		files = append(files, File{Path: Dir + "/" + r.uidPrefix + d.suffix + ".json", Data: data})
	}
	if r.provisioning {
		files = append(files, File{Path: Dir + "/provisioning/" + r.uidPrefix + ".yaml", Data: provisioning(r)})
	}
	return files, nil
}

// marshal encodes a dashboard as indented JSON with a final newline. encoding/json writes
// struct fields in declaration order and map keys sorted, so the bytes are deterministic.
func marshal(d dashboard.Dashboard) ([]byte, error) {
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(unescapeHTML(out), '\n'), nil
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes that encoding/json writes for <, >
// and & back into the characters, so PromQL such as "a > 0" stays readable. (The SDK's types
// marshal themselves with json.Marshal, so Encoder.SetEscapeHTML cannot reach them.) An escaped
// backslash followed by "u003e" is left alone.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if i+6 <= len(b) {
			switch string(b[i : i+6]) {
			case `\u003c`:
				out, i = append(out, '<'), i+5
				continue
			case `\u003e`:
				out, i = append(out, '>'), i+5
				continue
			case `\u0026`:
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, including \\, is copied whole
		i++
	}
	return out
}

func uid(r resolved, suffix string) string { return r.uidPrefix + suffix }

// Tags every generated dashboard carries, besides the uid prefix when it is not
// the default (genconfig.DefaultUIDPrefix).
var baseTags = []string{"stormwatch", "resilience"}

// tags are the dashboards' tags; the last one is the tag their links to each other select.
func tags(r resolved) []string {
	out := slices.Clone(baseTags)
	if r.uidPrefix != genconfig.DefaultUIDPrefix {
		out = append(out, r.uidPrefix)
	}
	return out
}

// newDashboard starts a dashboard with the settings both dashboards share: read-only (they
// are provisioned from generated files: edits belong in the generator's config), tagged, with
// links to the other stormwatch dashboards.
func newDashboard(r resolved, title, suffix, description string) *dashboard.DashboardBuilder {
	ts := tags(r)
	return dashboard.NewDashboardBuilder(r.titlePrefix+" / "+title).
		Uid(uid(r, suffix)).
		Description(description).
		Tags(ts).
		Readonly().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Refresh("30s").
		Link(dashboard.NewDashboardLinkBuilder(r.titlePrefix + " dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags(ts[len(ts)-1:]).
			AsDropdown(true).
			Icon("external link").
			Tooltip("").
			Url("").
			IncludeVars(true).
			KeepTime(true))
}

// addRows appends rows and their panels in order.
func addRows(b *dashboard.DashboardBuilder, rows ...rowBuilder) *dashboard.DashboardBuilder {
	for _, rw := range rows {
		b = b.WithRow(rw.row)
		for _, p := range rw.panels {
			b = b.WithPanel(p)
		}
	}
	return b
}

// promQL is the query writer of a dashboard: every selector also carries the matchers of the
// group_by variables (cluster=~"$cluster").
func (r resolved) promQL(singleName bool) promql {
	q := newPromQL(r, singleName)
	q.selector = append(slices.Clone(q.selector), r.extraMatchers()...)
	return q
}

// extraMatchers are the matchers of the group_by variables.
func (r resolved) extraMatchers() []selector.Matcher {
	var out []selector.Matcher
	for _, l := range r.extras {
		out = append(out, variable(l, l))
	}
	return out
}

// legendOf names a series grouped by labels: "{{name}} ({{cluster}}/{{job}})" — the name
// first, the other labels in parentheses.
func legendOf(labels []string) string {
	var others []string
	for _, l := range labels {
		if l != catalog.LabelName {
			others = append(others, "{{"+l+"}}")
		}
	}
	legend := "{{" + catalog.LabelName + "}}"
	if !slices.Contains(labels, catalog.LabelName) {
		legend = ""
	}
	if len(others) > 0 {
		if legend != "" {
			legend += " "
		}
		legend += "(" + strings.Join(others, "/") + ")"
	}
	return legend
}

func overview(r resolved) (dashboard.Dashboard, error) {
	q := r.promQL(false)
	inst := with(r.groupBy, labelInstance)
	v := view{
		q:          q,
		agg:        r.groupBy,
		aggLegend:  legendOf(r.groupBy),
		inst:       inst,
		instLegend: "{{" + catalog.LabelName + "}} ({{" + labelInstance + "}})",
	}
	depUID := uid(r, dependencySuffix)
	b := newDashboard(r, "Overview", overviewSuffix,
		"Circuit breakers, retries, bulkheads, fallbacks and timeouts instrumented with stormwatch. "+
			"The table on top says who is hurting: one row per dependency, worst first; click a row for its Dependency dashboard. "+
			"Generated from the metric catalog; do not edit, regenerate with `stormwatch generate dashboards`.").
		Variables(variables(r, false)).
		Annotation(tripAnnotation(q, r.groupBy)).
		Link(dashboardLink("Dependency", depUID))
	b = b.WithPanel(hurtingTable(r, q, depUID))
	for _, s := range overviewStats(q, r.groupBy) {
		b = b.WithPanel(s.build())
	}
	b = addRows(b, v.breakerRow(r, true, depUID), v.retryRow(), v.bulkheadRow(), v.fallbackRow(), v.timeoutRow(), v.limitRow(), v.hedgeRow())
	return b.Build()
}

func dependency(r resolved) (dashboard.Dashboard, error) {
	q := r.promQL(true)
	agg := with(r.extras, labelJob, labelInstance)
	v := view{
		q:          q,
		agg:        agg,
		aggLegend:  "{{" + labelInstance + "}}",
		inst:       agg,
		instLegend: "{{" + labelInstance + "}}",
	}
	b := newDashboard(r, "Dependency", dependencySuffix,
		"One dependency (the name variable) across its processes: every stormwatch primitive of that name, per instance. "+
			"Alerts link here (their dashboard_url) with the variables set to their labels. "+
			"Generated from the metric catalog; do not edit, regenerate with `stormwatch generate dashboards`.").
		Variables(variables(r, true)).
		Annotation(tripAnnotation(q, with(r.groupBy))).
		Link(dashboardLink("Overview", uid(r, overviewSuffix)))
	for _, s := range dependencyStats(q) {
		b = b.WithPanel(s.build())
	}
	b = addRows(b, v.breakerRow(r, false, ""), v.retryRow(), v.bulkheadRow(), v.fallbackRow(), v.timeoutRow(), v.limitRow(), v.hedgeRow())
	return b.Build()
}

// notClosedStat is the first headline number of both dashboards: how many breakers (per name
// and instance) are not closed.
func notClosedStat(q promql, title, description string) single {
	return single{
		id:          1,
		title:       title,
		description: description,
		unit:        units.Short,
		width:       4,
		expr:        zero("count(" + q.sel(catalog.BreakerState, ne(catalog.LabelState, catalog.StateClosed.String())) + " == 1)"),
		thresholds:  thresholds(colorGreen, step{1, colorRed}),
		decimals:    cog.ToPtr(0.0),
	}
}

// overviewStats are the headline numbers over every selected dependency: how many are hurt,
// and the worst of each (named), not sums that hide one failing dependency among healthy ones.
func overviewStats(q promql, by []string) []single {
	worst := func(expr string) string { return "topk(1, " + expr + ")" }
	return []single{
		{
			id:    1,
			title: "Dependencies with a breaker open",
			description: "Dependencies (one per " + strings.Join(by, ", ") + ") whose circuit breaker is open, half-open or forced open " +
				"on at least one instance. The table above says which, and since when.",
			unit:       units.Short,
			width:      4,
			expr:       zero("count(" + maxBy(by, q.sel(catalog.BreakerState, oneOf(catalog.LabelState, breakerHurtStates()...))) + " > 0)"),
			thresholds: thresholds(colorGreen, step{1, colorRed}),
			decimals:   cog.ToPtr(0.0),
		},
		{
			id:    2,
			title: "Worst retry rate",
			description: "The highest retry rate of any selected dependency, and which: extra attempts per logical call, " +
				"rate(attempts) / rate(calls). Above 5% sustained deserves attention.",
			unit:       units.PercentUnit,
			width:      4,
			expr:       worst(ratio(sumBy(by, q.rate(catalog.RetryAttempts)), sumBy(by, q.rate(catalog.RetryCalls)))),
			legend:     "{{" + catalog.LabelName + "}}",
			named:      true,
			thresholds: thresholds(colorGreen, step{0.05, colorOrange}, step{0.2, colorRed}),
			noValue:    "no calls",
		},
		{
			id:          3,
			title:       "Worst bulkhead rejections",
			description: "The highest share of bulkhead admission decisions that rejected the call, of any selected dependency, and which.",
			unit:        units.PercentUnit,
			width:       4,
			expr: worst(ratio(sumBy(by, q.rate(catalog.BulkheadCalls, eq(catalog.LabelKind, catalog.AdmissionRejected.String()))),
				sumBy(by, q.rate(catalog.BulkheadCalls)))),
			legend:     "{{" + catalog.LabelName + "}}",
			named:      true,
			thresholds: thresholds(colorGreen, step{0.01, colorRed}),
			noValue:    "no calls",
		},
		{
			id:    4,
			title: "Most fallbacks",
			description: "Fallback invocations per second of the selected dependency that falls back most, and which: " +
				"its callers are being served degraded answers.",
			unit:       units.OpsPerSecond,
			width:      4,
			expr:       worst(sumBy(by, q.rate(catalog.FallbackCalls))),
			legend:     "{{" + catalog.LabelName + "}}",
			named:      true,
			thresholds: thresholds(colorGreen, step{0.001, colorOrange}),
			noValue:    "no fallbacks",
		},
		{
			id:          5,
			title:       "Most timed-out attempts",
			description: "Attempts per second that hit their time limit, of the selected dependency with the most, and which.",
			unit:        units.OpsPerSecond,
			width:       4,
			expr:        worst(sumBy(by, q.rate(catalog.TimeoutCalls, eq(catalog.LabelKind, catalog.TimeoutTimedOut.String())))),
			legend:      "{{" + catalog.LabelName + "}}",
			named:       true,
			thresholds:  thresholds(colorGreen, step{0.001, colorOrange}),
			noValue:     "no attempts",
		},
		{
			id:    6,
			title: "Names over the cardinality limit",
			description: "Names refused by the registry's cardinality guard since the processes started; their calls " +
				"share the " + catalog.OverflowName + " instance. Raise the registry's name limit or stop building names from request data.",
			unit:       units.Short,
			width:      4,
			expr:       zero(sumBy(nil, q.sel(catalog.RegistryOverflow))),
			thresholds: thresholds(colorGreen, step{1, colorRed}),
			decimals:   cog.ToPtr(0.0),
		},
	}
}

// dependencyStats are the headline numbers of one name.
func dependencyStats(q promql) []single {
	return []single{
		notClosedStat(q, "Instances not closed", "Processes whose circuit breaker of this name is not closed."),
		{
			id:          2,
			title:       "Worst failure rate",
			description: "Highest failure ratio in any instance's breaker window.",
			unit:        units.PercentUnit,
			width:       4,
			expr:        maxBy(nil, q.sel(catalog.BreakerFailureRate)),
			thresholds:  thresholds(colorGreen, step{0.1, colorOrange}, step{0.5, colorRed}),
			noValue:     "too few calls",
		},
		{
			id:          3,
			title:       "Retry rate",
			description: "Extra attempts per logical call: rate(attempts) / rate(calls).",
			unit:        units.PercentUnit,
			width:       4,
			expr:        ratio(sumBy(nil, q.rate(catalog.RetryAttempts)), sumBy(nil, q.rate(catalog.RetryCalls))),
			thresholds:  thresholds(colorGreen, step{0.05, colorOrange}, step{0.2, colorRed}),
			noValue:     "no calls",
		},
		{
			id:          4,
			title:       "Bulkhead utilisation",
			description: "Bulkhead permits in use over permits configured, across instances.",
			unit:        units.PercentUnit,
			width:       4,
			expr:        ratio(sumBy(nil, q.sel(catalog.BulkheadInflight)), sumBy(nil, q.sel(catalog.BulkheadMaxConcurrent))),
			thresholds:  thresholds(colorGreen, step{0.9, colorRed}),
			noValue:     "no bulkhead",
		},
		{
			id:          5,
			title:       "Fallbacks",
			description: "Fallback invocations per second.",
			unit:        units.OpsPerSecond,
			width:       4,
			expr:        zero(sumBy(nil, q.rate(catalog.FallbackCalls))),
			thresholds:  thresholds(colorGreen, step{0.001, colorOrange}),
		},
		{
			id:          6,
			title:       "Longest not-closed episode",
			description: "Time since the oldest current trip of this name's breakers.",
			unit:        units.Seconds,
			width:       4,
			expr:        "time() - " + agg("min", nil, q.sel(catalog.BreakerTrippedSince)+" > 0"),
			thresholds:  thresholds(colorRed),
			noValue:     "closed",
		},
	}
}

// Every multi-value variable's "All" is the regular expression allValue: .+ (every series
// has job, instance and name; .* would also match series without the label, and Grafana's
// dashboard linter requires .+ for job and instance). The group_by variables use anyValue, .*,
// so that "All" also keeps series that lack the label.
const (
	allValue = ".+"
	anyValue = ".*"
)

// variables are the template variables: datasource, one per extra group_by label, job,
// instance and name, each listing the values that the ones before it select. With singleName
// the name variable takes exactly one value (the Dependency dashboard). The labels come from
// one metric each (promql.anchor, promql.names), never from a regular expression over
// __name__.
func variables(r resolved, singleName bool) []cog.Builder[dashboard.VariableModel] {
	q := newPromQL(r, singleName)
	out := []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(varDatasource).Label("Data source").Type(prometheusType),
	}
	var before []selector.Matcher
	for _, l := range r.extras {
		out = append(out, queryVariable(l, l, labelValues(q.anchor(before...), l), true, anyValue))
		before = append(before, variable(l, l))
	}
	out = append(out, queryVariable(varJob, "Job", labelValues(q.anchor(before...), labelJob), true, allValue))
	before = append(before, variable(labelJob, varJob))
	out = append(out, queryVariable(varInstance, "Instance", labelValues(q.anchor(before...), labelInstance), true, allValue))
	before = append(before, variable(labelInstance, varInstance))
	name := queryVariable(varName, "Name", queryResult(q.names(before...)), !singleName, allValue)
	return append(out, name.Regex(nameRegex))
}

// queryVariable is a query variable over the templated datasource, refreshed on time range
// change (what Grafana's dashboard linter asks), sorted; a multi-value one has "All", the
// regular expression all.
func queryVariable(name, label, expr string, multi bool, all string) *dashboard.QueryVariableBuilder {
	b := dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasourceRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(expr)}).
		Definition(expr).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(multi).
		IncludeAll(multi)
	if multi {
		b = b.AllValue(all)
	}
	return b
}

// tripAnnotation marks every breaker trip (a transition to open) on the time series panels.
func tripAnnotation(q promql, by []string) cog.Builder[dashboard.AnnotationQuery] {
	expr := sumBy(with(by, catalog.LabelFrom),
		q.increase(catalog.BreakerTransitions, eq(catalog.LabelTo, catalog.StateOpen.String()))) + " > 0"
	var keys []string
	for _, l := range by {
		keys = append(keys, l)
	}
	return dashboard.NewAnnotationQueryBuilder().
		Name("Breaker trips").
		Datasource(datasourceRef()).
		Enable(true).
		IconColor(colorRed).
		Expr(expr).
		TitleFormat("Circuit breaker {{" + catalog.LabelName + "}} tripped").
		TextFormat(legendOf(by) + ", from {{" + catalog.LabelFrom + "}}").
		TagKeys(strings.Join(keys, ",")).
		Step("1m").
		UseValueForTime(false)
}

// dashboardLink links to the sibling dashboard, keeping the time range and variables.
func dashboardLink(title, targetUID string) cog.Builder[dashboard.DashboardLink] {
	return dashboard.NewDashboardLinkBuilder(title).
		Type(dashboard.DashboardLinkTypeLink).
		Url("/d/" + targetUID).
		Icon("dashboard").
		Tooltip("Open the " + title + " dashboard").
		Tags([]string{}).
		IncludeVars(true).
		KeepTime(true)
}

// dependencyURL is the URL of the Dependency dashboard of one dependency, for data links:
// value(label) is the data link expression of a label's value in the clicked series or row.
func dependencyURL(r resolved, depUID string, value func(label string) string) string {
	u := "/d/" + depUID + "?${__url_time_range}&var-" + varDatasource + "=${" + varDatasource + "}"
	for _, l := range r.groupBy {
		u += "&var-" + l + "=" + value(l)
	}
	return u
}

// dependencyLink is a data link from a breaker's series to the Dependency dashboard of its name.
func dependencyLink(r resolved, depUID string) []cog.Builder[dashboard.DashboardLink] {
	return []cog.Builder[dashboard.DashboardLink]{
		dashboard.NewDashboardLinkBuilder("Open ${__field.labels." + catalog.LabelName + "} in the Dependency dashboard").
			Type(dashboard.DashboardLinkTypeLink).
			Url(dependencyURL(r, depUID, func(l string) string { return "${__field.labels." + l + "}" })).
			Icon("dashboard").
			Tooltip("").
			Tags([]string{}),
	}
}

// provisioning is a Grafana file-provisioning provider for the generated dashboards.
func provisioning(r resolved) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Code generated by stormwatch generate dashboards. DO NOT EDIT.\n")
	fmt.Fprintf(&b, "# Grafana dashboard provider: copy this file to <grafana>/provisioning/dashboards/ and the\n")
	fmt.Fprintf(&b, "# dashboard JSON files (%s%s.json, %s%s.json) to the path below.\n",
		r.uidPrefix, overviewSuffix, r.uidPrefix, dependencySuffix)
	fmt.Fprintf(&b, "apiVersion: 1\n")
	fmt.Fprintf(&b, "providers:\n")
	fmt.Fprintf(&b, "  - name: %s\n", r.uidPrefix)
	fmt.Fprintf(&b, "    orgId: 1\n")
	fmt.Fprintf(&b, "    folder: %s\n", yamlString(r.titlePrefix))
	fmt.Fprintf(&b, "    folderUid: %s\n", r.uidPrefix)
	fmt.Fprintf(&b, "    type: file\n")
	fmt.Fprintf(&b, "    disableDeletion: false\n")
	fmt.Fprintf(&b, "    allowUiUpdates: false\n")
	fmt.Fprintf(&b, "    updateIntervalSeconds: 30\n")
	fmt.Fprintf(&b, "    options:\n")
	fmt.Fprintf(&b, "      path: /var/lib/grafana/dashboards/%s\n", r.uidPrefix)
	fmt.Fprintf(&b, "      foldersFromFilesStructure: false\n")
	return b.Bytes()
}

// yamlString quotes s as a YAML double-quoted scalar (JSON string syntax is valid YAML).
func yamlString(s string) string {
	out, _ := json.Marshal(s) // a string always encodes
	return string(out)
}
