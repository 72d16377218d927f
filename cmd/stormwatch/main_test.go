package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/internal/promtooltest"
	"github.com/stormwatch-go/stormwatch/rules"
)

// bin is the stormwatch binary built by TestMain; the tests run it as users do.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stormwatch-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "stormwatch")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building stormwatch:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// runBin runs the binary with args in dir.
func runBin(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runCmd(t, dir, bin, args...)
}

func runCmd(t *testing.T, dir, name string, args ...string) result {
	t.Helper()
	// promtool runs the generated tests, about a minute of CPU: generous for shared machines.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s timed out", name)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// listFiles returns the files under dir, relative, with forward slashes.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	}))
	sort.Strings(out)
	return out
}

// defaultDashboardFiles are the paths the dashboards package generates by default.
func defaultDashboardFiles(t *testing.T) []string {
	fs, err := dashboards.Generate(dashboards.Config{})
	require.NoError(t, err)
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	sort.Strings(out)
	require.NotEmpty(t, out)
	return out
}

func TestGenerateDefaults(t *testing.T) {
	dir := t.TempDir()
	res := runBin(t, dir, "generate", "-o", "out")
	require.Equal(t, 0, res.code, res.stderr)
	files := listFiles(t, filepath.Join(dir, "out"))
	assert.Contains(t, files, "stormwatch-rules.yaml")
	assert.Contains(t, files, "stormwatch-rules.test.yaml")
	assert.Contains(t, files, "runbooks/README.md")
	assert.Contains(t, files, "runbooks/CircuitBreakerStuckOpen/README.md")
	assert.Contains(t, files, "dashboards/stormwatch-overview.json")
	assert.Contains(t, files, mixinFile)
	assert.Contains(t, files, alertmanagerFile)
	assert.Len(t, files, 3+len(rules.AlertNames())+1+len(defaultDashboardFiles(t))+1) // rules, tests, Alertmanager fragment, a runbook per alert and the index, dashboards, mixin
	assert.Contains(t, res.stdout, fmt.Sprintf("wrote %d files", len(files)))

	out := filepath.Join(dir, "out")
	msg, ok := promtooltest.Run(t, out, "check", "rules", "--lint=all", "--lint-fatal", "stormwatch-rules.yaml")
	require.True(t, ok, msg)
	msg, ok = promtooltest.Run(t, out, "test", "rules", "stormwatch-rules.test.yaml")
	require.True(t, ok, msg)
}

