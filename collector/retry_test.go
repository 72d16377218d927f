package collector

import (
	"context"
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

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// The instrument packages may not import the catalog, so they define the same words; these
// must be exactly the catalog's closed sets, in the same order (snapshots are indexed by them).
func TestRetryLabelSetsMatchTheCatalog(t *testing.T) {
	assert.Equal(t, catalog.Names(catalog.Classes[:]), classify.Classes)
	assert.Equal(t, catalog.Names(catalog.RetryKinds[:]), retry.CallKinds)
	assert.Equal(t, catalog.Names(catalog.Outcomes[:]), retry.Outcomes)
	assert.Equal(t, catalog.Names(catalog.DelaySources[:]), retry.DelaySources)
	assert.Equal(t, catalog.RetryBackoff.Buckets, retry.BackoffBuckets())
	assert.Equal(t, catalog.BackoffBuckets, retry.BackoffBuckets())
	assert.Equal(t, string(catalog.Retry), string(instrument.KindRetry))

	pairs := [][2]string{
		{catalog.ClassHTTP4xx.String(), classify.ClassHTTP4xx}, {catalog.ClassHTTPAuth.String(), classify.ClassHTTPAuth},
		{catalog.ClassHTTP408.String(), classify.ClassHTTP408}, {catalog.ClassHTTP429.String(), classify.ClassHTTP429},
		{catalog.ClassHTTP5xx.String(), classify.ClassHTTP5xx}, {catalog.ClassHTTP5xxPermanent.String(), classify.ClassHTTP5xxPermanent},
		{catalog.ClassConnRefused.String(), classify.ClassConnRefused}, {catalog.ClassConnReset.String(), classify.ClassConnReset},
		{catalog.ClassDNS.String(), classify.ClassDNS}, {catalog.ClassTLSCert.String(), classify.ClassTLSCert},
		{catalog.ClassTLS.String(), classify.ClassTLS}, {catalog.ClassTimeout.String(), classify.ClassTimeout},
		{catalog.ClassCanceled.String(), classify.ClassCanceled}, {catalog.ClassRejected.String(), classify.ClassRejected},
		{catalog.ClassError.String(), classify.ClassError},
		{catalog.RetrySuccessfulWithoutRetry.String(), retry.KindSuccessfulWithoutRetry},
		{catalog.RetrySuccessfulWithRetry.String(), retry.KindSuccessfulWithRetry},
		{catalog.RetryFailedWithoutRetry.String(), retry.KindFailedWithoutRetry},
		{catalog.RetryFailedWithRetry.String(), retry.KindFailedWithRetry},
		{catalog.RetryAborted.String(), retry.KindAborted},
		{catalog.OutcomeRetrying.String(), retry.OutcomeRetrying}, {catalog.OutcomeSucceeded.String(), retry.OutcomeSucceeded},
		{catalog.OutcomeGaveUp.String(), retry.OutcomeGaveUp}, {catalog.OutcomeAborted.String(), retry.OutcomeAborted},
		{catalog.OutcomeBudgetExhausted.String(), retry.OutcomeBudgetExhausted},
		{catalog.SourceBackoff.String(), retry.SourceBackoff}, {catalog.SourceRetryAfter.String(), retry.SourceRetryAfter},
	}
	for _, p := range pairs {
		assert.Equal(t, p[0], p[1])
	}
}

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

func TestRetryExposition(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	fc := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	cfg := retry.DefaultConfig()
	cfg.Clock = fc
	cfg.Rand = zeroRand{}
	cfg.Backoff = retry.Backoff{Strategy: retry.Exponential, Base: 200 * time.Millisecond}
	cfg.Budget = retry.BudgetConfig{NoFloor: true, NoDecay: true}
	pay, err := reg.Retry("payments", cfg)
	require.NoError(t, err)
	_, err = reg.Retry("orders", cfg) // unused: every series at 0
	require.NoError(t, err)
	ctx := context.Background()

	// 20 first-attempt successes: 2 budget tokens.
	for range 20 {
		require.NoError(t, pay.Do(ctx, func(context.Context) error { return nil }))
	}
	// 503 with Retry-After: 2 (waits 2 s, retry_after), a reset (waits 400 ms, backoff), then success.
	n := 0
	require.NoError(t, runDriven(fc, func() error {
		return pay.Do(ctx, func(context.Context) error {
			n++
			switch n {
			case 1:
				return &retry.HTTPError{StatusCode: http.StatusServiceUnavailable, RetryAfter: "2", Idempotent: true}
			case 2:
				return &retry.HTTPError{Err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, Idempotent: true}
			}
			return nil
		})
	}))
	// A 404: failed without retry.
	require.Error(t, pay.Do(ctx, func(context.Context) error { return &retry.HTTPError{StatusCode: 404, Idempotent: true} }))
	// A timeout: the budget is empty, the retry is denied.
	require.Error(t, runDriven(fc, func() error {
		return pay.Do(ctx, func(context.Context) error { return &retry.HTTPError{Err: context.DeadlineExceeded, Idempotent: true} })
	}))
	// The caller cancels.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, pay.Do(cctx, func(ctx context.Context) error { return ctx.Err() }))

	want := `
# HELP resilience_retry_attempts_total Retries performed: attempts after the first.
# TYPE resilience_retry_attempts_total counter
resilience_retry_attempts_total{name="orders"} 0
resilience_retry_attempts_total{name="payments"} 2
# HELP resilience_retry_backoff_seconds Delays actually waited before retries, by what set the delay.
# TYPE resilience_retry_backoff_seconds histogram
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="0.01"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="0.025"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="0.05"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="0.1"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="0.25"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="0.5"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="1"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="2.5"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="5"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="10"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="30"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="60"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="backoff",le="+Inf"} 0
resilience_retry_backoff_seconds_sum{name="orders",source="backoff"} 0
resilience_retry_backoff_seconds_count{name="orders",source="backoff"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="0.01"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="0.025"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="0.05"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="0.1"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="0.25"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="0.5"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="1"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="2.5"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="5"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="10"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="30"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="60"} 0
resilience_retry_backoff_seconds_bucket{name="orders",source="retry_after",le="+Inf"} 0
resilience_retry_backoff_seconds_sum{name="orders",source="retry_after"} 0
resilience_retry_backoff_seconds_count{name="orders",source="retry_after"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="0.01"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="0.025"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="0.05"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="0.1"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="0.25"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="0.5"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="1"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="2.5"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="5"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="10"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="30"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="60"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="backoff",le="+Inf"} 1
resilience_retry_backoff_seconds_sum{name="payments",source="backoff"} 0.4
resilience_retry_backoff_seconds_count{name="payments",source="backoff"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="0.01"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="0.025"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="0.05"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="0.1"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="0.25"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="0.5"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="1"} 0
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="2.5"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="5"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="10"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="30"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="60"} 1
resilience_retry_backoff_seconds_bucket{name="payments",source="retry_after",le="+Inf"} 1
resilience_retry_backoff_seconds_sum{name="payments",source="retry_after"} 2
resilience_retry_backoff_seconds_count{name="payments",source="retry_after"} 1
# HELP resilience_retry_budget_denied_total Retries refused by the retry budget.
# TYPE resilience_retry_budget_denied_total counter
resilience_retry_budget_denied_total{name="orders"} 0
resilience_retry_budget_denied_total{name="payments"} 1
# HELP resilience_retry_budget_tokens Retry budget tokens available.
# TYPE resilience_retry_budget_tokens gauge
resilience_retry_budget_tokens{name="orders"} 0
resilience_retry_budget_tokens{name="payments"} 0
# HELP resilience_retry_calls_total Logical calls through the retry, by final outcome.
# TYPE resilience_retry_calls_total counter
resilience_retry_calls_total{kind="aborted",name="orders"} 0
resilience_retry_calls_total{kind="aborted",name="payments"} 1
resilience_retry_calls_total{kind="failed_with_retry",name="orders"} 0
resilience_retry_calls_total{kind="failed_with_retry",name="payments"} 0
resilience_retry_calls_total{kind="failed_without_retry",name="orders"} 0
resilience_retry_calls_total{kind="failed_without_retry",name="payments"} 2
resilience_retry_calls_total{kind="successful_with_retry",name="orders"} 0
resilience_retry_calls_total{kind="successful_with_retry",name="payments"} 1
resilience_retry_calls_total{kind="successful_without_retry",name="orders"} 0
resilience_retry_calls_total{kind="successful_without_retry",name="payments"} 20
`
	classes := map[string]int{"http_5xx": 1, "conn_reset": 1, "http_4xx": 1, "timeout": 1, "canceled": 1}
	var b strings.Builder
	b.WriteString("# HELP resilience_retry_errors_total Failed attempts, by failure class.\n# TYPE resilience_retry_errors_total counter\n")
	for _, class := range sortedCopy(catalog.Names(catalog.Classes[:])) {
		b.WriteString(`resilience_retry_errors_total{class="` + class + `",name="orders"} 0` + "\n")
		b.WriteString(`resilience_retry_errors_total{class="` + class + `",name="payments"} ` + itoa(classes[class]) + "\n")
	}
	want += b.String()
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"resilience_retry_calls_total", "resilience_retry_attempts_total", "resilience_retry_errors_total",
		"resilience_retry_backoff_seconds", "resilience_retry_budget_tokens", "resilience_retry_budget_denied_total"))
	requireLintClean(t, c)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func itoa(n int) string { return string(rune('0' + n)) }
