//go:build e2e

package e2e

import (
	"errors"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

var (
	promStartLine = regexp.MustCompile(`starting Prometheus \(pid (\d+)\) on (http://127\.0\.0\.1:\d+)`)
	rulesLine     = regexp.MustCompile(`rules +(\S+)/stormwatch-rules\.yaml`)
)

// TestDemoPrometheusCommand runs the one command of the README — `stormwatch demo --prometheus
// bin/prometheus`, outage scenario at speed 1 with the demo profile — and checks, through the
// Prometheus it started, that CircuitBreakerStuckOpen, RetryRateHigh and FallbackSustained
// reach firing within 3 minutes of the start and resolve after the recovery. Then Ctrl-C
// (SIGINT) stops everything: exit 0, the Prometheus child gone, its temporary directory
// removed, both ports released.
func TestDemoPrometheusCommand(t *testing.T) {
	t.Parallel()
	const (
		fireWithin    = 3 * time.Minute
		resolveWithin = 4 * time.Minute // the recovery is at 1:15; rates look back 1m
	)
	root := e2eprom.ModuleRoot(t)
	prometheusBin := e2eprom.PrometheusBin(t, root)
	lines := make(chan string, 10000)
	p := e2eprom.Start(t, e2eprom.Command{Name: "stormwatch-demo-prometheus", Dir: t.TempDir(), Bin: stormwatchBin, Lines: lines,
		Args:       []string{"demo", "--scenario", "outage", "--listen", "127.0.0.1:0", "--prometheus", prometheusBin, "--prometheus-listen", "127.0.0.1:0"},
		StopSignal: syscall.SIGINT, StopGrace: 30 * time.Second})

	var promPid int
	var promURL, rulesDir, demoAddr string
	var started time.Time // the demo's t=0
	timeout := time.After(2 * time.Minute)
	for demoAddr == "" {
		select {
		case l := <-lines:
			if m := promStartLine.FindStringSubmatch(l); m != nil {
				promPid, _ = strconv.Atoi(m[1])
				promURL = m[2]
			}
			if m := rulesLine.FindStringSubmatch(l); m != nil {
				rulesDir = m[1]
			}
			if m := metricsURLLine.FindStringSubmatch(l); m != nil {
				started, demoAddr = time.Now(), m[2]
			}
		case <-timeout:
			t.Fatalf("the demo did not start:\n%s", p.Tail(30))
		}
	}
	require.NotZero(t, promPid, "the Prometheus pid is printed")
	require.NotEmpty(t, rulesDir, "the rule file is printed")
	t.Logf("demo on %s, Prometheus (pid %d) on %s, rules in %s", demoAddr, promPid, promURL, rulesDir)
	prom := e2eprom.API{URL: promURL, Client: client}

	mustFire := []string{"CircuitBreakerStuckOpen", "RetryRateHigh", "FallbackSustained"}
	firedAt := map[string]time.Duration{}
	resolvedAt := map[string]time.Duration{}
	for len(resolvedAt) < len(mustFire) {
		since := time.Since(started)
		require.Less(t, since, resolveWithin, "fired %v, resolved %v", firedAt, resolvedAt)
		active := map[string]bool{}
		for _, a := range prom.Alerts(t) {
			require.Equal(t, "stormwatch-demo", a.Labels["job"])
			n := a.Labels["alertname"]
			active[n] = true
			if _, ok := firedAt[n]; !ok && a.State == "firing" {
				firedAt[n] = since
				t.Logf("t=%s: %s firing (%s)", since.Round(time.Second), n, a.Labels["name"])
			}
		}
		for _, n := range mustFire {
			_, fired := firedAt[n]
			if !fired {
				require.Less(t, since, fireWithin, "%s did not fire within %s of the start (fired: %v)", n, fireWithin, firedAt)
				continue
			}
			if _, ok := resolvedAt[n]; !ok && !active[n] {
				resolvedAt[n] = since
				t.Logf("t=%s: %s resolved", since.Round(time.Second), n)
			}
		}
		time.Sleep(time.Second) // polling a real server
	}
	for _, n := range mustFire {
		assert.Less(t, firedAt[n], fireWithin, n)
		assert.Greater(t, resolvedAt[n], 75*time.Second, "%s resolved after the recovery at 1:15", n)
	}

	// Ctrl-C: everything stops, exit 0.
	require.NoError(t, p.Signal(syscall.SIGINT))
	require.NoError(t, p.Wait(t, 30*time.Second), "exit status 0 on SIGINT:\n%s", p.Tail(20))
	var out strings.Builder
	for done := false; !done; {
		select {
		case l := <-lines:
			out.WriteString(l + "\n")
		default:
			done = true
		}
	}
	assert.Contains(t, out.String(), "interrupted, stopped cleanly")
	assert.Contains(t, out.String(), "Prometheus (pid "+strconv.Itoa(promPid)+") stopped")
	err := syscall.Kill(promPid, 0)
	assert.True(t, errors.Is(err, syscall.ESRCH), "the Prometheus child is gone (kill -0: %v)", err)
	_, err = os.Stat(rulesDir)
	assert.True(t, os.IsNotExist(err), "the temporary directory is removed: %v", err)
	for _, addr := range []string{demoAddr, strings.TrimPrefix(promURL, "http://")} {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, "%s is released", addr)
		_ = ln.Close()
	}
}
