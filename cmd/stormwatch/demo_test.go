package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/internal/promtooltest"
)

// runInProcess runs the CLI's run function and returns its exit code and outputs.
func runInProcess(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestDemoUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--listen", "0.0.0.0:9464"}, `--listen "0.0.0.0:9464"`},
		{[]string{"demo", "--listen", ":9464"}, `--listen ":9464"`},
		{[]string{"demo", "--scenario", "meltdown"}, `--scenario "meltdown"`},
		{[]string{"demo", "--speed", "0.0"}, "--speed 0"},
		{[]string{"demo", "--rps", "-1"}, "--rps -1"},
		{[]string{"demo", "--log-format", "xml"}, `--log-format "xml"`},
		{[]string{"demo", "--log-file", os.TempDir()}, "--log-file"},
		{[]string{"demo", "--outage", "0s"}, "--outage 0s"},
		{[]string{"demo", "--outage", "-1m"}, "--outage -1m0s"},
		{[]string{"demo", "--scenario", "flapping", "--outage", "9m"}, `scenario "flapping" has no single fault window`},
		{[]string{"demo", "--scenario", "retry-storm", "--no-fallback"}, `--no-fallback: scenario "retry-storm" replays its own setups`},
		{[]string{"demo", "extra"}, "unexpected arguments"},
		{[]string{"demo", "--bogus"}, "flag provided but not defined"},
		{[]string{"demo", "--prometheus", "/no/such/prometheus"}, "make tools-prometheus"},
		{[]string{"demo", "--prometheus", "/no/such/prometheus", "--prometheus-listen", "0.0.0.0:9090"}, `--prometheus-listen "0.0.0.0:9090"`},
		{[]string{"demo", "--prometheus", "/no/such/prometheus", "--scenario", "meltdown"}, `--scenario "meltdown"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runInProcess(tc.args...)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

func TestDemoPrintProfile(t *testing.T) {
	code, stdout, stderr := runInProcess("demo", "--print-profile")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, demo.AlertsProfile(), stdout)
	assert.Contains(t, stdout, "rate_window: 30s")
}

// TestDemoProfileRules: the demo profile is a valid stormwatch.yaml whose rules promtool accepts
// (lint included) and whose generated unit tests pass; the alerts the outage must fire within
// 3 minutes have short for durations.
func TestDemoProfileRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	profile := filepath.Join(dir, "stormwatch.yaml")
	require.NoError(t, os.WriteFile(profile, []byte(demo.AlertsProfile()), 0o644))
	code, _, stderr := runInProcess("generate", "all", "-c", profile, "-o", dir)
	require.Equal(t, exitOK, code, stderr)
	rulesYAML, err := os.ReadFile(filepath.Join(dir, "stormwatch-rules.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(rulesYAML), "ratio_rate30s", "30s rate window")
	for _, alert := range []string{"CircuitBreakerStuckOpen", "RetryRateHigh", "FallbackSustained"} {
		i := strings.Index(string(rulesYAML), "alert: "+alert+"\n")
		require.GreaterOrEqual(t, i, 0, alert)
		rest := string(rulesYAML)[i:]
		f := rest[strings.Index(rest, "for: ")+len("for: "):]
		f = f[:strings.IndexByte(f, '\n')]
		assert.Contains(t, []string{"10s", "15s", "30s", "50s", "1m", "1m5s"}, f, "%s for", alert)
	}

	for _, args := range [][]string{
		{"check", "rules", "--lint=all", "--lint-fatal", "stormwatch-rules.yaml"},
		{"test", "rules", "stormwatch-rules.test.yaml"},
	} {
		out, ok := promtooltest.Run(t, dir, args...)
		require.True(t, ok, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestDemoPrometheusThatFailsToStart: a Prometheus that exits at once is a runtime failure
// (exit 1) whose message shows its log.
func TestDemoPrometheusThatFailsToStart(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "prometheus")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'err=\"address already in use\"'\nexit 3\n"), 0o755))
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	code, stdout, stderr := runInProcess("demo", "--listen", "127.0.0.1:0", "--prometheus", fake, "--prometheus-listen", "127.0.0.1:0")
	assert.Equal(t, exitFailure, code, stderr)
	assert.Contains(t, stdout, "starting Prometheus")
	assert.Contains(t, stderr, "prometheus did not start")
	assert.Contains(t, stderr, "exit status 3")
	assert.Contains(t, stderr, `address already in use`, "the log's tail")
}
