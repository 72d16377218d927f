// Package dashboards generates stormwatch's Grafana dashboards as code, with the Grafana
// Foundation SDK, from the metric catalog (collector/catalog).
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

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
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

// newDashboard starts a dashboard with the settings both dashboards share.
func newDashboard(r resolved, title, suffix, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(r.titlePrefix+" / "+title).
		Uid(uid(r, suffix)).
		Description(description).
		Tags([]string{r.uidPrefix, "resilience", "generated"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Refresh("30s")
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

func overview(r resolved) (dashboard.Dashboard, error) {
	q := newPromQL(r, false)
	v := view{
		q:          q,
		agg:        []string{labelJob, catalog.LabelName},
		aggLegend:  "{{" + catalog.LabelName + "}} ({{" + labelJob + "}})",
		inst:       []string{labelJob, labelInstance, catalog.LabelName},
		instLegend: "{{" + catalog.LabelName + "}} ({{" + labelInstance + "}})",
	}
	b := newDashboard(r, "Overview", overviewSuffix,
		"Circuit breakers, retries, bulkheads, fallbacks and timeouts instrumented with stormwatch. "+
			"Generated from the metric catalog; do not edit, regenerate with `stormwatch generate dashboards`.").
		Variables(variables(r, false)).
		Annotation(tripAnnotation(q)).
		Link(dashboardLink("Dependency", uid(r, dependencySuffix)))
	for _, s := range overviewStats(q) {
		b = b.WithPanel(s.build())
	}
	b = addRows(b, v.breakerRow(true, uid(r, dependencySuffix)), v.retryRow(), v.bulkheadRow(), v.fallbackRow(), v.timeoutRow())
	return b.Build()
}

func dependency(r resolved) (dashboard.Dashboard, error) {
	q := newPromQL(r, true)
	v := view{
		q:          q,
		agg:        []string{labelJob, labelInstance},
		aggLegend:  "{{" + labelInstance + "}}",
		inst:       []string{labelJob, labelInstance},
		instLegend: "{{" + labelInstance + "}}",
	}
	b := newDashboard(r, "Dependency", dependencySuffix,
		"One dependency (the name variable) across its processes: every stormwatch primitive of that name, per instance. "+
			"Generated from the metric catalog; do not edit, regenerate with `stormwatch generate dashboards`.").
		Variables(variables(r, true)).
		Annotation(tripAnnotation(q)).
		Link(dashboardLink("Overview", uid(r, overviewSuffix)))
	for _, s := range dependencyStats(q) {
		b = b.WithPanel(s.build())
	}
	b = addRows(b, v.breakerRow(false, ""), v.retryRow(), v.bulkheadRow(), v.fallbackRow(), v.timeoutRow())
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

// overviewStats are the headline numbers across every selected name.
func overviewStats(q promql) []single {
	return []single{
		notClosedStat(q, "Breakers not closed",
			"Circuit breakers (per name and instance) whose effective state is anything but closed."),
		{
			id:          2,
			title:       "Retry rate",
			description: "Extra attempts per logical call across all retries: rate(attempts) / rate(calls).",
			unit:        units.PercentUnit,
			width:       4,
			expr:        ratio(sumBy(nil, q.rate(catalog.RetryAttempts)), sumBy(nil, q.rate(catalog.RetryCalls))),
			thresholds:  thresholds(colorGreen, step{0.05, colorOrange}, step{0.2, colorRed}),
			noValue:     "no calls",
		},
		{
			id:          3,
			title:       "Bulkhead rejections",
			description: "Share of bulkhead admission decisions that rejected the call.",
			unit:        units.PercentUnit,
			width:       4,
			expr: ratio(sumBy(nil, q.rate(catalog.BulkheadCalls, eq(catalog.LabelKind, catalog.AdmissionRejected.String()))),
				sumBy(nil, q.rate(catalog.BulkheadCalls))),
			thresholds: thresholds(colorGreen, step{0.01, colorRed}),
			noValue:    "no calls",
		},
		{
			id:          4,
			title:       "Fallbacks",
			description: "Fallback invocations per second: the service is serving degraded answers.",
			unit:        units.OpsPerSecond,
			width:       4,
			expr:        zero(sumBy(nil, q.rate(catalog.FallbackCalls))),
			thresholds:  thresholds(colorGreen, step{0.001, colorOrange}),
		},
		{
			id:          5,
			title:       "Timed-out attempts",
			description: "Attempts per second that hit their time limit.",
			unit:        units.OpsPerSecond,
			width:       4,
			expr:        zero(sumBy(nil, q.rate(catalog.TimeoutCalls, eq(catalog.LabelKind, catalog.TimeoutTimedOut.String())))),
			thresholds:  thresholds(colorGreen, step{0.001, colorOrange}),
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

// variables are the template variables: datasource, job, instance and name. With singleName
// the name variable takes exactly one value (the Dependency dashboard).
func variables(r resolved, singleName bool) []cog.Builder[dashboard.VariableModel] {
	q := newPromQL(r, singleName)
	jobM := variable(labelJob, varJob)
	instM := variable(labelInstance, varInstance)
	query := func(name, label, expr string, multi bool) cog.Builder[dashboard.VariableModel] {
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
			b = b.AllValue(".*")
		}
		return b
	}
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(varDatasource).Label("Data source").Type(prometheusType),
		query(varJob, "Job", labelValues(q.presence(false), labelJob), true),
		query(varInstance, "Instance", labelValues(q.presence(false, jobM), labelInstance), true),
		query(varName, "Name", labelValues(q.presence(true, jobM, instM), catalog.LabelName), !singleName),
	}
}

// tripAnnotation marks every breaker trip (a transition to open) on the time series panels.
func tripAnnotation(q promql) cog.Builder[dashboard.AnnotationQuery] {
	expr := sumBy([]string{labelJob, catalog.LabelName, catalog.LabelFrom},
		q.increase(catalog.BreakerTransitions, eq(catalog.LabelTo, catalog.StateOpen.String()))) + " > 0"
	return dashboard.NewAnnotationQueryBuilder().
		Name("Breaker trips").
		Datasource(datasourceRef()).
		Enable(true).
		IconColor(colorRed).
		Expr(expr).
		TitleFormat("Circuit breaker {{" + catalog.LabelName + "}} tripped").
		TextFormat("job {{" + labelJob + "}}, from {{" + catalog.LabelFrom + "}}").
		TagKeys(labelJob + "," + catalog.LabelName).
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

// dependencyLink is a data link from a breaker's series to the Dependency dashboard of its name.
func dependencyLink(depUID string) []cog.Builder[dashboard.DashboardLink] {
	return []cog.Builder[dashboard.DashboardLink]{
		dashboard.NewDashboardLinkBuilder("Open ${__field.labels." + catalog.LabelName + "} in the Dependency dashboard").
			Type(dashboard.DashboardLinkTypeLink).
			Url("/d/" + depUID + "?${__url_time_range}&var-" + varDatasource + "=${" + varDatasource + "}" +
				"&var-" + varJob + "=${__field.labels." + labelJob + "}" +
				"&var-" + varName + "=${__field.labels." + catalog.LabelName + "}").
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
