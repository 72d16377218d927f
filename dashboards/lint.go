package dashboards

import (
	"slices"
	"strings"

	"github.com/stormwatch-go/stormwatch/rules"
)

// LintFile is the name of the exclusion file of Grafana's dashboard-linter, which
// `dashboard-linter lint` reads beside the dashboard it lints.
const LintFile = ".lint"

// lintExclusion is one rule of the linter that does not apply to a dashboard, and why.
type lintExclusion struct {
	rule, dashboard, reason string
}

// lintExclusions are the linter's rules that cannot apply to the SLOs dashboard: its panels
// read the series the SLO rules record, aggregated over instances (and over jobs unless the
// rules group by job), so an instance (job) matcher would select nothing and empty every panel.
func lintExclusions(r resolved, slos []rules.SLOInfo) []lintExclusion {
	title := r.titlePrefix + " / SLOs"
	out := []lintExclusion{{"target-instance-rule", title,
		"The SLO panels read the series the SLO rules record, aggregated over instances: they have no instance label, " +
			"and an instance matcher would empty every panel."}}
	for _, s := range slos {
		if !slices.Contains(s.GroupBy, labelJob) {
			out = append(out, lintExclusion{"target-job-rule", title,
				"The SLO rules do not group by job (group_by), so the series they record have no job label, and a job " +
					"matcher would empty every panel."})
			break
		}
	}
	return out
}

// lintFile is the linter's exclusion file (its own YAML format: exclusions by rule, each with
// a reason and entries matching a dashboard by title) for the SLOs dashboard.
func lintFile(r resolved, slos []rules.SLOInfo) File {
	var b strings.Builder
	b.WriteString("# Exclusions for Grafana's dashboard-linter (`dashboard-linter lint --strict` reads this file beside the\n" +
		"# dashboards): rules that cannot apply, and why. Generated; do not edit, regenerate with\n" +
		"# `stormwatch generate dashboards`.\nexclusions:\n")
	for _, e := range lintExclusions(r, slos) {
		b.WriteString("  " + e.rule + ":\n")
		b.WriteString("    reason: " + yamlString(e.reason) + "\n")
		b.WriteString("    entries:\n")
		b.WriteString("      - dashboard: " + yamlString(e.dashboard) + "\n")
		b.WriteString("        reason: " + yamlString(e.reason) + "\n")
	}
	return File{Path: Dir + "/" + LintFile, Data: []byte(b.String())}
}
