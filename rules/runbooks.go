package rules

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/escape"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// File is one generated file.
type File struct {
	// Path is relative to the output directory and uses forward slashes.
	Path string
	// Data is the file's content.
	Data []byte
}

// RunbookDir is the directory, relative to the output directory, that holds the runbooks.
const RunbookDir = "runbooks"

// The runbooks are data: the hand-written part of every alert's page (runbooks.yaml), rendered
// by the page templates (runbooks.md.tmpl) with the configured names and selector.
var (
	//go:embed runbooks.yaml
	runbooksYAML []byte
	//go:embed runbooks.md.tmpl
	runbooksTemplate string
)

// runbook is the hand-written part of one alert's runbook (runbooks.yaml).
type runbook struct {
	Meaning string `yaml:"meaning"`
	// Notes are extra paragraphs after the meaning ({window} expands as in Meaning).
	Notes []string `yaml:"notes"`
	// TripCauses adds the section on the breaker's trip causes.
	TripCauses bool        `yaml:"trip_causes"`
	Impact     string      `yaml:"impact"`
	Causes     []string    `yaml:"causes"`
	Queries    []query     `yaml:"queries"`
	Panels     [][2]string `yaml:"panels"` // row, title
	Mitigation []string    `yaml:"mitigation"`
}

type query struct {
	What string `yaml:"what"`
	Expr string `yaml:"expr"` // a text/template: see runbooks.yaml
}

// runbookData is runbooks.yaml: the runbooks by alert name, and the breaker's trip causes.
var runbookData = func() (d struct {
	TripCauses []struct{ Cause, Why, Look string } `yaml:"_trip_causes"`
	Alerts     map[string]runbook                  `yaml:",inline"`
}) {
	if err := yaml.Unmarshal(runbooksYAML, &d); err != nil {
		panic("rules: runbooks.yaml: " + err.Error()) // embedded data: a test catches it
	}
	return d
}()

// runbooks are the runbooks of the alerts, by alert name.
var runbooks = runbookData.Alerts

// alertPage is what the "alert" template renders: one alert's runbook.
type alertPage struct {
	runbook
	Name, Severity, Summary, Description string
	ThresholdDoc, Threshold, For, Keep   string
	MinInstances                         int
	Expr                                 string
}

// GenerateRunbooks renders one Markdown runbook per enabled alert, at
// runbooks/<AlertName>/README.md (so <runbook base URL>/<AlertName> renders on GitHub and in
// most static site generators), plus an index at runbooks/README.md. The investigation
// queries use the configured namespace and selector.
func GenerateRunbooks(cfg Config) ([]File, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	t := template.Must(template.New("runbooks").Funcs(r.runbookFuncs()).Parse(runbooksTemplate))
	var pages []alertPage
	for _, sp := range specs {
		if s := r.alerts[sp.name]; s.enabled {
			pages = append(pages, alertPage{runbook: runbooks[sp.name], Name: sp.name, Severity: s.severity, Summary: sp.summaryText(r, placeholder),
				Description:  sp.description(r, s, descArgs{ref: placeholder, value: "`<value>`", causes: "`<cause>`"}),
				ThresholdDoc: sp.thresholdDoc, Threshold: num(s.threshold), For: FormatDuration(s.forDur), Keep: FormatDuration(s.keep),
				MinInstances: s.minInstances, Expr: sp.expr(r, s)})
		}
	}
	var files []File
	render := func(dir, name string, data any) error {
		var b bytes.Buffer
		err := t.ExecuteTemplate(&b, name, data)
		files = append(files, File{Path: strings.TrimPrefix(dir+"/README.md", "/"), Data: b.Bytes()})
		return err
	}
	err = render("", "index", map[string]any{"Base": r.runbookBase, "Set": r.runbookSet, "Pages": pages, "SLOs": len(r.slos) > 0})
	for _, p := range pages {
		err = cmp.Or(err, render(p.Name, "alert", p))
	}
	if len(r.slos) > 0 {
		err = cmp.Or(err, render(AlertErrorBudgetBurn, "slo", struct {
			runbook
			Rules []BurnRateRule
			SLOs  []*resolvedSLO
		}{runbooks[AlertErrorBudgetBurn], BurnRateRules, r.slos}))
	}
	for i := range files {
		files[i].Path = RunbookDir + "/" + files[i].Path
	}
	return files, err
}

