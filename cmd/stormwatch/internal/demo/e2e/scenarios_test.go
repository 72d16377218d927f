//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// The scenario tests run each script sped up, in real time on loopback, and assert its
// signature in the exported metrics: statistical checks with wide margins.

// gather runs a scenario for wall time d (demo time d × speed) and returns the registry's
// metrics as the collector exports them.
func gather(t *testing.T, scenario string, speed, rate float64, d time.Duration) map[string]*dto.MetricFamily {
	t.Helper()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	var stdout, stderr syncBuffer
	err = demo.Run(context.Background(), demo.Config{
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
	assert.Contains(t, stdout.String(), "--duration "+d.String()+" reached, stopped cleanly")
	assert.NotContains(t, stderr.String(), `"error_class":"canceled"`, "the stop cancels calls: aborted, not logged")
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

func TestScenarioSteadyNoTrips(t *testing.T) {
	// ×5 rather than ×10: the timeouts shrink with the speed (2.5s attempts: 500 ms wall), and
	// a loaded machine must not turn a steady run into timeouts and fallbacks.
	mfs := gather(t, demo.ScenarioSteady, 5, 10, 6*time.Second)
	for _, dep := range demo.Dependencies {
		assert.Zero(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", dep, "to", "open")), dep)
		assert.Zero(t, value(mfs, "resilience_circuitbreaker_not_permitted_calls_total", l("name", dep)), dep)
		assert.Equal(t, 1.0, value(mfs, "resilience_circuitbreaker_state", l("name", dep, "state", "closed")), dep)
		assert.Greater(t, value(mfs, "resilience_retry_calls_total", l("name", dep, "kind", "successful_without_retry")), 200.0, dep)
		assert.Zero(t, value(mfs, "resilience_fallback_calls_total", l("name", dep)), dep)
	}
}

func TestScenarioOutageTripsRejectsAndFallsBack(t *testing.T) {
	// Fault from 15s to 75s demo time: 1.5s to 7.5s wall at ×10; stop at 5s wall.
	mfs := gather(t, demo.ScenarioOutage, 10, 10, 5*time.Second)
	p := l("name", demo.Payments)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", demo.Payments, "from", "closed", "to", "open")), 1.0)
	assert.Greater(t, value(mfs, "resilience_circuitbreaker_not_permitted_calls_total", p), 0.0)
	assert.Greater(t, value(mfs, "resilience_fallback_calls_total", l("name", demo.Payments, "cause", "circuit_open")), 0.0)
	assert.Greater(t, value(mfs, "resilience_retry_attempts_total", p), 0.0)
	assert.Greater(t, value(mfs, "resilience_circuitbreaker_tripped_since_timestamp_seconds", p), 0.0, "still not closed at the end")
	// Inventory is flaky, not down: retries rescue calls and its breaker stays closed.
	assert.Greater(t, value(mfs, "resilience_retry_calls_total", l("name", demo.Inventory, "kind", "successful_with_retry")), 0.0)
	assert.Zero(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", demo.Inventory, "to", "open")))
	// Recommendations is slow behind a small bulkhead: callers queue for permits.
	assert.Greater(t, value(mfs, "resilience_bulkhead_wait_duration_seconds", l("name", demo.Recommendations)), 0.0)
}

func TestScenarioSlowTripsOnSlowCalls(t *testing.T) {
	// Fault from 15s demo time: 3s wall at ×5; 1.1–1.5s answers (220–300 ms wall) against a
	// 2.5s attempt timeout (500 ms) and a 1s slow-call duration (200 ms).
	mfs := gather(t, demo.ScenarioSlow, 5, 10, 6*time.Second)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", demo.Payments, "from", "closed", "to", "open")), 1.0)
	slow := value(mfs, "resilience_circuitbreaker_calls_total", l("name", demo.Payments, "kind", "slow_successful"))
	failed := value(mfs, "resilience_circuitbreaker_calls_total", l("name", demo.Payments, "kind", "failed")) +
		value(mfs, "resilience_circuitbreaker_calls_total", l("name", demo.Payments, "kind", "slow_failed"))
	assert.GreaterOrEqual(t, slow, 20.0, "the window filled with slow successes")
	assert.Less(t, failed, slow/2, "the trip came from the slow-call rate, not failures")
}

func TestScenarioRateLimitedWaitsAsTold(t *testing.T) {
	mfs := gather(t, demo.ScenarioRateLimited, 10, 10, 4*time.Second)
	assert.Greater(t, value(mfs, "resilience_retry_backoff_seconds", l("name", demo.Inventory, "source", "retry_after")), 10.0)
	assert.Greater(t, value(mfs, "resilience_retry_errors_total", l("name", demo.Inventory, "class", "http_429")), 10.0)
	assert.Zero(t, value(mfs, "resilience_retry_backoff_seconds", l("name", demo.Payments, "source", "retry_after")))
}

func TestScenarioFlappingTripsAgainAndAgain(t *testing.T) {
	// Down phases start at 10, 30, 50 and 70s demo time; at ×20, 3.3s wall covers three.
	mfs := gather(t, demo.ScenarioFlapping, 20, 5, 3300*time.Millisecond)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", demo.Payments, "from", "closed", "to", "open")), 3.0)
	assert.GreaterOrEqual(t, value(mfs, "resilience_circuitbreaker_transitions_total", l("name", demo.Payments, "from", "half_open", "to", "closed")), 2.0)
}

func TestRetryStormAmplification(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	var lines []string
	// 5 user requests/s (demo time) against a bank serving 20/s, ×10: 50 user requests per wall
	// second, up to 450 at the bank.
	rep, err := demo.RunRetryStorm(context.Background(), reg, demo.StormConfig{Rate: 5}, 10, func(f string, a ...any) {
		lines = append(lines, f)
	})
	require.NoError(t, err)
	t.Logf("naive %+v", rep.Naive)
	t.Logf("stormwatch %+v", rep.Stormwatch)
	require.True(t, rep.Complete())
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

// TestRunStopsPromptlyWhenCancelled stops the outage while hanging calls are in flight: Run
// returns within 2s and releases its port.
func TestRunStopsPromptlyWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- demo.Run(ctx, demo.Config{Listen: "127.0.0.1:0", Scenario: demo.ScenarioOutage, Speed: 20,
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
	resp, err := client.Get(url)
	require.NoError(t, err)
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	assert.Contains(t, body.String(), `resilience_circuitbreaker_state{name="payments"`)

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("demo did not stop within 2s")
	}
	assert.Less(t, time.Since(start), 2*time.Second)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics")
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the port is released")
	_ = ln.Close()
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