// TestCheckedInDefaultsAreCurrent fails when examples/generated differs from what the
// current code generates (regenerate with `make generate`).
func TestCheckedInDefaultsAreCurrent(t *testing.T) {
	dir := t.TempDir()
	res := runBin(t, dir, "generate", "all", "-o", "out")
	require.Equal(t, 0, res.code, res.stderr)
	golden := "../../examples/generated"
	got, want := listFiles(t, filepath.Join(dir, "out")), listFiles(t, golden)
	require.Equal(t, want, got, "examples/generated is stale: run `make generate`")
	for _, f := range got {
		a, err := os.ReadFile(filepath.Join(dir, "out", f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(golden, f))
		require.NoError(t, err)
		assert.Equal(t, string(b), string(a), "%s is stale: run `make generate`", f)
	}
}

func TestGenerateTargetsAndFormat(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"generate", "rules", "-o", "out"}, []string{"stormwatch-rules.yaml"}},
		{[]string{"generate", "-o", "out", "tests"}, []string{"stormwatch-rules.test.yaml"}},
		{[]string{"generate", "runbooks", "--out", "out"}, nil},
		{[]string{"generate", "dashboards", "-o", "out"}, defaultDashboardFiles(t)},
		{[]string{"generate", "rules", "-o", "out", "--format", "operator"}, []string{"manifests/stormwatch-prometheusrule.yaml"}},
		{[]string{"generate", "tests", "-o", "out", "--format=operator"}, []string{"stormwatch-rules.test.yaml", "stormwatch-rules.yaml"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			res := runBin(t, dir, tc.args...)
			require.Equal(t, 0, res.code, res.stderr)
			files := listFiles(t, filepath.Join(dir, "out"))
			if tc.want == nil {
				require.Len(t, files, len(rules.AlertNames())+1)
				for _, f := range files {
					assert.True(t, strings.HasPrefix(f, "runbooks/"), f)
				}
				return
			}
			assert.Equal(t, tc.want, files)
		})
	}
	dir := t.TempDir()
	require.Equal(t, 0, runBin(t, dir, "generate", "rules", "-o", ".", "--format", "operator").code)
	b, err := os.ReadFile(filepath.Join(dir, "manifests", "stormwatch-prometheusrule.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "kind: PrometheusRule")
}

func TestConfigFileIsApplied(t *testing.T) {
	dir := t.TempDir()
	cfg := `# stormwatch config
namespace: acme
selector: 'job="checkout"'
group_by: [cluster, job, name]
runbook_base_url: https://wiki.example.com/runbooks
alerts:
  RetryRateHigh:
    threshold: 0.2
    for: 10m
    keep_firing_for: 1m
    severity: critical
  FallbackSustained:
    enabled: false
rate_window: 2m
dashboards:
  title_prefix: Checkout
  uid_prefix: checkout
  provisioning: true
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stormwatch.yaml"), []byte(cfg), 0o644))
	res := runBin(t, dir, "generate", "-c", "stormwatch.yaml", "-o", "out")
	require.Equal(t, 0, res.code, res.stderr)
	rulesYAML, err := os.ReadFile(filepath.Join(dir, "out", "stormwatch-rules.yaml"))
	require.NoError(t, err)
	s := string(rulesYAML)
	assert.Contains(t, s, `cluster_job_name:acme_retry_attempts_per_call:ratio_rate2m{job="checkout"} > 0.2`)
	assert.Contains(t, s, `sum by (cluster, job, name) (rate(acme_retry_attempts_total{job="checkout"}[2m]))`)
	assert.NotContains(t, s, "rate5m")
	assert.NotContains(t, s, "[5m]")
	assert.Contains(t, s, "for: 10m\n        keep_firing_for: 1m\n        labels:\n          severity: critical")
	assert.Contains(t, s, "https://wiki.example.com/runbooks/RetryRateHigh")
	assert.NotContains(t, s, "FallbackSustained")
	files := listFiles(t, filepath.Join(dir, "out"))
	assert.NotContains(t, files, "runbooks/FallbackSustained/README.md")
	assert.Contains(t, files, "dashboards/checkout-overview.json")
	var prov bool
	for _, f := range files {
		if strings.HasPrefix(f, "dashboards/") && strings.HasSuffix(f, ".yaml") {
			prov = true
		}
	}
	assert.True(t, prov, "provisioning file written: %v", files)
	dash, err := os.ReadFile(filepath.Join(dir, "out", "dashboards", "checkout-overview.json"))
	require.NoError(t, err)
	assert.Contains(t, string(dash), `acme_circuitbreaker`)
	assert.Contains(t, string(dash), `job=\"checkout\"`)
	rb, err := os.ReadFile(filepath.Join(dir, "out", "runbooks", "RetryRateHigh", "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(rb), "opens the **Checkout / Dependency** dashboard", "runbooks point at the configured dashboard title")

	// An empty namespace means no prefix.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty-ns.yaml"), []byte("namespace: \"\"\n"), 0o644))
	res = runBin(t, dir, "generate", "rules", "-c", "empty-ns.yaml", "-o", "out2")
	require.Equal(t, 0, res.code, res.stderr)
	b, err := os.ReadFile(filepath.Join(dir, "out2", "stormwatch-rules.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "job_name:retry_attempts:rate5m")
	assert.NotContains(t, string(b), "resilience_")
}

// TestInvalidConfigExits2WithFileLine runs the binary on broken configs: exit 2 and an error
// naming file:line and the field path.
func TestInvalidConfigExits2WithFileLine(t *testing.T) {
	cases := []struct {
		name, cfg string
		want      string // regexp on stderr
	}{
		{"unknown key", "namespace: acme\nselectr: 'job=\"a\"'\n", `c\.yaml:2: selectr: unknown key \(known keys: alerts, dashboards, grafana_base_url, group_by, kubernetes, namespace, rate_window, runbook_base_url, scrape_interval, selector, slos, target\)`},
		{"unknown nested key", "alerts:\n  RetryRateHigh:\n    treshold: 0.1\n", `c\.yaml:3: alerts\.RetryRateHigh\.treshold: unknown key`},
		{"unknown dashboards key", "dashboards:\n  title: x\n", `c\.yaml:2: dashboards\.title: unknown key`},
		{"threshold out of range", "alerts:\n  BulkheadSaturated:\n    threshold: 1.5\n", `c\.yaml:3: alerts\.BulkheadSaturated\.threshold = 1\.5: out of range \(0, 1\)`},
		{"threshold not a number", "alerts:\n  RetryRateHigh:\n    threshold: high\n", `c\.yaml:3: alerts\.RetryRateHigh\.threshold = "high": want a number, got a string: retry rate: extra attempts per logical call, a number in \(0, 10\]`},
		{"stuck-open threshold as a duration", "alerts:\n  CircuitBreakerStuckOpen:\n    threshold: 1m\n", `c\.yaml:3: alerts\.CircuitBreakerStuckOpen\.threshold = "1m": want a number of seconds, got a string: seconds the breaker has not been closed .*, a whole number in \[15, 86400\]; write 60 for 1m`},
		{"threshold not finite", "alerts:\n  RetryRateHigh:\n    threshold: .nan\n", `c\.yaml:3: alerts\.RetryRateHigh\.threshold = \.nan: want a finite number`},
		{"bad duration", "alerts:\n  RetryRateHigh:\n\n    for: 5 minutes\n", `c\.yaml:4: alerts\.RetryRateHigh\.for = "5 minutes": not a Prometheus duration`},
		{"duration out of range", "alerts:\n  RetryRateHigh:\n    keep_firing_for: 2d\n", `c\.yaml:3: alerts\.RetryRateHigh\.keep_firing_for = 2d: longer than 1d`},
		{"rate window too short", "namespace: acme\nrate_window: 20s\n", `c\.yaml:2: rate_window = 20s: out of range \[30s, 1h\]`},
		{"rate window too long", "rate_window: 2h\n", `c\.yaml:1: rate_window = 2h: out of range \[30s, 1h\]`},
		{"rate window zero", "rate_window: 0\n", `c\.yaml:1: rate_window = 0s: out of range \[30s, 1h\]`},
		{"rate window not a duration", "rate_window: 5\n", `c\.yaml:1: rate_window = 5: want a duration such as 30s, 5m, 1h30m or 1d: a number needs a unit`},
		{"scrape interval too long", "scrape_interval: 10m\n", `c\.yaml:1: scrape_interval = 10m: out of range \[1s, 5m\]`},
		{"scrape interval over a quarter of the rate window", "rate_window: 1m\nscrape_interval: 45s\n", `c\.yaml:2: scrape_interval = 45s: more than a quarter of the rate window 1m`},
		{"unparsable selector", "namespace: acme\nselector: 'job=\"checkout'\n", `c\.yaml:2: selector = .*unterminated quoted string`},
		{"selector no test value satisfies", "selector: 'job!~\".*\"'\n", `c\.yaml:1: selector: cannot generate tests: no test value for label "job" satisfies the selector \{job!~".\*"\}`},
		{"selector with bad regexp", "selector: 'job=~\"(\"'\n", `c\.yaml:1: selector = .*regular expression`},
		{"unknown alert", "alerts:\n  RetryRateHgh:\n    enabled: false\n", `c\.yaml:2: alerts\.RetryRateHgh: unknown alert \(known: CircuitBreakerStuckOpen, `},
		{"bad severity", "alerts:\n  RetryRateHigh:\n    severity: page\n", `c\.yaml:3: alerts\.RetryRateHigh\.severity = "page": not one of info, warning, critical`},
		{"enabled not a bool", "alerts:\n  RetryRateHigh:\n    enabled: nope\n", `c\.yaml:3: alerts\.RetryRateHigh\.enabled = "nope": want true or false, got a string`},
		{"group_by not a list", "group_by: job\n", `c\.yaml:1: group_by = "job": want a list of label names`},
		{"group_by with instance", "group_by:\n  - job\n  - instance\n", `c\.yaml:1: group_by = \[job, instance\]: "instance" must not be listed`},
		{"min_instances on another alert", "alerts:\n  RetryRateHigh:\n    min_instances: 2\n", `c\.yaml:3: alerts\.RetryRateHigh\.min_instances = 2: only CircuitBreakerOpenFleetWide has min_instances`},
		{"min_instances not a number", "alerts:\n  CircuitBreakerOpenFleetWide:\n    min_instances: two\n", `c\.yaml:3: alerts\.CircuitBreakerOpenFleetWide\.min_instances = "two": want a whole number of instances, got a string`},
		{"grafana_base_url with a query", "grafana_base_url: https://grafana.example.com/?orgId=1\n", `c\.yaml:1: grafana_base_url = "https://grafana.example.com/\?orgId=1": must not have a query or fragment`},
		{"group_by too long", "group_by: [name, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p]\n", `c\.yaml:1: group_by: 17 labels, at most 16 allowed`},
		{"bad namespace", "namespace: 1abc\n", `c\.yaml:1: namespace = "1abc": not a valid metric name prefix: invalid character '1' at offset 0`},
		{"template syntax in the runbook url", "runbook_base_url: \"https://x/{{\"\n", `c\.yaml:1: runbook_base_url = "https://x/\{\{": character '\{' at offset 10 is not allowed in a URL \(percent-encode it as %7B`},
		{"runbook url with a query", "\nrunbook_base_url: https://x/rb?page=1\n", `c\.yaml:2: runbook_base_url = "https://x/rb\?page=1": must not have a query or fragment`},
		{"bad uid prefix", "dashboards:\n  uid_prefix: 'a b'\n", `c\.yaml:2: dashboards\.uid_prefix = "a b": invalid character ' '`},
		{"bad histogram form", "dashboards:\n  histograms: both\n", `c\.yaml:2: dashboards\.histograms = "both": unknown histogram form \(want "native" or "classic"\)`},
		{"duplicate key", "namespace: a\nnamespace: b\n", `c\.yaml:2: namespace: duplicate key \(first at line 1\)`},
		{"duplicate alert", "alerts:\n  RetryRateHigh: {}\n  RetryRateHigh: {}\n", `c\.yaml:3: alerts\.RetryRateHigh: duplicate key \(first at line 2\)`},
		{"not a mapping", "- a\n- b\n", `c\.yaml:1: want a mapping of keys to values, got a list`},
		{"key not a name", "? [a]\n: b\n", `c\.yaml:1: a key must be a plain name, got a list`},
		{"alias", "namespace: &a x\nselector: *a\n", `c\.yaml:2: selector: want a string, got an alias \(anchors and aliases are not supported\)`},
		{"yaml syntax", "namespace: x\nalerts: [\n", `c\.yaml:\d+: YAML: did not find expected node content`},
		{"two documents", "namespace: a\n---\nnamespace: b\n", `c\.yaml:2: a second YAML document`},
		{"invalid UTF-8", "namespace: x\nselector: \"\xff\"\n", `c\.yaml:2: invalid UTF-8 at byte offset 24`},
		{"too large", "# " + strings.Repeat("x", maxConfigSize) + "\n", `c\.yaml: larger than 1024 KiB, the limit of a config file`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(tc.cfg), 0o644))
			res := runBin(t, dir, "generate", "-c", "c.yaml", "-o", "out")
			assert.Equal(t, 2, res.code, res.stderr)
			assert.Regexp(t, regexp.MustCompile(`^stormwatch generate: `+tc.want), res.stderr)
			assert.Equal(t, 1, strings.Count(res.stderr, "\n"), "one line: %s", res.stderr)
			assert.Empty(t, res.stdout)
			_, err := os.Stat(filepath.Join(dir, "out"))
			assert.True(t, os.IsNotExist(err), "nothing is written on a config error")
		})
	}
}

func TestUsageAndRuntimeErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644))
	cases := []struct {
		args []string
		code int
		want string // the whole of stderr but the usage that follows some
	}{
		{nil, 2, "usage: stormwatch"},
		{[]string{"frobnicate"}, 2, `stormwatch: unknown command "frobnicate"`},
		{[]string{"generate", "everything"}, 2, `stormwatch generate: target = "everything": unknown target (want one of all, rules, tests, runbooks, dashboards, mixin, alertmanager)` + "\n"},
		{[]string{"generate", "rules", "tests"}, 2, `stormwatch generate: arguments = [tests]: unexpected after the target "rules" (one target at most)` + "\n"},
		{[]string{"generate", "--bogus"}, 2, "stormwatch generate: flag provided but not defined: -bogus (run 'stormwatch generate -h' for usage)\n"},
		{[]string{"generate", "-o"}, 2, "stormwatch generate: flag needs an argument: -o (run 'stormwatch generate -h' for usage)\n"},
		{[]string{"generate", "rules", "-o"}, 2, "stormwatch generate: flag needs an argument: -o (run 'stormwatch generate -h' for usage)\n"},
		{[]string{"generate", "--format", "json"}, 2, `stormwatch generate: --format = "json": want prometheus or operator` + "\n"},
		{[]string{"generate", "-c", "missing.yaml"}, 2, "stormwatch generate: missing.yaml: reading config: no such file or directory\n"},
		{[]string{"version", "extra"}, 2, "stormwatch version: arguments = [extra]: version takes no arguments\n"},
		{[]string{"version", "--short"}, 2, "stormwatch version: flag provided but not defined: -short (run 'stormwatch version -h' for usage)\n"},
		{[]string{"generate", "rules", "-o", "file"}, 1, "stormwatch generate: output directory file exists and is not a directory\n"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := runBin(t, dir, tc.args...)
			assert.Equal(t, tc.code, res.code, res.stderr)
			if strings.HasPrefix(tc.want, "usage:") || strings.HasPrefix(tc.want, "stormwatch: unknown") {
				assert.True(t, strings.HasPrefix(res.stderr, tc.want), res.stderr)
			} else {
				assert.Equal(t, tc.want, res.stderr, "printed once, on one line")
			}
			assert.Empty(t, res.stdout)
		})
	}
}

