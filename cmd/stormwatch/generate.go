package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

// Output file names, relative to -o.
const (
	rulesFile    = "stormwatch-rules.yaml"
	manifestFile = "stormwatch-prometheusrule.yaml"
	testsFile    = "stormwatch-rules.test.yaml"
	// The dependency SLOs' rules and tests, written only when the config has slos.
	sloRulesFile    = "stormwatch-slo-rules.yaml"
	sloManifestFile = "stormwatch-slo-prometheusrule.yaml"
	sloTestsFile    = "stormwatch-slo-rules.test.yaml"
	// The Alertmanager configuration fragment: routes and inhibit rules for the alerts.
	alertmanagerFile = "stormwatch-alertmanager.yaml"
)

// outFile is one file to write, relative to the output directory.
type outFile struct {
	// Path and Data are named as in rules.File and dashboards.File, so that those convert.
	Path string
	Data []byte
}

// target is one thing `generate` can produce; adding a generator is adding an entry.
type target struct {
	name    string
	summary string
	gen     func(c *config) ([]outFile, error)
}

var targets = []target{
	{"rules", "Prometheus rule file " + rulesFile + " (with --format operator: PrometheusRule manifest " + manifestsDir + "/" + manifestFile + "; with --target mimir: stormwatch-rules.mimir.yaml…), and " + sloRulesFile + " when the config has slos", genRules},
	{"tests", "promtool unit tests " + testsFile + " for the rules (and " + sloTestsFile + ")", genTests},
	{"runbooks", "one Markdown runbook per alert under " + rules.RunbookDir + "/", genRunbooks},
	{"dashboards", "Grafana dashboards under " + dashboards.Dir + "/ (and the SLOs dashboard when the config has slos)", genDashboards},
	{"mixin", "jsonnet monitoring mixin " + mixinFile + " (_config, prometheusRules, prometheusAlerts, grafanaDashboards)", genMixin},
	{"alertmanager", "Alertmanager configuration fragment " + alertmanagerFile + ": routes grouped per dependency, inhibit rules", genAlertmanager},
}

func genAlertmanager(c *config) ([]outFile, error) {
	b, err := rules.GenerateAlertmanager(c.rules)
	if err != nil {
		return nil, err
	}
	return []outFile{{alertmanagerFile, b}}, nil
}

func targetNames() []string {
	out := []string{"all"}
	for _, t := range targets {
		out = append(out, t.name)
	}
	return out
}

func genRules(c *config) ([]outFile, error) {
	b, err := rules.Generate(c.rules)
	if err != nil {
		return nil, err
	}
	name, sloName := ruleFileNames(c)
	out := []outFile{{name, b}}
	if len(c.rules.SLOs) > 0 {
		b, err := rules.GenerateSLORules(c.rules)
		if err != nil {
			return nil, err
		}
		out = append(out, outFile{sloName, b})
	}
	return out, nil
}

func genTests(c *config) ([]outFile, error) {
	b, err := rules.GenerateTests(c.rules, rulesFile)
	if err != nil {
		return nil, err
	}
	out := []outFile{{testsFile, b}}
	if !plainRules(c) {
		// promtool tests need a plain rule file; write it beside the manifest.
		plain, err := rules.GeneratePrometheus(c.rules)
		if err != nil {
			return nil, err
		}
		out = append(out, outFile{rulesFile, plain})
	}
	if len(c.rules.SLOs) > 0 {
		b, err := rules.GenerateSLOTests(c.rules, sloRulesFile)
		if err != nil {
			return nil, err
		}
		out = append(out, outFile{sloTestsFile, b})
		if !plainRules(c) {
			plain, err := rules.GenerateSLORulesPrometheus(c.rules)
			if err != nil {
				return nil, err
			}
			out = append(out, outFile{sloRulesFile, plain})
		}
	}
	return out, nil
}

func genRunbooks(c *config) ([]outFile, error) {
	return outFiles(rules.GenerateRunbooks(c.rules))
}

