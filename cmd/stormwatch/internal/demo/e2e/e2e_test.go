//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/rules"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	outageJob = "demo-outage"
	steadyJob = "demo-steady"
	// speed of the outage demo: its fault runs from 15s to 75s demo time, 10s to 50s wall.
	speed      = 1.5
	faultStart = 10 * time.Second
	faultEnd   = 50 * time.Second
	// deadline bounds the whole test once Prometheus is up. FallbackSustained averages
	// fallbacks over 5m, so it cannot resolve sooner than 5m after the last fallback.
	deadline = 8 * time.Minute
)

// The alerts the outage must fire and then resolve.
var mustFire = []string{"CircuitBreakerStuckOpen", "RetryRateHigh", "FallbackSustained"}

// rulesConfig shortens every alert's `for` — to 2s for the three the outage must fire, to 10s
// for the others, so that a steady run would fire any of them within seconds — and
// CircuitBreakerStuckOpen's not-closed threshold to 15s (its minimum).
func rulesConfig() string {
	var b strings.Builder
	b.WriteString("alerts:\n")
	for _, name := range rules.AlertNames() {
		f := "10s"
		for _, m := range mustFire {
			if m == name {
				f = "2s"
			}
		}
		fmt.Fprintf(&b, "  %s:\n    for: %s\n", name, f)
		if name == "CircuitBreakerStuckOpen" {
			b.WriteString("    threshold: 15\n")
		}
	}
	return b.String()
}

var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// process is a started child process, stopped by its PID.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan error
	out  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // keep memory bounded: the retry log can be long
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs bin; its stdout lines go to lines (when non-nil), everything else to a buffer.
func start(t *testing.T, dir, name, bin string, lines chan<- string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	p := &process{name: name, cmd: cmd, done: make(chan error, 1), out: &lockedBuffer{}}
	cmd.Stderr = p.out
	var stdout io.ReadCloser
	if lines != nil {
		var err error
		stdout, err = cmd.StdoutPipe()
		require.NoError(t, err)
	} else {
		cmd.Stdout = p.out
	}
	require.NoError(t, cmd.Start(), name)
	var readers sync.WaitGroup
	if stdout != nil {
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				default: // nobody listens any more
				}
			}
		}()
	}
	go func() {
		readers.Wait()
		p.done <- cmd.Wait()
	}()
	t.Logf("started %s (pid %d): %s %s", name, cmd.Process.Pid, filepath.Base(bin), strings.Join(args, " "))
	t.Cleanup(func() { _ = p.stop(t) })
	return p
}

// stop sends SIGINT to the process's PID and waits up to 10s, then kills it.
func (p *process) stop(t *testing.T) error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(10 * time.Second):
		t.Errorf("%s (pid %d) ignored SIGINT for 10s; killing it", p.name, p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return err
	}
}

