package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// A scripted history on the fake clock: a limiter with limit 2 admits two calls of 40 ms and
// 60 ms, rejects a third while both run, and one more call is dropped; a throttle sends one
// request that succeeds.
func TestLimiterAndThrottleMetrics(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := reg.Limiter("payments", limit.Config{InitialLimit: 2, MinLimit: 1, MaxLimit: 2, MinSamples: 2, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	// The limiter times one call in two here (sampling by the admission number: the 4th is the
	// first it times). A first window of two untimed calls teaches it nothing.
	for range 2 {
		w, err := l.Acquire(ctx)
		require.NoError(t, err)
		w.Done(nil)
	}
	a, err := l.Acquire(ctx)
	require.NoError(t, err)
	b, err := l.Acquire(ctx)
	require.NoError(t, err)
	_, err = l.Acquire(ctx) // rejected: reason limit
	require.ErrorIs(t, err, limit.ErrLimited)
	clk.Advance(40 * time.Millisecond)
	a.Done(nil)
	clk.Advance(20 * time.Millisecond)
	b.Done(nil) // the window closes: its timed call (b, 60 ms) is the sample and the first baseline
	c, err := l.Acquire(ctx)
	require.NoError(t, err) // one in flight at scrape time
	_ = c

	th, err := reg.Throttle("payments", throttle.Config{Clock: clk})
	require.NoError(t, err)
	require.NoError(t, th.Do(ctx, func(context.Context) error { return nil }))

	coll, err := New(reg)
	require.NoError(t, err)
	// calls: 5 permitted (two, a, b, c), 1 rejected; samples: 4 measured. The limit stays at its
	// maximum, 2 (the window used it and latency was at the baseline).
	want := `
# HELP resilience_limiter_baseline_latency_seconds The limiter's no-load latency estimate: the lowest window average, raised only from windows its own load cannot explain.
# TYPE resilience_limiter_baseline_latency_seconds gauge
resilience_limiter_baseline_latency_seconds{name="payments"} 0.06
# HELP resilience_limiter_calls_total Limiter admission decisions.
# TYPE resilience_limiter_calls_total counter
resilience_limiter_calls_total{kind="aborted",name="payments"} 0
resilience_limiter_calls_total{kind="permitted",name="payments"} 5
resilience_limiter_calls_total{kind="rejected",name="payments"} 1
# HELP resilience_limiter_inflight_calls Calls holding a limiter permit.
# TYPE resilience_limiter_inflight_calls gauge
resilience_limiter_inflight_calls{name="payments"} 1
# HELP resilience_limiter_limit Current adaptive concurrency limit.
# TYPE resilience_limiter_limit gauge
resilience_limiter_limit{name="payments"} 2
# HELP resilience_limiter_min_limit Configured lower bound of the adaptive concurrency limit.
# TYPE resilience_limiter_min_limit gauge
resilience_limiter_min_limit{name="payments"} 1
# HELP resilience_limiter_queued_calls Callers queued for a limiter permit.
# TYPE resilience_limiter_queued_calls gauge
resilience_limiter_queued_calls{name="payments"} 0
# HELP resilience_limiter_rejections_total Calls rejected by the limiter, by reason.
# TYPE resilience_limiter_rejections_total counter
resilience_limiter_rejections_total{name="payments",reason="deadline"} 0
resilience_limiter_rejections_total{name="payments",reason="limit"} 1
resilience_limiter_rejections_total{name="payments",reason="queue_full"} 0
resilience_limiter_rejections_total{name="payments",reason="queue_timeout"} 0
# HELP resilience_limiter_sample_latency_seconds Average latency of the calls in the limiter's last closed window.
# TYPE resilience_limiter_sample_latency_seconds gauge
resilience_limiter_sample_latency_seconds{name="payments"} 0.06
# HELP resilience_limiter_samples_total Admitted calls by what they taught the limiter: a latency, an overload signal (dropped) or nothing (ignored).
# TYPE resilience_limiter_samples_total counter
resilience_limiter_samples_total{kind="dropped",name="payments"} 0
resilience_limiter_samples_total{kind="ignored",name="payments"} 0
resilience_limiter_samples_total{kind="measured",name="payments"} 4
# HELP resilience_throttle_calls_total Client-side throttle: requests accepted or refused by the dependency, and requests shed locally (throttled).
# TYPE resilience_throttle_calls_total counter
resilience_throttle_calls_total{kind="accepted",name="payments"} 1
resilience_throttle_calls_total{kind="refused",name="payments"} 0
resilience_throttle_calls_total{kind="throttled",name="payments"} 0
# HELP resilience_throttle_rejection_probability Client-side throttle: probability (0..1) with which a new request is shed, max(0, (requests − K·accepts)/(requests + 1)) over the window.
# TYPE resilience_throttle_rejection_probability gauge
resilience_throttle_rejection_probability{name="payments"} 0
`
	names := []string{"resilience_limiter_baseline_latency_seconds", "resilience_limiter_calls_total",
		"resilience_limiter_inflight_calls", "resilience_limiter_limit", "resilience_limiter_min_limit",
		"resilience_limiter_queued_calls", "resilience_limiter_rejections_total",
		"resilience_limiter_sample_latency_seconds", "resilience_limiter_samples_total",
		"resilience_throttle_calls_total", "resilience_throttle_rejection_probability"}
	require.NoError(t, testutil.CollectAndCompare(coll, strings.NewReader(want), names...))
	// 16 series per limiter, 4 per throttle.
	require.Equal(t, 20, testutil.CollectAndCount(coll, names...))

	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(coll))
	problems, err := testutil.GatherAndLint(pr)
	require.NoError(t, err)
	require.Empty(t, problems)
}
