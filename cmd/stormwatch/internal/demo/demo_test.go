package demo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:9464", true},
		{"127.0.0.1:0", true},
		{"127.1.2.3:80", true},
		{"[::1]:9464", true},
		{"localhost:9464", true},
		{"0.0.0.0:9464", false},
		{":9464", false},
		{"[::]:9464", false},
		{"10.0.0.1:9464", false},
		{"example.com:9464", false},
		{"127.0.0.1", false},
		{"127.0.0.1:http-nonsense", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := CheckLoopback(tc.addr)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			var ue *UsageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), "--listen")
		})
	}
}

func TestConfigErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Listen: "0.0.0.0:1"}, `--listen "0.0.0.0:1"`},
		{Config{Scenario: "meltdown"}, `--scenario "meltdown"`},
		{Config{Speed: -1}, "--speed -1"},
		{Config{Speed: 5000}, "--speed 5000"},
		{Config{Duration: -time.Second}, "--duration -1s"},
		{Config{Rate: -3}, "--rps -3"},
		{Config{Rate: 100, Speed: 100}, "--rps 100"},
		{Config{LogFormat: "xml"}, `--log-format "xml"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			err := Run(context.Background(), tc.cfg)
			var ue *UsageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestScenariosAreValid(t *testing.T) {
	for _, name := range ScenarioNames {
		if name == ScenarioRetryStorm {
			continue
		}
		sc, err := LookupScenario(name)
		require.NoError(t, err)
		assert.NoError(t, sc.validate(), name)
		assert.NotEmpty(t, sc.Summary)
	}
	_, err := LookupScenario("nope")
	assert.ErrorContains(t, err, "steady|outage")
	bad := Scenario{Name: "x", Phases: []Phase{{At: 0, Faults: map[string]Fault{"db": Steady}}}}
	assert.ErrorContains(t, bad.validate(), `unknown dependency "db"`)
	bad = Scenario{Name: "x", Phases: []Phase{{At: 0, Faults: map[string]Fault{Payments: {ErrorRate: 0.7, HangRate: 0.7}}}}}
	assert.ErrorContains(t, bad.validate(), "add up to")
}

// startDownstream serves a downstream with one endpoint on loopback.
func startDownstream(t *testing.T, speed float64) (*Downstream, string) {
	t.Helper()
	d := NewDownstream(speed, Payments)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := serve(l, d)
	t.Cleanup(func() { d.Close(); s.stop(time.Second) })
	return d, "http://" + s.addr + "/" + Payments
}

func TestDownstreamFaults(t *testing.T) {
	d, url := startDownstream(t, 10)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	get := func() (*http.Response, error) {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return resp, err
	}

	resp, err := get()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, d.SetFault(Payments, Fault{ErrorRate: 1, Status: http.StatusBadGateway}))
	resp, err = get()
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)

	require.NoError(t, d.SetFault(Payments, Fault{RateLimitRate: 1, RetryAfter: 2 * time.Second}))
	resp, err = get()
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "0.2", resp.Header.Get("Retry-After"), "2s of demo time at speed 10")

	require.NoError(t, d.SetFault(Payments, Fault{ResetRate: 1}))
	_, err = get()
	require.Error(t, err)

	require.NoError(t, d.SetFault(Payments, Fault{Latency: 3 * time.Second})) // 300 ms at speed 10
	start := time.Now()
	resp, err = get()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.GreaterOrEqual(t, time.Since(start), 290*time.Millisecond)

	require.NoError(t, d.SetFault(Payments, Fault{HangRate: 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	_, err = client.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	assert.Error(t, d.SetFault(Payments, Fault{ErrorRate: 2}))
	assert.Error(t, d.SetFault("db", Fault{}))
	// The transport may resend the GET whose reused connection was reset: 6 or 7.
	assert.GreaterOrEqual(t, d.Received(Payments), uint64(6))
}

// gather runs a scenario for wall time d (demo time d × speed) and returns the registry's
// metrics as the collector exports them.
func gather(t *testing.T, scenario string, speed, rate float64, d time.Duration) map[string]*dto.MetricFamily {
	t.Helper()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	var stdout, stderr syncBuffer
	err = Run(context.Background(), Config{
		Listen: "127.0.0.1:0", Scenario: scenario, Duration: d, Speed: speed, Rate: rate,
		Stdout: &stdout, Stderr: &stderr, Registry: reg, StatusEvery: time.Second,
	})
	require.NoError(t, err)
	col, err := collector.New(reg)
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(col))
	problems, err := testutil.GatherAndLint(pr)
	require.NoError(t, err)
	assert.Empty(t, problems)
	mfs, err := pr.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	assert.Contains(t, stdout.String(), "scenario "+scenario)
	return out
}

// value sums the samples of metric whose labels include want (counter, gauge, or a histogram's
// count).
func value(mfs map[string]*dto.MetricFamily, metric string, want map[string]string) float64 {
	mf, ok := mfs[metric]
	if !ok {
		return -1
	}
	var sum float64
next:
	for _, m := range mf.GetMetric() {
		for k, v := range want {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func l(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// The scenario tests run each script sped up and assert its signature in the exported metrics.

func TestScenarioSteadyNoTrips(t *testing.T) {
	mfs := gather(t, ScenarioSteady, 10, 10, 3*time.Second)
	for _, dep := range Dependencies {
		assert.Zero(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", dep, "to", "open")), dep)
		assert.Zero(t, value(mfs, "resilience_circuitbreaker_not_permitted_calls_total", l("name", dep)), dep)
		assert.Equal(t, 1.0, value(mfs, "resilience_circuitbreaker_state", l("name", dep, "state", "closed")), dep)
		assert.Greater(t, value(mfs, "resilience_retry_calls_total", l("name", dep, "kind", "successful_without_retry")), 200.0, dep)
	}
}

func TestScenarioOutageTripsRejectsAndFallsBack(t *testing.T) {
	// Fault from 15s to 75s demo time: 1.5s to 7.5s wall at ×10; stop at 5s wall.
	mfs := gather(t, ScenarioOutage, 10, 10, 5*time.Second)
	p := l("name", Payments)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", Payments, "from", "closed", "to", "open")), 1.0)
	assert.Greater(t, value(mfs, "resilience_circuitbreaker_not_permitted_calls_total", p), 0.0)
	assert.Greater(t, value(mfs, "resilience_fallback_calls_total", l("name", Payments, "cause", "circuit_open")), 0.0)
	assert.Greater(t, value(mfs, "resilience_retry_attempts_total", p), 0.0)
	assert.Greater(t, value(mfs, "resilience_circuitbreaker_tripped_since_timestamp_seconds", p), 0.0, "still not closed at the end")
	// Inventory is flaky, not down: retries rescue calls and its breaker stays closed.
	assert.Greater(t, value(mfs, "resilience_retry_calls_total", l("name", Inventory, "kind", "successful_with_retry")), 0.0)
	assert.Zero(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", Inventory, "to", "open")))
	// Recommendations is slow behind a small bulkhead: callers queue for permits.
	assert.Greater(t, value(mfs, "resilience_bulkhead_wait_duration_seconds", l("name", Recommendations)), 0.0)
}

func TestScenarioSlowTripsOnSlowCalls(t *testing.T) {
	// Fault from 15s demo time: 3s wall at ×5; 1.1–1.5s answers (220–300 ms wall) against a
	// 2.5s attempt timeout (500 ms) and a 1s slow-call duration (200 ms).
	mfs := gather(t, ScenarioSlow, 5, 10, 6*time.Second)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", Payments, "from", "closed", "to", "open")), 1.0)
	slow := value(mfs, "resilience_circuitbreaker_calls_total", l("name", Payments, "kind", "slow_successful"))
	failed := value(mfs, "resilience_circuitbreaker_calls_total", l("name", Payments, "kind", "failed")) +
		value(mfs, "resilience_circuitbreaker_calls_total", l("name", Payments, "kind", "slow_failed"))
	assert.GreaterOrEqual(t, slow, 20.0, "the window filled with slow successes")
	assert.Less(t, failed, slow/2, "the trip came from the slow-call rate, not failures")
}

func TestScenarioRateLimitedWaitsAsTold(t *testing.T) {
	mfs := gather(t, ScenarioRateLimited, 10, 10, 4*time.Second)
	assert.Greater(t, value(mfs, "resilience_retry_backoff_seconds", l("name", Inventory, "source", "retry_after")), 10.0)
	assert.Greater(t, value(mfs, "resilience_retry_errors_total", l("name", Inventory, "class", "http_429")), 10.0)
	assert.Zero(t, value(mfs, "resilience_retry_backoff_seconds", l("name", Payments, "source", "retry_after")))
}

func TestScenarioFlappingTripsAgainAndAgain(t *testing.T) {
	// Down phases start at 10, 30, 50 and 70s demo time; at ×20, 3.3s wall covers three.
	mfs := gather(t, ScenarioFlapping, 20, 5, 3300*time.Millisecond)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", Payments, "from", "closed", "to", "open")), 3.0)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", Payments, "from", "half_open", "to", "closed")), 2.0)
}

func TestRetryStormAmplification(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	var lines []string
	// 5 user requests/s (demo time) against a bank serving 20/s, ×10: 50 user requests per wall
	// second, up to 450 at the bank.
	rep, err := RunRetryStorm(context.Background(), reg, StormConfig{Rate: 5}, 10, func(f string, a ...any) {
		lines = append(lines, f)
	})
	require.NoError(t, err)
	t.Logf("naive %+v", rep.Naive)
	t.Logf("stormwatch %+v", rep.Stormwatch)
	// Naive: 3 attempts at each of two layers → 3 × 3 = 9 requests at the bank per user request.
	assert.InDelta(t, 9.0, rep.Naive.Amplification, 1.0)
	assert.Equal(t, 50, rep.Naive.FaultRequests, "5/s for 10s")
	// stormwatch: one budgeted retry layer and breakers → at most 1.1.
	assert.LessOrEqual(t, rep.Stormwatch.Amplification, 1.1)
	assert.Equal(t, 50, rep.Stormwatch.FaultRequests)
	assert.True(t, rep.Stormwatch.Recovered, "stormwatch recovers after the bank is back")
	assert.Greater(t, rep.Stormwatch.Degraded, 0, "the fallback answered while the bank was slow")
	// The stormwatch setup's primitives are in the registry (and so on /metrics).
	names := map[string]bool{}
	for _, b := range reg.Breakers() {
		names[b.Name] = true
	}
	assert.True(t, names["bank-channel"] && names["payment-service"])
	assert.NotEmpty(t, rep.Table())
}

func TestRunStopsPromptlyWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Listen: "127.0.0.1:0", Scenario: ScenarioOutage, Speed: 20, Duration: 0,
			Ready: func(u string) { ready <- u }})
	}()
	var url string
	select {
	case url = <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("demo did not start")
	}
	// Let the outage begin (15s demo time = 0.75s wall): hanging requests are in flight.
	time.Sleep(1500 * time.Millisecond)
	resp, err := http.Get(url)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Contains(t, string(body), `resilience_circuitbreaker_state{name="payments"`)
	assert.Contains(t, string(body), "go_goroutines")
	http.DefaultClient.CloseIdleConnections()

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("demo did not stop within 2s")
	}
	assert.Less(t, time.Since(start), 2*time.Second)
	// The port is released.
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics")
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	_ = l.Close()
}

func TestListenAddressInUseIsARuntimeError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	err = Run(context.Background(), Config{Listen: l.Addr().String(), Duration: time.Second})
	require.Error(t, err)
	var ue *UsageError
	assert.False(t, errors.As(err, &ue))
	assert.Contains(t, err.Error(), "listening on")
}

func TestBoardTerminalAndPlain(t *testing.T) {
	var plain bytes.Buffer
	b := &board{out: &plain}
	b.update([]string{"a", "b"})
	b.update([]string{"c", "d"})
	assert.Equal(t, "a\nb\nc\nd\n", plain.String(), "not a terminal: periodic plain lines")

	var tty bytes.Buffer
	b = &board{out: &tty, tty: true}
	b.update([]string{"a", "b"})
	logs := b.logWriter(&tty, true)
	require.NotNil(t, logs)
	_, _ = logs.Write([]byte("log line\n"))
	b.update([]string{"c", "d"})
	want := "\x1b[2Ka\n\x1b[2Kb\n" + // drawn
		"\r\x1b[2A\x1b[J" + "log line\n" + "\x1b[2Ka\n\x1b[2Kb\n" + // lifted, logged, redrawn
		"\r\x1b[2A\x1b[J" + "\x1b[2Kc\n\x1b[2Kd\n" // redrawn in place
	assert.Equal(t, want, tty.String())

	var other bytes.Buffer
	assert.Equal(t, io.Writer(&other), b.logWriter(&other, false), "stderr elsewhere: written as is")
}

func TestStatusLine(t *testing.T) {
	now := depCounts{state: "open", calls: 120, retries: 30, notPermitted: 50, bulkheadFull: 2, fallbacks: 52, timedOut: 3}
	prev := depCounts{calls: 100, retries: 20}
	line := statusLine(Payments, now, prev, 2*time.Second)
	assert.LessOrEqual(t, len([]rune(line)), termWidth)
	assert.Equal(t, "payments        open            10.0      5.0        52         52", line)
	assert.Equal(t, "dependency      breaker        req/s  retry/s  rejected  fallbacks", columns(false))
	assert.Equal(t, "payments        open             120       30        52         52", statusLine(Payments, now, depCounts{}, 0))
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBoardCutsLongLinesOnATerminal(t *testing.T) {
	var tty bytes.Buffer
	b := &board{out: &tty, tty: true}
	b.update([]string{strings.Repeat("x", 200)})
	assert.Equal(t, "\x1b[2K"+strings.Repeat("x", termWidth-1)+"…\n", tty.String())
}