// runbookFuncs are the functions of the runbook templates and of runbooks.yaml's queries.
// Metrics are named by their full name without namespace, and checked against the catalog.
func (r *resolved) runbookFuncs() template.FuncMap {
	metric := func(name string) (catalog.Metric, string, error) { // the metric, and "_count" for a histogram's
		for _, m := range catalog.All() {
			switch m.FullName("") {
			case name:
				return m, "", nil
			case strings.TrimSuffix(name, "_count"):
				return m, "_count", nil
			}
		}
		return catalog.Metric{}, "", fmt.Errorf("no metric %q in the catalog", name)
	}
	recs := map[string]func() string{
		"retry_rate": r.recRetryRate, "rescue_rate": r.recRescueRate, "retry_attempts": r.recRetryAttempts,
		"budget_denied": r.recBudgetDenied, "breaker_rejection_ratio": r.recBreakerRejectionRatio,
		"bulkhead_rejection_ratio": r.recBulkheadRejectionRatio, "fallbacks_by_cause": r.recFallbacksByCause,
		"fallbacks": r.recFallbacks, "failed": r.recFailed, "unrescued_ratio": r.recUnrescuedRatio,
	}
	f := template.FuncMap{
		"rng": r.rangeOf, "md": escape.Markdown, "code": escape.CodeSpan, "pct": pct, "num": num, "dur": FormatDuration,
		"window": func(s string) string { return withWindow(s, r.rateWindow) },
		"title":  func(dashboard string) string { return escape.Markdown(r.titlePrefix) + " / " + dashboard },
		"plus1":  func(i int) int { return i + 1 },
		"name": func(name string) (string, error) {
			m, _, err := metric(name)
			return r.name(m), err
		},
		// m is a selector of the named primitive (name="<name>", the configured selector and
		// the given label=value matchers) on a metric or its histogram's _count.
		"m": func(name string, matchers ...string) (string, error) {
			m, suffix, err := metric(name)
			var own []selector.Matcher
			for _, lv := range matchers {
				l, v, _ := strings.Cut(lv, "=")
				own = append(own, eq(l, v))
			}
			return r.nameSel(r.name(m)+suffix, own...), err
		},
		// v is the label (and value) of a metric, or an error when the catalog has no such.
		"v": func(name, label string, value ...string) (string, error) {
			m, _, err := metric(name)
			if l, ok := m.Label(label); err != nil || !ok || len(value) > 0 && !slices.Contains(l.Values, value[0]) {
				return "", fmt.Errorf("no label %s of %q in the catalog", strings.Join(append([]string{label}, value...), "="), name)
			}
			return append([]string{label}, value...)[len(value)], nil
		},
		"rec": func(key string) (string, error) {
			if f, ok := recs[key]; ok {
				return r.sel(f(), eq(catalog.LabelName, "<name>")), nil
			}
			return "", fmt.Errorf("no recorded series %q", key)
		},
		"sloName": r.sloRecorded,
		"slo": func(metric, ops string) string {
			return r.sel(r.sloRecorded(metric, ops), eq(LabelSLO, "<slo>"), eq(catalog.LabelName, "<name>"))
		},
		"budget":     (*resolvedSLO).budgetShare,
		"burns":      r.burnRows,
		"tripCauses": func() any { return runbookData.TripCauses },
	}
	f["expand"] = func(expr string) (string, error) {
		var b strings.Builder
		t, err := template.New("query").Funcs(f).Parse(expr)
		if err == nil {
			err = t.Execute(&b, nil)
		}
		return b.String(), err
	}
	return f
}

// burnRows are the burn rules of an SLO as its runbook shows them.
func (r *resolved) burnRows(s *resolvedSLO) []map[string]string {
	var rows []map[string]string
	for _, b := range s.burns {
		guard := "none"
		if b.minCalls > 0 {
			guard = fmt.Sprint(b.minCalls)
		}
		rows = append(rows, map[string]string{"Severity": b.severity, "Factor": num(b.Factor), "Threshold": pct(decimalFloat(b.threshold)),
			"Long": FormatDuration(b.long), "Short": FormatDuration(b.short), "Guard": guard, "Expr": r.burnExpr(s, b)})
	}
	return rows
}

// placeholder renders a label's value in a runbook.
func placeholder(l string) string { return "`<" + l + ">`" }

// nameSel is a selector for one named primitive, with the configured selector.
func (r *resolved) nameSel(series string, own ...selector.Matcher) string {
	return r.sel(series, append([]selector.Matcher{eq(catalog.LabelName, "<name>")}, own...)...)
}
