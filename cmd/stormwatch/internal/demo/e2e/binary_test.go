//go:build e2e

package e2e

import (
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

var metricsURLLine = regexp.MustCompile(`metrics on (http://(127\.0\.0\.1:\d+)/metrics)`)

// startBinary runs `stormwatch demo --listen 127.0.0.1:0 args…` and waits for its metrics URL;
// it returns the process, its stdout lines (after the first) and the /metrics address.
func startBinary(t *testing.T, name string, args ...string) (*e2eprom.Process, <-chan string, string) {
	t.Helper()
	lines := make(chan string, 10000)
	p := e2eprom.Start(t, e2eprom.Command{Name: name, Dir: t.TempDir(), Bin: stormwatchBin, Lines: lines,
		Args: append([]string{"demo", "--listen", "127.0.0.1:0"}, args...), StopSignal: syscall.SIGKILL, StopGrace: time.Second})
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l := <-lines:
			if m := metricsURLLine.FindStringSubmatch(l); m != nil {
				return p, lines, m[2]
			}
		case <-timeout:
			t.Fatalf("%s printed no metrics URL:\n%s", name, p.Tail(20))
		}
	}
}

// drain collects the lines printed so far.
func drain(lines <-chan string) string {
	var b strings.Builder
	for {
		select {
		case l := <-lines:
			b.WriteString(l + "\n")
		default:
			return b.String()
		}
	}
}

// TestEveryScenarioExitsZero: every scenario, retry-storm included, exits 0 on SIGINT, on
// SIGTERM and at the end of --duration, promptly, and releases its port.
func TestEveryScenarioExitsZero(t *testing.T) {
	for _, scenario := range demo.ScenarioNames {
		for _, stop := range []string{"SIGINT", "SIGTERM", "duration"} {
			t.Run(scenario+"/"+stop, func(t *testing.T) {
				t.Parallel()
				args := []string{"--scenario", scenario, "--speed", "20", "--log-format", "text", "--log-file", "-"}
				if stop == "duration" {
					args = append(args, "--duration", "1500ms")
				} else {
					args = append(args, "--duration", "0")
				}
				p, lines, addr := startBinary(t, "demo-"+scenario, args...)
				var sent time.Time
				switch stop {
				case "SIGINT", "SIGTERM":
					time.Sleep(time.Second) // into the run: calls are in flight
					sig := map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM}[stop]
					sent = time.Now()
					require.NoError(t, p.Signal(sig))
				default:
					sent = time.Now().Add(1500 * time.Millisecond)
				}
				err := p.Wait(t, time.Until(sent)+5*time.Second)
				out := drain(lines)
				require.NoError(t, err, "exit status:\n%s\n%s", p.Tail(20), out)
				assert.Less(t, time.Since(sent), 3*time.Second, "stopped promptly")
				if stop == "duration" {
					assert.Contains(t, out, "--duration 1.5s reached, stopped cleanly")
				} else {
					assert.Contains(t, out, "interrupted, stopped cleanly")
				}
				ln, err := net.Listen("tcp", addr)
				require.NoError(t, err, "the port is released")
				_ = ln.Close()
			})
		}
	}
}

// TestRetryStormCutShortExitsZero: a --duration shorter than the replay ends it cleanly with
// what it measured.
func TestRetryStormCutShortExitsZero(t *testing.T) {
	// At ×20 each setup takes about 2.3s: 3.5s stops the run during the stormwatch setup.
	p, lines, _ := startBinary(t, "retry-storm", "--scenario", "retry-storm", "--speed", "20", "--duration", "3500ms")
	require.NoError(t, p.Wait(t, 20*time.Second), p.Tail(20))
	out := drain(lines)
	assert.Contains(t, out, "retry-storm: stopped during the stormwatch setup; the naive setup measured")
	assert.Contains(t, out, "--duration 3.5s reached, stopped cleanly")
}

// TestCleanDurationEndLogsNoGaveUp: the calls in flight when --duration ends are cancelled by
// the demo: aborted (a DEBUG record, not shown), never a gave_up ERROR record. The steady
// scenario has no failure that retries do not rescue, so any gave_up would be a cut-off call.
func TestCleanDurationEndLogsNoGaveUp(t *testing.T) {
	p, lines, _ := startBinary(t, "steady", "--scenario", "steady", "--speed", "10", "--duration", "3s", "--log-format", "json", "--log-file", "-")
	require.NoError(t, p.Wait(t, 20*time.Second), p.Tail(20))
	log := p.Tail(1 << 20)
	assert.NotContains(t, log, `"outcome":"gave_up"`)
	assert.NotContains(t, log, `"level":"ERROR"`)
	out := drain(lines)
	assert.Contains(t, out, "--duration 3s reached, stopped cleanly")
	assert.Regexp(t, `payments +closed +\d{3,}`, out, "calls were made (the final totals)")
	assert.Contains(t, log, `"outcome":"succeeded"`, "the retry log did work: rescued retries")
}