func (p *process) tail(n int) string {
	lines := strings.Split(strings.TrimSpace(p.out.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitHTTP(t *testing.T, rawURL string, timeout time.Duration, p *process) {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		resp, err := client.Get(rawURL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited early (%v):\n%s", p.name, err, p.tail(30))
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("%s not ready after %s (last error %v)", rawURL, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var metricsURL = regexp.MustCompile(`metrics on (http://(127\.0\.0\.1:\d+)/metrics)`)

// startDemo runs `stormwatch demo` on addr and returns it with the time it started serving
// /metrics (the start of its script).
func startDemo(t *testing.T, dir, bin, name, addr string, args ...string) (*process, time.Time) {
	t.Helper()
	lines := make(chan string, 256)
	p := start(t, dir, name, bin, lines, append([]string{"demo", "--listen", addr, "--log-format", "json"}, args...)...)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-lines:
			if m := metricsURL.FindStringSubmatch(l); m != nil {
				started := time.Now()
				require.Equal(t, addr, m[2])
				waitHTTP(t, m[1], 10*time.Second, p)
				return p, started
			}
		case <-timeout:
			t.Fatalf("%s printed no metrics URL:\n%s", name, p.tail(20))
		}
	}
}

func getJSON(t *testing.T, rawURL string, into any) {
	t.Helper()
	resp, err := client.Get(rawURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", rawURL, body)
	require.NoError(t, json.Unmarshal(body, into), string(body))
}

type apiAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
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

// panelQuery is one PromQL query of a generated dashboard.
type panelQuery struct {
	dashboard, panel, expr string
}

// dashboardQueries reads every panel target and annotation query of the dashboards in dir.
func dashboardQueries(t *testing.T, dir string) []panelQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no dashboards generated in %s", dir)
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var out []panelQuery
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var d struct {
			Title       string  `json:"title"`
			Panels      []panel `json:"panels"`
			Annotations struct {
				List []struct {
					Name string `json:"name"`
					Expr string `json:"expr"`
				} `json:"list"`
			} `json:"annotations"`
		}
		require.NoError(t, json.Unmarshal(b, &d), f)
		var walk func(ps []panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				for _, tg := range p.Targets {
					if tg.Expr != "" {
						out = append(out, panelQuery{d.Title, p.Title, tg.Expr})
					}
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, a := range d.Annotations.List {
			if a.Expr != "" {
				out = append(out, panelQuery{d.Title, "annotation " + a.Name, a.Expr})
			}
		}
	}
	return out
}

// substitute replaces Grafana's variables as a user looking at the outage job would set them:
// 1s scrape and step, so $__interval = 1s and $__rate_interval = max(4 × scrape, step + scrape)
// = 4s; $name is the given dependency ("" = all, for regexp matchers).
func substitute(expr, instance, name string) string {
	r := strings.NewReplacer(
		"$__rate_interval", "4s", "${__rate_interval}", "4s",
		"$__interval", "1s", "${__interval}", "1s",
		`=~"$job"`, `=~"`+outageJob+`"`, `="$job"`, `="`+outageJob+`"`,
		`=~"$instance"`, `=~".+"`, `="$instance"`, `="`+instance+`"`,
		`=~"$name"`, `=~"`+orAll(name)+`"`, `="$name"`, `="`+name+`"`,
		"$datasource", "prometheus",
	)
	return r.Replace(expr)
}

func orAll(name string) string {
	if name == "" {
		return ".+"
	}
	return regexp.QuoteMeta(name)
}

// hasData reports whether a range query returns at least one non-NaN sample.
func hasData(t *testing.T, prom, expr string, from, to time.Time) (bool, error) {
	q := url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(from.Unix(), 10)},
		"end":   {strconv.FormatInt(to.Unix(), 10)},
		"step":  {"1"},
	}
	resp, err := client.Get(prom + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return false, err
	}
	if r.Status != "success" {
		return false, fmt.Errorf("%s: %s", expr, r.Error)
	}
	for _, s := range r.Data.Result {
		for _, v := range s.Values {
			str, _ := v[1].(string)
			if f, err := strconv.ParseFloat(str, 64); err == nil && !math.IsNaN(f) {
				return true, nil
			}
		}
	}
	return false, nil
}

// TestDemoOnRealPrometheus is the end-to-end proof of issue 7: a real Prometheus 3.16 scrapes
// `stormwatch demo --scenario outage` (sped up ×1.5) and `stormwatch demo --scenario steady`
// every second and evaluates the rules `stormwatch generate` wrote (every `for` shortened to
// 2s or 10s). The outage must fire CircuitBreakerStuckOpen, RetryRateHigh and
// FallbackSustained, all three must resolve after recovery, the steady demo must never have a
// firing alert, and every query of the generated dashboards must return data during the
// outage.
func TestDemoOnRealPrometheus(t *testing.T) {
	began := time.Now()
	root, err := filepath.Abs("../../../../..")
	require.NoError(t, err)
	prometheusBin := filepath.Join(root, "bin", "prometheus")
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Fatalf("bin/prometheus missing (%v): run scripts/install-tools.sh", err)
	}
	dir := t.TempDir() // removed with everything in it, the TSDB included

	bin := filepath.Join(dir, "stormwatch")
	build := exec.Command("go", "build", "-o", bin, "./cmd/stormwatch")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stormwatch.yaml"), []byte(rulesConfig()), 0o644))
	for _, what := range []string{"rules", "dashboards"} {
		gen := exec.Command(bin, "generate", what, "-c", "stormwatch.yaml", "-o", "out")
		gen.Dir = dir
		out, err := gen.CombinedOutput()
		require.NoError(t, err, "stormwatch generate %s: %s", what, out)
	}
	queries := dashboardQueries(t, filepath.Join(dir, "out", "dashboards"))
	t.Logf("%d dashboard queries", len(queries))

	// Prometheus first, so that it scrapes the demos from their first second.
	outageAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	steadyAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	promPort := freePort(t)
	promConfig := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: ['%s']
  - job_name: %s
    static_configs:
      - targets: ['%s']
`, filepath.Join(dir, "out", "stormwatch-rules.yaml"), outageJob, outageAddr, steadyJob, steadyAddr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(promConfig), 0o644))
	prom := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	server := start(t, dir, "prometheus", prometheusBin, nil,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort),
		"--log.level=warn")
	waitHTTP(t, prom+"/-/ready", 60*time.Second, server)

	steady, _ := startDemo(t, dir, bin, "demo-steady", steadyAddr, "--scenario", "steady", "--duration", "10m")
	outage, outageStarted := startDemo(t, dir, bin, "demo-outage", outageAddr,
		"--scenario", "outage", "--speed", strconv.FormatFloat(speed, 'f', -1, 64), "--duration", "10m")
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*process{server, outage, steady} {
				t.Logf("--- %s output (tail) ---\n%s", p.name, p.tail(15))
			}
		}
	})

	firedAt := map[string]time.Duration{}    // alert → when it first fired (since the demo started)
	resolvedAt := map[string]time.Duration{} // alert → when it was gone after the fault
	seen := map[string]bool{}                // alertname/job/name/state seen, for the log
	panelsChecked := false
	end := time.Now().Add(deadline)
	for {
		now := time.Now()
		require.True(t, now.Before(end), "not done within %s: fired %v, resolved %v", deadline, firedAt, resolvedAt)
		sinceStart := now.Sub(outageStarted)
		active := map[string]bool{}
		for _, a := range alerts(t, prom) {
			n := a.Labels["alertname"]
			seen[n+" job="+a.Labels["job"]+" name="+a.Labels["name"]+" "+a.State] = true
			if a.Labels["job"] == steadyJob {
				require.NotEqual(t, "firing", a.State, "the steady demo has a firing alert: %s %v", n, a.Labels)
				continue
			}
			if a.Labels["job"] != outageJob {
				continue
			}
			active[n] = true
			if a.State == "firing" {
				if _, ok := firedAt[n]; !ok {
					firedAt[n] = sinceStart
					t.Logf("t=%s: %s firing (%v)", sinceStart.Round(time.Second), n, a.Labels)
				}
			}
		}
		allFired := true
		for _, n := range mustFire {
			if _, ok := firedAt[n]; !ok {
				allFired = false
			}
		}
		if sinceStart > faultEnd && !allFired {
			t.Fatalf("the outage ended before %v all fired (fired: %v)", mustFire, firedAt)
		}
		// During the outage, once the alerts fire: every dashboard query returns data.
		if allFired && !panelsChecked {
			require.Less(t, sinceStart, faultEnd-2*time.Second, "no time left in the outage for the dashboard queries")
			from := outageStarted.Add(faultStart)
			var missing []string
			for _, q := range queries {
				names := []string{""}
				if strings.Contains(q.expr, `="$name"`) {
					names = []string{"payments", "inventory", "recommendations"}
				}
				found := false
				for _, name := range names {
					expr := substitute(q.expr, outageAddr, name)
					require.NotContains(t, expr, "$", "unsubstituted variable in %s / %s", q.dashboard, q.panel)
					ok, err := hasData(t, prom, expr, from, time.Now())
					require.NoError(t, err, "%s / %s", q.dashboard, q.panel)
					if ok {
						found = true
						break
					}
				}
				if !found {
					missing = append(missing, q.dashboard+" / "+q.panel+": "+q.expr)
				}
			}
			assert.Empty(t, missing, "dashboard queries without data during the outage")
			panelsChecked = true
			t.Logf("t=%s: all %d dashboard queries returned data during the outage", time.Since(outageStarted).Round(time.Second), len(queries))
		}
		if panelsChecked && sinceStart > faultEnd {
			for _, n := range mustFire {
				if _, ok := resolvedAt[n]; !ok && !active[n] {
					resolvedAt[n] = sinceStart
					t.Logf("t=%s: %s resolved", sinceStart.Round(time.Second), n)
				}
			}
			if len(resolvedAt) == len(mustFire) {
				break
			}
		}
		time.Sleep(time.Second)
	}

	var kinds []string
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	t.Logf("alerts seen:\n  %s", strings.Join(kinds, "\n  "))
	assert.Greater(t, firedAt["CircuitBreakerStuckOpen"], faultStart+15*time.Second, "stuck open only after the 15s threshold")

	for _, p := range []*process{server, outage, steady} {
		assert.NoError(t, p.stop(t), "%s exit:\n%s", p.name, p.tail(10))
	}
	client.CloseIdleConnections()
	t.Logf("e2e wall time %s", time.Since(began).Round(time.Second))
}
