package docs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/rules"
)

// TestGeneratedAlertsPage fails when docs/alerts.md differs from what package rules generates.
func TestGeneratedAlertsPage(t *testing.T) {
	got, err := alertsPage()
	require.NoError(t, err)
	checkGenerated(t, "alerts.md", got)
}

// exampleSLO is the SLO the page shows the generated SLO rules of.
var exampleSLO = rules.SLO{Name: "payments", Objective: 0.999}

// fenced writes body as a fenced code block of language lang.
func fenced(p *page, lang, body string) {
	p.f("```%s\n%s\n```\n\n", lang, body)
}

// threshold renders an alert's default threshold with its unit.
func threshold(a rules.AlertInfo) string {
	s := strconv.FormatFloat(a.Threshold, 'g', -1, 64)
	if a.ThresholdUnit != "" {
		s += " " + a.ThresholdUnit
	}
	return s
}

func orNone(s string) string {
	if s == "" || s == "0s" {
		return "—"
	}
	return s
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// alertsPage renders docs/alerts.md.
func alertsPage() ([]byte, error) {
	groups, err := rules.Groups(rules.Config{})
	if err != nil {
		return nil, err
	}
	byAlert := map[string]rules.Rule{}
	var recording []rules.Rule
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				byAlert[r.Alert] = r
			} else {
				recording = append(recording, r)
			}
		}
	}
	infos := rules.Alerts()
	if names := rules.AlertNames(); len(names) != len(infos) {
		return nil, fmt.Errorf("docs: %d alert names, %d alert descriptions", len(names), len(infos))
	}

	var p page
	p.WriteString(generatedHeader)
	p.line("# Alert catalog")
	p.line("")
	p.line("Every alert `stormwatch generate` writes, with its default expression, threshold, `for`,")
	p.line("severity, labels and annotations — generated from package `rules` with the zero")
	p.line("`rules.Config` (namespace `resilience`, rate window " + rules.FormatDuration(rules.DefaultRateWindow) +
		", aggregation by " + codes(rules.DefaultGroupBy) + "), so this page")
	p.f("cannot drift from the rules: a test fails when it differs (`%s` rewrites it). The\n", regenerate)
	p.line("rule file, its promtool tests and a runbook per alert are generated together; the runbooks")
	p.line("(`runbooks/<Alert>/README.md` in the output) explain causes and mitigations.")
	p.line("")
	p.line("Each alert can be tuned or switched off in `stormwatch.yaml` under `alerts.<AlertName>`:")
	p.line("`enabled`, `threshold`, `for`, `keep_firing_for`, `severity` (one of " + codes(rules.Severities) + ")")
	p.f("and, for %s only, `min_instances` (default %d). Thresholds outside the range listed\n", code(rules.AlertOpenFleetWide), rules.DefaultMinInstances)
	p.line("below are configuration errors naming the field and the value.")
	p.line("")
	p.f("Every alert on a ratio has a minimum-volume floor: at least %d of the events its ratio counts\n", rules.MinEvents)
	p.line("(rejections, retries, refusals, failures) within the rate window, so a trickle of traffic does not page.")
	p.f("The alerts on gauges read each gauge's latest sample within 3 × `scrape_interval` (default %s):\n", rules.FormatDuration(rules.DefaultScrapeInterval))
	p.line("two missed scrapes do not restart a `for`, and a target that disappears resolves them within about")
	p.line("2 × `scrape_interval`; set `scrape_interval` in `stormwatch.yaml` to your Prometheus's. The summaries")
	p.line("name the job and the dependency. `runbook_url` and `dashboard_url` are written only when")
	p.line("`runbook_base_url` and `grafana_base_url` are set (a relative link is a dead one in a notification):")
	p.line("`stormwatch generate` warns when they are not, and fails with `--strict`.")
	p.line("")
	p.line("| alert | group | severity | threshold (default) | allowed | for | per instance |")
	p.line("|---|---|---|---|---|---|---|")
	for _, a := range infos {
		per := "no"
		if a.PerInstance {
			per = "yes"
		}
		p.f("| [%s](#%s) | %s | %s | %s | %s | %s | %s |\n", code(a.Name), strings.ToLower(a.Name), code(a.Group), a.Severity,
			threshold(a), cell(a.ThresholdRange), orNone(rules.FormatDuration(a.For)), per)
	}
	p.line("")
	p.line("Alerts marked *per instance* keep the `instance` label: they are about one process (a breaker")
	p.line("is a per-process state). The others aggregate over the instances of a job.")
	p.line("")

	for _, group := range rules.GroupNames {
		var in []rules.AlertInfo
		for _, a := range infos {
			if a.Group == group {
				in = append(in, a)
			}
		}
		if len(in) > 0 {
			p.f("## Group %s\n\n", code(group))
		}
		for _, a := range in {
			if err := alertSection(&p, a, byAlert); err != nil {
				return nil, err
			}
		}
	}

	p.line("## Recording rules")
	p.line("")
	p.f("Group %s records the rates the alerts and dashboards read, over the rate window:\n\n", code(rules.GroupRecording))
	for _, r := range recording {
		p.f("- %s\n\n", code(r.Record))
		p.f("  ```promql\n  %s\n  ```\n\n", strings.ReplaceAll(r.Expr, "\n", "\n  "))
	}
	p.line("The rates of rare events (the breaker's rejections, the budget's refusals, the callers' failures and")
	p.line("what fallbacks did not rescue), the by-kind rates (`job_name_kind:…`) and the trips are recorded only")
	p.line("where they are not zero, and the ratios only where the events they are about occur: the rejection and")
	p.line("retry ratios where there are some, the rescue ratio where calls were retried (0 if none was rescued),")
	p.line("the unrescued ratio where calls failed (0 if fallbacks answered them all). A healthy dependency costs")
	p.line("Prometheus six recorded series: the breaker's and the retry's calls, one by-kind rate of each, the")
	p.line("retry's attempts and the callers' calls. A reader that needs the zero writes")
	p.line("`… or on (job, name) job_name:resilience_dependency_calls:rate5m * 0`.")
	p.line("")

	if err := sloSection(&p); err != nil {
		return nil, err
	}
	return p.Bytes(), nil
}

