//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	alertName   = "CircuitBreakerStuckOpen"
	breakerName = "downstream" // examples/breaker's breaker
	// budget bounds the whole test (builds, start-up, waiting for the alert); make e2e's
	// go test -timeout is a little longer.
	budget = 150 * time.Second
)

// testDeadline is when the test gives up; set at the start of the test.
var testDeadline time.Time

// until returns the earlier of now+d and the test deadline.
func until(d time.Duration) time.Time {
	if t := time.Now().Add(d); t.Before(testDeadline) {
		return t
	}
	return testDeadline
}

// rulesConfig shortens CircuitBreakerStuckOpen so the test takes seconds: not closed for more
// than 15s, then for 5s.
const rulesConfig = `alerts:
  CircuitBreakerStuckOpen:
    threshold: 15
    for: 5s
`

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// process is a started child process; stop ends it by PID and reports how it exited.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan error
	log  string
}

func start(t *testing.T, dir, name string, bin string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = procAttr()
	require.NoError(t, cmd.Start(), name)
	p := &process{name: name, cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() {
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	t.Logf("started %s (pid %d): %s %s", name, cmd.Process.Pid, filepath.Base(bin), strings.Join(args, " "))
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM to the process's PID, waits up to 15s, then kills it. It returns the
// exit error (nil for exit status 0).
func (p *process) stop(t *testing.T) error {
	if p.cmd.ProcessState != nil {
		return nil // already reaped by an earlier stop
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err // keep it for a second stop
		return err
	case <-time.After(15 * time.Second):
		t.Errorf("%s (pid %d) ignored SIGTERM for 15s; killing it", p.name, p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return err
	}
}

func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP polls url until it answers 200 or the timeout passes.
func waitHTTP(t *testing.T, rawURL string, timeout time.Duration, procs ...*process) {
	t.Helper()
	end := until(timeout)
	for {
		resp, err := client.Get(rawURL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		for _, p := range procs {
			select {
			case err := <-p.done:
				p.done <- err
				t.Fatalf("%s exited early (%v):\n%s", p.name, err, p.tail(30))
			default:
			}
		}
		if time.Now().After(end) {
			t.Fatalf("%s not ready after %s (last error %v)", rawURL, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func build(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = ".."
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	return out
}

type apiAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func getJSON(t *testing.T, rawURL string, into any) {
	t.Helper()
	resp, err := client.Get(rawURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, into), string(body))
}

func alerts(t *testing.T, prom string) []apiAlert {
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []apiAlert `json:"alerts"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/alerts", &r)
	require.Equal(t, "success", r.Status)
	return r.Data.Alerts
}

// query returns the value of a PromQL expression that yields at most one sample.
func query(t *testing.T, prom, expr string) (float64, bool) {
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/query?query="+url.QueryEscape(expr), &r)
	require.Equal(t, "success", r.Status)
	if len(r.Data.Result) == 0 {
		return 0, false
	}
	require.Len(t, r.Data.Result, 1, expr)
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v, true
}

// TestStuckOpenAlertFiresOnRealPrometheus is the end-to-end check of issue 5: a real
// Prometheus 3.16 scrapes two examples/breaker processes every second — one whose downstream
// always fails (-fail: the breaker is stuck open, rejecting calls) and one that is healthy —
// evaluates the rules generated by the stormwatch binary from a config with short durations,
// and must fire CircuitBreakerStuckOpen for the first and never for the second.
func TestStuckOpenAlertFiresOnRealPrometheus(t *testing.T) {
	testDeadline = time.Now().Add(budget)
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	prometheusBin := filepath.Join(root, "bin", "prometheus")
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Fatalf("bin/prometheus missing (%v): run scripts/install-tools.sh", err)
	}
	dir := t.TempDir() // removed with everything in it, including the TSDB

	stormwatch := build(t, dir, "stormwatch", "./cmd/stormwatch")
	breakerBin := build(t, dir, "breaker", "./examples/breaker")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stormwatch.yaml"), []byte(rulesConfig), 0o644))
	gen := exec.Command(stormwatch, "generate", "rules", "-c", "stormwatch.yaml", "-o", "rules")
	gen.Dir = dir
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "stormwatch generate: %s", out)
	rulesYAML, err := os.ReadFile(filepath.Join(dir, "rules", "stormwatch-rules.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(rulesYAML), ") > 15\n", "the config's threshold is in the generated rule")

	failingPort, healthyPort, promPort := freePort(t), freePort(t), freePort(t)
	failing := start(t, dir, "breaker-failing", breakerBin,
		"-listen", fmt.Sprintf("127.0.0.1:%d", failingPort), "-fail", "-rate", "20", "-open-duration", "30s", "-duration", "0")
	healthy := start(t, dir, "breaker-healthy", breakerBin,
		"-listen", fmt.Sprintf("127.0.0.1:%d", healthyPort), "-fail-rate", "0", "-rate", "20", "-open-duration", "30s", "-duration", "0")
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", failingPort), 20*time.Second, failing)
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", healthyPort), 20*time.Second, healthy)

	promConfig := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: failing
    static_configs:
      - targets: ['127.0.0.1:%d']
  - job_name: healthy
    static_configs:
      - targets: ['127.0.0.1:%d']
`, filepath.Join(dir, "rules", "stormwatch-rules.yaml"), failingPort, healthyPort)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(promConfig), 0o644))
	prom := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	server := start(t, dir, "prometheus", prometheusBin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort),
		"--log.level=warn")
	waitHTTP(t, prom+"/-/ready", 45*time.Second, server)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*process{server, failing, healthy} {
				t.Logf("--- %s log (tail) ---\n%s", p.name, p.tail(20))
			}
		}
	})

	// Poll the alerts until the stuck breaker's alert fires; the healthy one must never show
	// up, not even as pending.
	startPoll := time.Now()
	pollEnd := until(90 * time.Second)
	var fired time.Duration
	for fired == 0 {
		require.True(t, time.Now().Before(pollEnd), "%s did not fire within %s", alertName, pollEnd.Sub(startPoll).Round(time.Second))
		for _, a := range alerts(t, prom) {
			if a.Labels["alertname"] != alertName {
				continue
			}
			require.NotEqual(t, "healthy", a.Labels["job"], "%s is %s for the healthy breaker: %v", alertName, a.State, a.Labels)
			if a.Labels["job"] == "failing" && a.Labels["name"] == breakerName && a.State == "firing" {
				assert.Equal(t, "warning", a.Labels["severity"])
				assert.NotEmpty(t, a.Labels["instance"], "per-process alert keeps instance")
				fired = time.Since(startPoll)
			}
		}
		if fired == 0 {
			time.Sleep(time.Second)
		}
	}
	t.Logf("%s firing for job=failing after %s", alertName, fired.Round(time.Second))

	// The healthy breaker was really scraped, took traffic and stayed closed; the failing one
	// was open and rejecting.
	v, ok := query(t, prom, `resilience_circuitbreaker_state{job="healthy", name="downstream", state="closed"}`)
	require.True(t, ok, "the healthy breaker is scraped")
	assert.Equal(t, 1.0, v)
	v, ok = query(t, prom, `sum(increase(resilience_circuitbreaker_calls_total{job="healthy", name="downstream", kind="successful"}[30s]))`)
	require.True(t, ok)
	assert.Greater(t, v, 100.0, "the healthy breaker carried traffic")
	v, ok = query(t, prom, `sum(increase(resilience_circuitbreaker_not_permitted_calls_total{job="failing", name="downstream"}[30s]))`)
	require.True(t, ok)
	assert.Greater(t, v, 100.0, "the stuck breaker rejected calls")
	v, ok = query(t, prom, `resilience_circuitbreaker_tripped_since_timestamp_seconds{job="healthy"}`)
	require.True(t, ok)
	assert.Equal(t, 0.0, v, "the healthy breaker never tripped")

	// Every generated rule loaded and evaluates without error.
	var rulesResp struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/rules", &rulesResp)
	n := 0
	for _, g := range rulesResp.Data.Groups {
		for _, r := range g.Rules {
			n++
			assert.NotEqual(t, "err", r.Health, "%s/%s: %s", g.Name, r.Name, r.LastError)
		}
	}
	assert.Equal(t, 22, n, "all generated rules are loaded")

	// A few more evaluations: the healthy breaker still has no alert.
	time.Sleep(3 * time.Second)
	for _, a := range alerts(t, prom) {
		assert.False(t, a.Labels["alertname"] == alertName && a.Labels["job"] == "healthy", "healthy breaker alerted: %v", a)
	}

	// Stop everything by PID; the breakers exit 0 on SIGTERM (their contract).
	for _, p := range []*process{server, failing, healthy} {
		assert.NoError(t, p.stop(t), "%s exit:\n%s", p.name, p.tail(10))
	}
}
