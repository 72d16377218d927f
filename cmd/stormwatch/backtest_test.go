package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promFake is a Prometheus API on loopback holding one RetryRateHigh episode: the recorded
// retry rate of checkout/payments is over 0.05 from minute 10 to minute 29 of the hour from
// t=3600 (Unix seconds), ALERTS agrees, and /api/v1/rules runs the stormwatch groups every 60s.
type promFake struct {
	mu      sync.Mutex
	noData  bool
	status  int
	headers []http.Header
}

// retryRecorded is RetryRateHigh's expression read from the server: the recorded retry rate
// over 0.05 and the recorded attempts over the minimum volume.
const retryRecorded = "job_name:resilience_retry_attempts_per_call:ratio_rate5m > 0.05\nand on (job, name)\njob_name:resilience_retry_attempts:rate5m * 300 >= 10"

func (f *promFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.headers = append(f.headers, r.Header.Clone())
	if f.status != 0 {
		w.WriteHeader(f.status)
		return
	}
	_ = r.ParseForm()
	switch r.URL.Path {
	case "/api/v1/series":
		data := `[{"__name__":"x"}]`
		if f.noData {
			data = "[]"
		}
		fmt.Fprintf(w, `{"status":"success","data":%s}`, data)
	case "/api/v1/rules":
		fmt.Fprint(w, `{"status":"success","data":{"groups":[{"name":"stormwatch-recording","interval":60},{"name":"stormwatch-retry","interval":60}]}}`)
	case "/api/v1/query_range":
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		var metric string
		switch q := r.Form.Get("query"); {
		case q == retryRecorded:
			metric = `{"job":"checkout","name":"payments"}`
		case strings.HasPrefix(q, `ALERTS{alertname="RetryRateHigh"`):
			metric = `{"__name__":"ALERTS","alertname":"RetryRateHigh","alertstate":"firing","job":"checkout","name":"payments","severity":"warning"}`
		}
		var values []string
		for ts := start; ts <= end; ts += step {
			m := int(ts-3600) / 60
			firing := m >= 10 && m < 30
			if strings.HasPrefix(metric, `{"__name__":"ALERTS"`) {
				firing = m >= 15 && m < 30
			}
			if metric != "" && firing {
				values = append(values, fmt.Sprintf(`[%g,"1"]`, ts))
			}
		}
		result := "[]"
		if len(values) > 0 {
			result = fmt.Sprintf(`[{"metric":%s,"values":[%s]}]`, metric, strings.Join(values, ","))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":%s}}`, result)
	default:
		http.NotFound(w, r)
	}
}

func startPromFake(t *testing.T) (*promFake, string) {
	t.Helper()
	f := &promFake{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func runBacktestCLI(args ...string) result {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestBacktestTimeline(t *testing.T) {
	_, url := startPromFake(t)
	r := runBacktestCLI("backtest", "--prometheus", url, "--from", "3600", "--to", "7200", "--chunk-steps", "20")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "evaluation interval 1m0s (the server's rule group stormwatch-recording)")
	assert.Contains(t, r.stderr, "stormwatch backtest: RetryRateHigh: 4/4", "progress in chunks of 20 steps (66 with the warm-up)")
	assert.Regexp(t, `RetryRateHigh\s+warning\s+1\s+24\.00\s+15m`, r.stdout, "one page in one hour; firing 1:15 to 1:30")
	assert.Contains(t, r.stdout, `{alertname="RetryRateHigh", job="checkout", name="payments", severity="warning"}: 1 pages, firing 15m`)
	assert.Contains(t, r.stdout, "pending 1970-01-01 01:10:00  firing 1970-01-01 01:15:00  resolved 1970-01-01 01:30:00")
}

func TestBacktestCompareJSON(t *testing.T) {
	_, url := startPromFake(t)
	r := runBacktestCLI("backtest", "--prometheus", url, "--from", "1970-01-01T01:00:00Z", "--to", "1970-01-01T02:00:00Z", "--step", "1m", "--compare-alerts", "-o", "json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var out struct {
		Report struct {
			Alerts []struct {
				Alert string `json:"alert"`
				Pages int    `json:"pages"`
			} `json:"alerts"`
		} `json:"report"`
		Agreement []struct {
			Alert   string  `json:"alert"`
			Percent float64 `json:"percent"`
		} `json:"agreement"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	require.NotEmpty(t, out.Agreement)
	for _, a := range out.Agreement {
		assert.Equal(t, 100.0, a.Percent, a.Alert)
	}
	for _, a := range out.Report.Alerts {
		if a.Alert == "RetryRateHigh" {
			assert.Equal(t, 1, a.Pages)
		}
	}
}

func TestBacktestSuggestPrintsSnippet(t *testing.T) {
	_, url := startPromFake(t)
	// The incident 1:20–1:40: under the default for (5m) RetryRateHigh fires at 1:15, before it.
	r := runBacktestCLI("backtest", "--prometheus", url, "--from", "3600", "--to", "7200", "--suggest", "--incident", "1970-01-01T01:20:00Z/1970-01-01T01:40:00Z:db-failover")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "alerts:\n  RetryRateHigh:\n    threshold: 0.05\n    for: 10m\n", r.stdout)
	assert.Contains(t, r.stdout, "threshold 0.05 for 5m: caught 0/1, 1 false")
}

func TestBacktestCredentialsNeverPrinted(t *testing.T) {
	f, url := startPromFake(t)
	f.status = http.StatusUnauthorized
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("tok-from-file\n"), 0o600))
	r := runBacktestCLI("backtest", "--prometheus", url, "--from", "now-1h", "--bearer-token-file", tokenFile)
	require.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "refused the credentials (HTTP 401)")
	assert.NotContains(t, r.stderr+r.stdout, "tok-from-file")
	require.NotEmpty(t, f.headers)
	assert.Equal(t, "Bearer tok-from-file", f.headers[0].Get("Authorization"))

	t.Setenv(envBasicUser, "alice")
	t.Setenv(envBasicPassword, "pw-from-env")
	r = runBacktestCLI("backtest", "--prometheus", url, "--from", "now-1h")
	require.Equal(t, exitFailure, r.code)
	assert.NotContains(t, r.stderr+r.stdout, "pw-from-env")
	req := &http.Request{Header: f.headers[len(f.headers)-1]}
	user, pass, ok := req.BasicAuth()
	assert.True(t, ok && user == "alice" && pass == "pw-from-env")

	r = runBacktestCLI("backtest", "--prometheus", url, "--from", "now-1h", "--bearer-token-file", tokenFile)
	assert.Equal(t, exitUsage, r.code, "a token and basic auth at once")
	assert.NotContains(t, r.stderr, "tok-from-file")
}

func TestBacktestUnreachableAndNoData(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	r := runBacktestCLI("backtest", "--prometheus", "http://"+addr, "--from", "now-1h")
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, addr+": prometheus server unreachable")

	f, url := startPromFake(t)
	f.noData = true
	r = runBacktestCLI("backtest", "--prometheus", url, "--from", "3600", "--to", "7200", "-c", writeFile(t, "selector: job=\"checkout\"\n"))
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, `no stormwatch series in the range: no resilience_* series matching {job="checkout"} between 1970-01-01T01:00:00Z and 1970-01-01T02:00:00Z`)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stormwatch.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestBacktestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "now-1h"}, "--prometheus"},
		{[]string{"--prometheus", "http://127.0.0.1:1"}, "--from"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "yesterday"}, `--from = "yesterday": want RFC 3339`},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now", "--to", "now-1h"}, "must be after --from"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now-1h", "-o", "xml"}, `-o = "xml"`},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now-1h", "--recording", "both"}, "--recording"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now-1h", "--suggest"}, "needs at least one --incident"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now-1h", "--incident", "now-50m/now-40m"}, "incidents are for --suggest"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now-1h", "--suggest", "--incident", "now-2h/now-40m"}, "is not inside the range"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now-1h", "--suggest", "--incident", "now-10m"}, "want START/END[:name]"},
		{[]string{"--prometheus", "localhost:9090", "--from", "now-1h"}, "http or https URL"},
		{[]string{"--prometheus", "http://u:secretpw@127.0.0.1:1", "--from", "now-1h"}, "not in the URL"},
	} {
		r := runBacktestCLI(append([]string{"backtest"}, c.args...)...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, c.args)
		assert.NotContains(t, r.stderr, "secretpw")
	}
}

func TestParseIncident(t *testing.T) {
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	in, err := parseIncident("2026-11-01T10:00:00Z/2026-11-01T11:30:00Z:db-failover", now)
	require.NoError(t, err)
	assert.Equal(t, "db-failover", in.Name)
	assert.Equal(t, 90*time.Minute, in.End.Sub(in.Start))
	in, err = parseIncident("2026-11-01T10:00:00+01:00/2026-11-01T11:00:00+01:00", now)
	require.NoError(t, err)
	assert.Equal(t, "", in.Name, "the offset's colon is not a name")
	assert.Equal(t, time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), in.Start.UTC())
	in, err = parseIncident("now-2h/now-1h:x", now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(-time.Hour), in.End)
	_, err = parseIncident("now-1h/now-2h", now)
	require.Error(t, err)

	ts, err := parseTime("1700000000.5", now)
	require.NoError(t, err)
	assert.Equal(t, int64(1700000000500), ts.UnixMilli())
	ts, err = parseTime("now-7d", now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(-7*24*time.Hour), ts)
}