// sloSection renders the dependency SLO alerts.
func sloSection(p *page) error {
	p.line("## Dependency SLOs: error-budget burn-rate alerts")
	p.line("")
	p.line("For each SLO configured under `slos:` (`rules.SLO`: a dependency `name` or `name_regex`, an")
	p.f("`objective`, a `period`, default %s), `stormwatch generate` records the SLI from stormwatch's own\n", rules.FormatDuration(rules.DefaultSLOPeriod))
	p.f("counters (every SLO's recording rules in group %s) and writes a rule group %s\n", code(rules.GroupSLORecording), code(rules.GroupSLOPrefix+"<id>"))
	p.f("that alerts with %s:\n", code(rules.AlertErrorBudgetBurn))
	p.line("four multi-window, multi-burn-rate alerts (`rules.BurnRateRules`). Each fires when the error ratio")
	p.line("exceeds factor × (1 − objective) over both its long and its short window, and only when the long")
	p.line("window holds enough calls for one failure not to page (`min_calls`). Windows scale with the")
	p.f("period (at %s they are the table's). The objective must lie in (%s, %s].\n",
		rules.FormatDuration(rules.SLOReferencePeriod), strconv.FormatFloat(rules.MinSLOObjective, 'g', 6, 64),
		strconv.FormatFloat(rules.MaxSLOObjective, 'g', 6, 64))
	p.line("")
	p.line("| kind | burn-rate factor | long window | short window | budget spent over the long window |")
	p.line("|---|---|---|---|---|")
	for _, b := range rules.BurnRateRules {
		kind := "ticket"
		if b.Page {
			kind = "page"
		}
		p.f("| %s | %s× | %s | %s | %s%% |\n", kind, strconv.FormatFloat(b.Factor, 'g', -1, 64),
			rules.FormatDuration(b.Long), rules.FormatDuration(b.Short), strconv.FormatFloat(b.BudgetSpent()*100, 'g', 3, 64))
	}
	p.line("")
	p.f("Labels of every %s: %s, %s, %s and %s (page: `critical`, ticket: `warning` by default).\n\n",
		code(rules.AlertErrorBudgetBurn), code(rules.LabelSLO), code(rules.LabelLongWindow), code(rules.LabelShortWindow), code("severity"))

	cfg := rules.Config{SLOs: []rules.SLO{exampleSLO}}
	infos, err := rules.SLOs(cfg)
	if err != nil {
		return err
	}
	s := infos[0]
	p.f("### Example: %s, objective %s\n\n", code("name: "+exampleSLO.Name), strconv.FormatFloat(exampleSLO.Objective, 'g', -1, 64))
	p.line("| severity | factor | long | short | error-ratio threshold | min calls in the long window |")
	p.line("|---|---|---|---|---|---|")
	for _, b := range s.Burns {
		p.f("| %s | %s× | %s | %s | %s | %d |\n", b.Severity, strconv.FormatFloat(b.Factor, 'g', -1, 64),
			rules.FormatDuration(b.Long), rules.FormatDuration(b.Short), strconv.FormatFloat(b.Threshold, 'g', -1, 64), b.MinCalls)
	}
	p.line("")
	p.f("Recorded series: calls %s, bad calls %s, the error ratio over each window\n", code(s.Calls), code(s.BadCalls))
	p.f("(%s, …), over the period %s, and the budget left %s.\n\n", code(s.ErrorRatio[0]), code(s.PeriodErrorRatio), code(s.BudgetRemaining))

	for _, src := range []rules.SLOSource{rules.SLOSourceRetry, rules.SLOSourceBreaker} {
		slo := exampleSLO
		slo.Source = src
		groups, err := rules.SLOGroups(rules.Config{SLOs: []rules.SLO{slo}})
		if err != nil {
			return err
		}
		rs := groups[0].Rules
		p.f("The SLI with `source: %s`: all calls, then bad calls.\n\n", src)
		fenced(p, "promql", rs[0].Expr)
		fenced(p, "promql", rs[1].Expr)
	}
	groups, err := rules.SLOGroups(cfg)
	if err != nil {
		return err
	}
	for _, r := range groups[1].Rules { // the SLO's alert group (groups[0] records)
		if r.Alert == "" {
			continue
		}
		p.f("%s, %s %s / %s:\n\n", code(r.Alert), r.Labels["severity"], r.Labels[rules.LabelLongWindow], r.Labels[rules.LabelShortWindow])
		fenced(p, "promql", r.Expr)
	}
	return nil
}

// alertSection renders one alert.
func alertSection(p *page, a rules.AlertInfo, byAlert map[string]rules.Rule) error {
	r, ok := byAlert[a.Name]
	if !ok {
		return fmt.Errorf("docs: alert %s is not generated by default", a.Name)
	}
	p.f("### %s\n\n", a.Name)
	p.f("%s\n\n", a.Summary)
	p.f("- threshold: %s — %s; allowed: %s\n", threshold(a), a.ThresholdDoc, a.ThresholdRange)
	p.f("- for: %s; keep_firing_for: %s\n", orNone(rules.FormatDuration(r.For)), orNone(rules.FormatDuration(r.KeepFiringFor)))
	var ls []string
	for _, k := range sortedKeys(r.Labels) {
		ls = append(ls, code(k+"="+r.Labels[k]))
	}
	p.f("- labels: %s\n", strings.Join(ls, ", "))
	p.f("- annotations: %s\n\n", codes(sortedKeys(r.Annotations)))
	fenced(p, "promql", r.Expr)
	p.line("Description (alert template):")
	p.line("")
	fenced(p, "text", r.Annotations["description"])
	return nil
}