func genDashboards(c *config) ([]outFile, error) {
	out, err := dashboardFiles(c)
	if err != nil {
		return nil, err
	}
	return withConfigMaps(c, out)
}

// dashboardFiles are the dashboards' JSON files (and provisioning file, if asked for).
func dashboardFiles(c *config) ([]outFile, error) {
	out, err := outFiles(dashboards.Generate(c.dashboards))
	if err != nil || len(c.rules.SLOs) == 0 {
		return out, err
	}
	slos, err := rules.SLOs(c.rules)
	if err != nil {
		return nil, err
	}
	more, err := outFiles(dashboards.GenerateSLOs(c.dashboards, slos))
	return append(out, more...), err
}

// withConfigMaps adds the dashboards' ConfigMaps to files with --format operator.
func withConfigMaps(c *config, files []outFile) ([]outFile, error) {
	if c.rules.Format != rules.FormatOperator {
		return files, nil
	}
	cms, err := dashboardConfigMaps(c, files)
	return append(files, cms...), err
}

// outFiles converts the files of a generator that returns several.
func outFiles[F rules.File | dashboards.File](fs []F, err error) ([]outFile, error) {
	if err != nil {
		return nil, err
	}
	out := make([]outFile, len(fs))
	for i, f := range fs {
		out[i] = outFile(f)
	}
	return out, nil
}

func runGenerate(args []string, stdout, stderr io.Writer) int {
	if err := generate(args, stdout); err != nil {
		return report(stderr, "generate", err)
	}
	return exitOK
}

// generateFlags are generate's command-line flags.
type generateFlags struct {
	cfgPath, outDir, format string
	strict                  bool
	stacks                  stackFlags
}

// newGenerateFlags declares generate's flags on a new flag set.
func newGenerateFlags() (*flag.FlagSet, *generateFlags) {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	f := &generateFlags{}
	fs.StringVar(&f.cfgPath, "c", "", "config file (YAML); default: built-in defaults")
	fs.StringVar(&f.cfgPath, "config", "", "same as -c")
	fs.StringVar(&f.outDir, "o", ".", "output directory")
	fs.StringVar(&f.outDir, "out", ".", "same as -o")
	fs.StringVar(&f.format, "format", string(rules.FormatPrometheus), "rule file format: prometheus or operator (Kubernetes manifests under "+manifestsDir+"/: PrometheusRules and the dashboards as ConfigMaps)")
	f.stacks.register(fs)
	fs.BoolVar(&f.strict, "strict", false, "fail instead of warning when runbook_base_url or grafana_base_url is unset (the alerts then carry no runbook or dashboard link)")
	fs.Usage = func() { generateUsage(fs) }
	return fs, f
}

func generateUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, "usage: stormwatch generate [%s] [-c stormwatch.yaml] [-o dir] [--format prometheus|operator] [--target prometheus|mimir|thanos|victoriametrics]\n\ntargets:\n", quoteList(targetNames()))
	fmt.Fprintf(w, "  %-11s every target below (default)\n", "all")
	for _, t := range targets {
		fmt.Fprintf(w, "  %-11s %s\n", t.name, t.summary)
	}
	fmt.Fprintln(w, "\nflags:")
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nThe files are written all at once or not at all. generate owns only the paths it writes:")
	fmt.Fprintln(w, "other files under the output directory are left alone, including ones an earlier run wrote")
	fmt.Fprintln(w, "that this one does not (a disabled alert's runbook); remove the directory first for an exact tree.")
}

