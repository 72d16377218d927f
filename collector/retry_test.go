package collector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

type zeroRand struct{}

func (zeroRand) Float64() float64 { return 0 }

// runDriven runs fn, advancing the fake clock by one minute whenever it waits (the retry's waits
// are far shorter), and returns fn's error.
func runDriven(fc *clock.Fake, fn func() error) error {
	done := make(chan struct{})
	var err error
	go func() { defer close(done); err = fn() }()
	for fc.WaitForTimers(1, done) {
		fc.Advance(time.Minute)
	}
	<-done
	return err
}

// retryHistory runs on payments: 20 first-attempt successes (2 budget tokens); a 503 with
// Retry-After: 2 (waits 2 s, retry_after), a reset (waits 400 ms, backoff), then success; a 404
// (failed without retry); a timeout whose retry the empty budget denies; a cancelled call; and a
// rejection by stormwatch itself. orders is never called.
func retryHistory(t *testing.T, opts ...Option) *Collector {
	t.Helper()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg, opts...)
	require.NoError(t, err)
	fc := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	cfg := retry.Config{}
	cfg.Clock = fc
	cfg.Rand = zeroRand{}
	cfg.Backoff = retry.Backoff{Strategy: retry.Exponential, Base: 200 * time.Millisecond}
	cfg.Budget = retry.BudgetConfig{DisableFloor: true, DisableDecay: true}
	pay, err := reg.Retry("payments", cfg)
	require.NoError(t, err)
	_, err = reg.Retry("orders", cfg) // unused
	require.NoError(t, err)
	ctx := context.Background()

	for range 20 {
		require.NoError(t, pay.Do(ctx, func(context.Context) error { return nil }))
	}
	get, err := http.NewRequest(http.MethodGet, "http://payments.internal/v1/pay", nil)
	require.NoError(t, err)
	n := 0
	require.NoError(t, runDriven(fc, func() error {
		return pay.Do(ctx, func(context.Context) error {
			n++
			switch n {
			case 1:
				return httpx.Result(get, &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"2"}}}, nil)
			case 2:
				return httpx.Result(get, nil, &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
			}
			return nil
		})
	}))
	require.Error(t, pay.Do(ctx, func(context.Context) error { return httpx.Result(get, &http.Response{StatusCode: 404}, nil) }))
	require.Error(t, runDriven(fc, func() error {
		return pay.Do(ctx, func(context.Context) error { return httpx.Result(get, nil, context.DeadlineExceeded) })
	}))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, pay.Do(cctx, func(ctx context.Context) error { return ctx.Err() }))
	require.Error(t, pay.Do(ctx, func(context.Context) error { return &breaker.OpenError{Name: "payments", State: catalog.StateOpen} }))
	return c
}

var retryFamilies = []string{"resilience_retry_calls_total", "resilience_retry_attempts_total", "resilience_retry_errors_total",
	"resilience_retry_backoff_seconds", "resilience_retry_budget_tokens", "resilience_retry_budget_denied_total"}

const retryCommon = `# HELP resilience_retry_attempts_total Retries performed: attempts after the first.
# TYPE resilience_retry_attempts_total counter
resilience_retry_attempts_total{name="orders"} 0
resilience_retry_attempts_total{name="payments"} 2
# HELP resilience_retry_budget_denied_total Retries refused by the retry budget.
# TYPE resilience_retry_budget_denied_total counter
resilience_retry_budget_denied_total{name="orders"} 0
resilience_retry_budget_denied_total{name="payments"} 1
# HELP resilience_retry_budget_tokens Retry budget tokens available.
# TYPE resilience_retry_budget_tokens gauge
resilience_retry_budget_tokens{name="orders"} 0
resilience_retry_budget_tokens{name="payments"} 0
`

