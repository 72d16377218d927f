package demo

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildCLI builds cmd/stormwatch into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "stormwatch")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/stormwatch-go/stormwatch/cmd/stormwatch").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

var metricsLine = regexp.MustCompile(`metrics on (http://127\.0\.0\.1:\d+/metrics)`)

// TestBinaryStopsOnSIGINT runs the real binary until Ctrl-C: it exits 0 within 2s, and the port
// is released.
func TestBinaryStopsOnSIGINT(t *testing.T) {
	bin := buildCLI(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "demo", "--listen", "127.0.0.1:0", "--scenario", "outage", "--speed", "20", "--duration", "0", "--log-format", "text")
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			lines := make(chan string, 100)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				_, _ = io.Copy(io.Discard, stdout)
			}()
			var url string
			deadline := time.After(10 * time.Second)
			for url == "" {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("the demo exited early: %s", stderr.String())
					}
					if m := metricsLine.FindStringSubmatch(l); m != nil {
						url = m[1]
					}
				case <-deadline:
					t.Fatal("no metrics URL printed")
				}
			}
			// Into the outage (15s demo time = 0.75s wall): hanging calls are in flight.
			time.Sleep(1200 * time.Millisecond)
			c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Get(url)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			assert.Contains(t, string(body), "resilience_retry_calls_total")

			start := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			waited := make(chan error, 1)
			go func() {
				for range lines { // drain until EOF
				}
				waited <- cmd.Wait()
			}()
			select {
			case err := <-waited:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("exit %d: %s", ee.ExitCode(), stderr.String())
				}
				require.NoError(t, err)
			case <-time.After(2 * time.Second):
				t.Fatalf("no exit within 2s of %v", sig)
			}
			assert.Less(t, time.Since(start), 2*time.Second)
			assert.Equal(t, 0, cmd.ProcessState.ExitCode())
			assert.Contains(t, stderr.String(), "msg=retry", "the text retry log went to stderr")

			addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics")
			l, err := net.Listen("tcp", addr)
			require.NoError(t, err, "port released")
			_ = l.Close()
		})
	}
}

// TestBinaryRefusesNonLoopback: a non-loopback --listen is a usage error (exit 2).
func TestBinaryUsageErrors(t *testing.T) {
	bin := buildCLI(t)
	for _, args := range [][]string{
		{"demo", "--listen", "0.0.0.0:9464"},
		{"demo", "--listen", ":9464"},
		{"demo", "--scenario", "meltdown"},
		{"demo", "--speed", "0.0"},
		{"demo", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, args...)
			cmd.Stdout = io.Discard
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 2, ee.ExitCode(), stderr.String())
		})
	}
	_ = os.Remove(bin)
}