// parseGenerate parses generate's arguments — flags may come before or after the target — and
// returns the chosen targets.
func parseGenerate(args []string, stdout io.Writer) (*generateFlags, []target, error) {
	fs, f := newGenerateFlags()
	if err := parseFlags(fs, args, stdout); err != nil {
		return nil, nil, err
	}
	which := "all"
	if rest := fs.Args(); len(rest) > 0 {
		which = rest[0]
		if err := parseFlags(fs, rest[1:], stdout); err != nil {
			return nil, nil, err
		}
		if fs.NArg() > 0 {
			return nil, nil, usageErr("arguments", fs.Args(), "unexpected after the target %q (one target at most)", which)
		}
	}
	var chosen []target
	for _, t := range targets {
		if which == "all" || which == t.name {
			chosen = append(chosen, t)
		}
	}
	if len(chosen) == 0 {
		return nil, nil, usageErr("target", which, "unknown target (want one of %s)", strings.Join(targetNames(), ", "))
	}
	switch rules.Format(f.format) {
	case rules.FormatPrometheus, rules.FormatOperator:
	default:
		return nil, nil, usageErr("--format", f.format, "want prometheus or operator")
	}
	if f.outDir == "" {
		return nil, nil, usageErr("-o", f.outDir, "empty output directory")
	}
	return f, chosen, nil
}

func generate(args []string, stdout io.Writer) error {
	f, chosen, err := parseGenerate(args, stdout)
	if err != nil {
		return err
	}
	c, err := loadConfig(f.cfgPath)
	if err != nil {
		return err
	}
	c.rules.Format = rules.Format(f.format)
	if err := f.stacks.apply(c); err != nil {
		return err
	}
	files, runbooks, err := render(c, chosen)
	if err != nil {
		return err
	}
	warnings := linkWarnings(c, chosen)
	if f.strict && len(warnings) > 0 {
		return usageErr(warnings[0].field, "", "unset (--strict): %s", warnings[0].text)
	}
	if err := writeAll(f.outDir, files); err != nil {
		return err
	}
	reportWritten(stdout, f.outDir, len(files), runbooks, warnings)
	return nil
}

// render generates the chosen targets' files; runbooks says whether they include the runbooks.
func render(c *config, chosen []target) (files []outFile, runbooks bool, err error) {
	for _, t := range chosen {
		fs, err := t.gen(c)
		if err != nil {
			if err := c.locate(err); exitCode(err) == exitUsage {
				return nil, false, err
			}
			return nil, false, fmt.Errorf("%s: %w", t.name, err)
		}
		files = append(files, fs...)
		runbooks = runbooks || t.name == "runbooks"
	}
	return files, runbooks, nil
}

// reportWritten says what generate wrote, where the runbooks went and which links are missing.
func reportWritten(stdout io.Writer, outDir string, n int, runbooks bool, warnings []linkWarning) {
	noun := "files"
	if n == 1 {
		noun = "file"
	}
	fmt.Fprintf(stdout, "stormwatch: wrote %d %s under %s\n", n, noun, outDir)
	if runbooks {
		fmt.Fprintf(stdout, "stormwatch: runbooks in %s (one README.md per alert)\n", filepath.Join(outDir, rules.RunbookDir)+string(filepath.Separator))
	}
	for _, w := range warnings {
		fmt.Fprintf(stdout, "stormwatch: warning: %s is not set: %s\n", w.field, w.text)
	}
}

// linkWarning says that a base URL is unset, so the generated alerts lack a link.
type linkWarning struct{ field, text string }

// linkWarnings are the warnings of a generate run of the chosen targets with config c: the
// alerts carry a runbook_url only when runbook_base_url is set, a dashboard_url only when
// grafana_base_url is (a relative link is a dead one in Slack or PagerDuty).
func linkWarnings(c *config, chosen []target) []linkWarning {
	var rulesChosen bool
	for _, t := range chosen {
		rulesChosen = rulesChosen || t.name == "rules" || t.name == "runbooks"
	}
	if !rulesChosen {
		return nil
	}
	var out []linkWarning
	if c.rules.RunbookBaseURL == "" {
		out = append(out, linkWarning{"runbook_base_url", "the alerts carry no runbook_url; set it to where you publish the runbooks (" + rules.RunbookDir + "/<AlertName>)"})
	}
	if c.rules.GrafanaBaseURL == "" {
		out = append(out, linkWarning{"grafana_base_url", "the alerts carry no dashboard_url; set it to your Grafana's address"})
	}
	return out
}