func TestRetryExposition(t *testing.T) {
	c := retryHistory(t)
	// Delays waited by payments: 2 s before the first retry (Retry-After: 2) and 400 ms before
	// the second (exponential backoff, 200 ms × 2); orders exports the backoff source at 0 only.
	// Native histograms read as count and sum in the text format.
	want := retryCommon + `# HELP resilience_retry_backoff_seconds Delays actually waited before retries, by what set the delay.
# TYPE resilience_retry_backoff_seconds histogram
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="+Inf"} 0
resilience_retry_backoff_seconds_sum{name="orders",source="backoff"} 0
resilience_retry_backoff_seconds_count{name="orders",source="backoff"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="+Inf"} 1
resilience_retry_backoff_seconds_sum{name="payments",source="backoff"} 0.4
resilience_retry_backoff_seconds_count{name="payments",source="backoff"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="+Inf"} 1
resilience_retry_backoff_seconds_sum{name="payments",source="retry_after"} 2
resilience_retry_backoff_seconds_count{name="payments",source="retry_after"} 1
# HELP resilience_retry_calls_total Logical calls through the retry, by final outcome.
# TYPE resilience_retry_calls_total counter
resilience_retry_calls_total{kind="aborted",name="payments"} 1
resilience_retry_calls_total{kind="failed_with_retry",name="orders"} 0
resilience_retry_calls_total{kind="failed_with_retry",name="payments"} 0
resilience_retry_calls_total{kind="failed_without_retry",name="orders"} 0
resilience_retry_calls_total{kind="failed_without_retry",name="payments"} 3
resilience_retry_calls_total{kind="successful_with_retry",name="orders"} 0
resilience_retry_calls_total{kind="successful_with_retry",name="payments"} 1
resilience_retry_calls_total{kind="successful_without_retry",name="orders"} 0
resilience_retry_calls_total{kind="successful_without_retry",name="payments"} 20
# HELP resilience_retry_errors_total Failed attempts, by failure class.
# TYPE resilience_retry_errors_total counter
resilience_retry_errors_total{class="canceled",name="payments"} 1
resilience_retry_errors_total{class="conn_reset",name="payments"} 1
resilience_retry_errors_total{class="http_4xx",name="payments"} 1
resilience_retry_errors_total{class="http_5xx",name="payments"} 1
resilience_retry_errors_total{class="timeout",name="payments"} 1
`
	// The classes counted appear; the rejection (class rejected) is counted by the retry but
	// exported in full detail only.
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), retryFamilies...))
	requireLintClean(t, c)
}

func TestRetryFullDetailExposition(t *testing.T) {
	c := retryHistory(t, WithFullDetail())
	const family = "resilience_retry_backoff_seconds"
	backoff := histogramLines(family, `name="orders",source="backoff"`, catalog.BackoffBuckets) +
		histogramLines(family, `name="orders",source="retry_after"`, catalog.BackoffBuckets) +
		histogramLines(family, `name="payments",source="backoff"`, catalog.BackoffBuckets, 0.4) +
		histogramLines(family, `name="payments",source="retry_after"`, catalog.BackoffBuckets, 2)
	want := retryCommon + `# HELP resilience_retry_backoff_seconds Delays actually waited before retries, by what set the delay.
# TYPE resilience_retry_backoff_seconds histogram
` + backoff + `# HELP resilience_retry_calls_total Logical calls through the retry, by final outcome.
# TYPE resilience_retry_calls_total counter
resilience_retry_calls_total{kind="aborted",name="orders"} 0
resilience_retry_calls_total{kind="aborted",name="payments"} 1
resilience_retry_calls_total{kind="failed_with_retry",name="orders"} 0
resilience_retry_calls_total{kind="failed_with_retry",name="payments"} 0
resilience_retry_calls_total{kind="failed_without_retry",name="orders"} 0
resilience_retry_calls_total{kind="failed_without_retry",name="payments"} 3
resilience_retry_calls_total{kind="successful_with_retry",name="orders"} 0
resilience_retry_calls_total{kind="successful_with_retry",name="payments"} 1
resilience_retry_calls_total{kind="successful_without_retry",name="orders"} 0
resilience_retry_calls_total{kind="successful_without_retry",name="payments"} 20
`
	// Every class of the closed set, at 0 unless counted.
	classes := map[catalog.Class]int{catalog.ClassHTTP5xx: 1, catalog.ClassConnReset: 1, catalog.ClassHTTP4xx: 1,
		catalog.ClassTimeout: 1, catalog.ClassCanceled: 1, catalog.ClassRejected: 1}
	var b strings.Builder
	b.WriteString("# HELP resilience_retry_errors_total Failed attempts, by failure class.\n# TYPE resilience_retry_errors_total counter\n")
	for _, class := range catalog.Classes {
		fmt.Fprintf(&b, "resilience_retry_errors_total{class=%q,name=\"orders\"} 0\n", class)
		fmt.Fprintf(&b, "resilience_retry_errors_total{class=%q,name=\"payments\"} %d\n", class, classes[class])
	}
	want += b.String()
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), retryFamilies...))
	requireLintClean(t, c)
}

func TestRetryClassesAppearOnceCounted(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	r, err := reg.Retry("inventory", retry.Config{MaxAttempts: 1, Classify: func(error, bool) classify.Verdict {
		return classify.Verdict{BreakerFailure: true, Class: catalog.ClassGRPCUnavailable}
	}})
	require.NoError(t, err)
	assert.Zero(t, testutil.CollectAndCount(c, "resilience_retry_errors_total"), "no class before the first failure")

	require.Error(t, r.Do(context.Background(), func(context.Context) error { return errors.New("unavailable") }))
	want := `# HELP resilience_retry_errors_total Failed attempts, by failure class.
# TYPE resilience_retry_errors_total counter
resilience_retry_errors_total{class="grpc_unavailable",name="inventory"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "resilience_retry_errors_total"))
	requireLintClean(t, c)
}