// TestHelpGoesToStdout: every spelling of help, for every command, prints the usage on stdout
// (so `| less` shows it) and exits 0.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"-help"}, {"help"},
		{"generate", "-h"}, {"generate", "--help"}, {"generate", "rules", "-h"}, {"generate", "-o", "x", "--help"}, {"help", "generate"},
		{"demo", "-h"}, {"demo", "--help"}, {"help", "demo"},
		{"version", "-h"}, {"version", "--help"}, {"help", "version"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			res := runBin(t, dir, args...)
			assert.Equal(t, 0, res.code, res.stderr)
			assert.Empty(t, res.stderr)
			assert.Regexp(t, `^usage: stormwatch`, res.stdout)
			if len(args) > 1 && args[0] != "help" {
				assert.Contains(t, res.stdout, "usage: stormwatch "+args[0])
			}
			assert.Empty(t, listFiles(t, dir), "help does nothing else")
		})
	}
}

func TestVersion(t *testing.T) {
	res := runBin(t, t.TempDir(), "version")
	require.Equal(t, 0, res.code)
	assert.Regexp(t, `^stormwatch \S+ go1\.\d+`, res.stdout)

	dir := t.TempDir()
	stamped := filepath.Join(dir, "stormwatch")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7", "-o", stamped, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	res = runCmd(t, dir, stamped, "version")
	require.Equal(t, 0, res.code)
	assert.True(t, strings.HasPrefix(res.stdout, "stormwatch v9.8.7 "), res.stdout)
}

func BenchmarkGenerateAll(b *testing.B) {
	c, err := loadConfig("")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		for _, tg := range targets {
			if _, err := tg.gen(c); err != nil {
				b.Fatal(err)
			}
		}
	}
}
