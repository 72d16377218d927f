package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
	{"rules", "Prometheus rule file " + rulesFile + " (with --format operator: PrometheusRule manifest " + manifestFile + ")", genRules},
	{"tests", "promtool unit tests " + testsFile + " for the rules", genTests},
	{"runbooks", "one Markdown runbook per alert under " + rules.RunbookDir + "/", genRunbooks},
	{"dashboards", "Grafana dashboards under " + dashboards.Dir + "/", genDashboards},
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
	name := rulesFile
	if c.rules.Format == rules.FormatOperator {
		name = manifestFile
	}
	return []outFile{{name, b}}, nil
}

func genTests(c *config) ([]outFile, error) {
	b, err := rules.GenerateTests(c.rules, rulesFile)
	if err != nil {
		return nil, err
	}
	out := []outFile{{testsFile, b}}
	if c.rules.Format == rules.FormatOperator {
		// promtool tests need a plain rule file; write it beside the manifest.
		plain, err := rules.GeneratePrometheus(c.rules)
		if err != nil {
			return nil, err
		}
		out = append(out, outFile{rulesFile, plain})
	}
	return out, nil
}

func genRunbooks(c *config) ([]outFile, error) {
	return outFiles(rules.GenerateRunbooks(c.rules))
}

func genDashboards(c *config) ([]outFile, error) {
	return outFiles(dashboards.Generate(c.dashboards))
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
	err := generate(args, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	}
	fmt.Fprintf(stderr, "stormwatch generate: %v\n", err)
	return exitCode(err)
}

func generate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfgPath, outDir, format string
	fs.StringVar(&cfgPath, "c", "", "config file (YAML); default: built-in defaults")
	fs.StringVar(&cfgPath, "config", "", "same as -c")
	fs.StringVar(&outDir, "o", ".", "output directory")
	fs.StringVar(&outDir, "out", ".", "same as -o")
	fs.StringVar(&format, "format", string(rules.FormatPrometheus), "rule file format: prometheus or operator")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: stormwatch generate [%s] [-c stormwatch.yaml] [-o dir] [--format prometheus|operator]\n\ntargets:\n", quoteList(targetNames()))
		fmt.Fprintf(stderr, "  %-11s every target below (default)\n", "all")
		for _, t := range targets {
			fmt.Fprintf(stderr, "  %-11s %s\n", t.name, t.summary)
		}
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	// Flags may come before or after the target.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	which := "all"
	if rest := fs.Args(); len(rest) > 0 {
		which = rest[0]
		if err := fs.Parse(rest[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usagef("%v", err)
		}
		if len(fs.Args()) > 0 {
			return usagef("unexpected arguments %q (one target at most)", fs.Args())
		}
	}
	var chosen []target
	for _, t := range targets {
		if which == "all" || which == t.name {
			chosen = append(chosen, t)
		}
	}
	if len(chosen) == 0 {
		return usagef("unknown target %q (want one of %s)", which, strings.Join(targetNames(), ", "))
	}
	switch rules.Format(format) {
	case rules.FormatPrometheus, rules.FormatOperator:
	default:
		return usagef("--format %q: want prometheus or operator", format)
	}
	if outDir == "" {
		return usagef("-o: empty output directory")
	}

	c, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	c.rules.Format = rules.Format(format)

	var files []outFile
	for _, t := range chosen {
		fs, err := t.gen(c)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		files = append(files, fs...)
	}
	for _, f := range files {
		if err := writeFile(outDir, f); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "stormwatch: wrote %d files under %s\n", len(files), outDir)
	return nil
}

// writeFile writes f under dir, creating directories; paths must stay inside dir.
func writeFile(dir string, f outFile) error {
	rel := filepath.FromSlash(f.Path)
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("refusing to write %q outside the output directory", f.Path)
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, f.Data, 0o644)
}
