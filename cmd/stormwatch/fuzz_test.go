package main

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"text/template"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/rules"
)

// FuzzConfig feeds arbitrary bytes to the config loader. Properties: it never panics; a
// rejected config is a *catalog.ConfigError (exit 2) naming a position in the file; an
// accepted one generates every target (the tests may still refuse a selector no label value
// satisfies, as a located config error), and its rule file is what Prometheus loads: strict
// YAML whose annotations and labels are templates that parse and expand to plain text, with
// runbook_url expanding to the configured base plus the alert name.
// Every input under 1 MiB also stays bounded (checkBounded): generate's heap peaks under
// 256 MB and it writes at most 20 MB, or it stops at a config error on one line (exit 2); the
// promtool half of the contract is TestHostileConfigsPassPromtool.
// The seed corpus is in testdata/fuzz/FuzzConfig (issue 14's hostile inputs among them).
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		"namespace: acme\n", "alerts:\n  RetryRateHigh:\n    threshold: 0.1\n    for: 5m\n",
		"group_by: [job, name]\n", "rate_window: 1m\n", "selector: 'job=\"a\"'\n", "dashboards: {uid_prefix: x}\n",
		"runbook_base_url: https://wiki.example.com/rb\n", "runbook_base_url: \"https://x/{{\"\n",
	} {
		f.Add([]byte(s))
	}
	for _, hc := range hostileConfigs() {
		if !hc.accept { // the accepted ones take seconds each: TestHostileConfigsStayBounded runs them
			f.Add([]byte(hc.data))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= maxConfigSize {
			return
		}
		st, accepted := checkBounded(t, data)
		if !accepted {
			return
		}
		// Accepted: checkBounded generated every target from this config (as `generate all`
		// does) and none failed — a selector no label value satisfies is refused there, as a
		// located config error on the selector's line. Its files are checked here, not
		// generated again.
		c, err := parseConfig("c.yaml", data)
		if err != nil {
			t.Fatalf("%q: accepted by generate, refused by parseConfig: %v", data, err)
		}
		if len(st.files) == 0 {
			t.Fatalf("%q: accepted, but no file generated", data)
		}
		name, _ := ruleFileNames(c)
		i := slices.IndexFunc(st.files, func(f outFile) bool { return f.Path == name })
		if i < 0 {
			t.Fatalf("%q: accepted, but %s was not generated", data, name)
		}
		want, err := rules.Generate(c.rules)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(st.files[i].Data, want) {
			t.Fatalf("%q: %s is not rules.Generate's output", data, name)
		}
		checkRuleFile(t, st.files[i].Data, c.rules.RunbookBaseURL)
	})
}

// checkRuleFile checks a generated rule file the way Prometheus loads it: strict YAML, and
// every label and annotation a Go text/template that parses and expands without a template
// action of the configuration's making (runbook_url expands to the base and the alert name).
func checkRuleFile(t *testing.T, data []byte, runbookBase string) {
	t.Helper()
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Record        string            `yaml:"record"`
				Alert         string            `yaml:"alert"`
				Expr          string            `yaml:"expr"`
				For           string            `yaml:"for"`
				KeepFiringFor string            `yaml:"keep_firing_for"`
				Labels        map[string]string `yaml:"labels"`
				Annotations   map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("rule file does not decode: %v", err)
	}
	if runbookBase == "" {
		runbookBase = rules.DefaultRunbookBaseURL
	}
	runbookBase = strings.TrimSuffix(runbookBase, "/")
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
				got := expand(t, r.Annotations[k])
				if !utf8.ValidString(got) {
					t.Fatalf("%s %s: invalid UTF-8", r.Alert, k)
				}
				if k == "runbook_url" && got != runbookBase+"/"+r.Alert {
					t.Fatalf("%s: runbook_url expands to %q, want %q", r.Alert, got, runbookBase+"/"+r.Alert)
				}
			}
			for k, v := range r.Labels {
				expand(t, v)
				if k == "severity" && !slices.Contains(rules.Severities, v) {
					t.Fatalf("%s: severity %q", r.Alert, v)
				}
			}
		}
	}
}

// promSample is what Prometheus's query template function returns, one per series.
type promSample struct {
	Labels map[string]string
	Value  float64
}

// promFuncs stand in for the template functions Prometheus defines for alert templates (the
// generated annotations use these; the real ones are checked by promtool test rules). query
// returns nothing here.
var promFuncs = template.FuncMap{
	"humanize":           func(v float64) string { return fmt.Sprint(v) },
	"humanizePercentage": func(v float64) string { return fmt.Sprintf("%.4g%%", v*100) },
	"humanizeDuration":   func(v float64) string { return fmt.Sprintf("%.4gs", v) },
	"query":              func(string) ([]promSample, error) { return nil, nil },
	"first": func(s []promSample) (promSample, error) {
		if len(s) == 0 {
			return promSample{}, fmt.Errorf("first() called on an empty result")
		}
		return s[0], nil
	},
	"label":       func(l string, s promSample) string { return s.Labels[l] },
	"sortByLabel": func(l string, s []promSample) []promSample { return s },
}

// expand expands s as Prometheus expands alert annotations (Go text/template with $labels and
// $value defined, and Prometheus's template functions).
func expand(t *testing.T, s string) string {
	t.Helper()
	tmpl, err := template.New("a").Option("missingkey=zero").Funcs(promFuncs).Parse("{{ $labels := .Labels }}{{ $value := .Value }}" + s)
	if err != nil {
		t.Fatalf("annotation %q does not parse as a template: %v", s, err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, map[string]any{"Labels": map[string]string{}, "Value": 0.0}); err != nil {
		t.Fatalf("annotation %q does not expand: %v", s, err)
	}
	return b.String()
}
