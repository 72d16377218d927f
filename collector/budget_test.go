package collector

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// The series budget: what one circuit breaker, and one dependency behind a full pipeline, may
// cost in the default text exposition after every path has run.
const (
	maxSeriesPerBreaker    = 25
	maxSeriesPerDependency = 50
)

// historyGuard bounds every wait of the scripted history.
const historyGuard = 10 * time.Second

// pipelineHistory is a dependency behind a full pipeline on a fake clock, with a script that
// drives the clock through retries, timeouts and bulkhead waits.
type pipelineHistory struct {
	t        *testing.T
	reg      *instrument.Registry
	p        *instrument.Pipeline
	clk      *clock.Fake
	retrying chan events.Retry
}

// Configuration of the scripted dependency.
const (
	histTimeout     = 2 * time.Second        // the attempt's time limit
	histSlow        = time.Second            // the breaker's slow-call duration
	histOpen        = 10 * time.Second       // the breaker's open duration
	histBackoff     = 100 * time.Millisecond // the retry's constant backoff
	histBulkheadMax = 100 * time.Millisecond // the bulkhead's MaxWait
)

func newPipelineHistory(t *testing.T, name string) *pipelineHistory {
	t.Helper()
	h := &pipelineHistory{t: t, clk: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		retrying: make(chan events.Retry, 16)}
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	h.reg = reg
	rc := retry.Config{MaxAttempts: 3, Clock: h.clk,
		Backoff: retry.Backoff{Strategy: retry.Constant, Base: histBackoff},
		Budget:  retry.BudgetConfig{NoFloor: true, NoDecay: true}}
	h.p, err = reg.Pipeline(name, instrument.PipelineConfig{
		Retry: &rc,
		Breaker: &breaker.Config{WindowSize: 20, MinCalls: 10, FailureRateThreshold: 0.5, SlowCallDuration: histSlow,
			OpenDuration: histOpen, NoJitter: true, HalfOpenCalls: 1, Clock: h.clk},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 1, MaxWait: histBulkheadMax, Clock: h.clk},
		Timeout:  &timeout.Config{Timeout: histTimeout, Clock: h.clk},
		Fallback: &fallback.Config{},
	})
	require.NoError(t, err)
	reg.Events().Retries.Add(func(e events.Retry) {
		if e.Outcome == catalog.OutcomeRetrying {
			h.retrying <- e
		}
	})
	return h
}

// start runs fn through the pipeline with a fallback in a goroutine; the result arrives on the
// returned channel.
func (h *pipelineHistory) start(fn func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.p.DoWithFallback(context.Background(), fn, func(context.Context, catalog.Cause, error) error { return nil })
		done <- err
	}()
	return done
}

// call runs fn through the pipeline, letting every retry wait pass on the fake clock, and
// returns the call's error.
func (h *pipelineHistory) call(fn func(context.Context) error) error {
	h.t.Helper()
	done := h.start(fn)
	for {
		select {
		case err := <-done:
			return err
		case e := <-h.retrying:
			// The attempt is over (its time limit stopped): the next timer is the retry's wait.
			require.True(h.t, h.clk.WaitForTimers(1, nil))
			h.clk.Advance(e.Delay)
		case <-time.After(historyGuard):
			h.t.Fatal("the call did not finish")
		}
	}
}

// takes returns an attempt that lasts d on the fake clock and returns err.
func (h *pipelineHistory) takes(d time.Duration, err error) func(context.Context) error {
	return func(context.Context) error {
		h.clk.Advance(d)
		return err
	}
}

// sequence returns an attempt function returning errs[i] on its i-th call, then nil.
func sequence(errs ...error) func(context.Context) error {
	i := 0
	return func(context.Context) error {
		defer func() { i++ }()
		if i < len(errs) {
			return errs[i]
		}
		return nil
	}
}

var (
	getPay, _  = http.NewRequest(http.MethodGet, "http://payments.internal/v1/pay", nil)
	postPay, _ = http.NewRequest(http.MethodPost, "http://payments.internal/v1/pay", nil)

	err503RetryAfter = httpx.Result(getPay, &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"1"}}}, nil)
	err503           = httpx.Result(getPay, &http.Response{StatusCode: http.StatusServiceUnavailable}, nil)
	// err504 is a gateway timeout of a request that may not be repeated: a breaker failure the
	// retry does not retry, so the fallback sees it as is (cause error).
	err504 = httpx.Result(postPay, &http.Response{StatusCode: http.StatusGatewayTimeout}, nil)
)

// everyPath runs, on a dependency behind a full pipeline: successes, a slow success, retries
// after Retry-After and after backoff, calls that run out of attempts, a retry the budget
// denies, a timed-out attempt, a non-retryable failure, a bulkhead wait and a bulkhead
// rejection (ignored by the breaker), a trip, rejections by the open breaker, a failed probe and a successful one —
// and with them a fallback of every cause. It checks that each path ran.
func (h *pipelineHistory) everyPath() {
	t := h.t
	t.Helper()
	ok := func(context.Context) error { return nil }
	p := h.p

	// 40 first-attempt successes earn 4 budget tokens.
	for range 40 {
		require.NoError(t, h.call(ok))
	}

	// The bulkhead: one call holds the only permit; a second waits 50 ms for it; a third waits
	// the whole MaxWait and is rejected (the fallback answers: bulkhead_full).
	hold, release := make(chan struct{}), make(chan struct{})
	holder := h.start(func(context.Context) error { close(hold); <-release; return nil })
	<-hold
	waiter := h.start(ok)
	require.True(t, h.clk.WaitForTimers(2, nil)) // the holder's time limit and the waiter's MaxWait
	h.clk.Advance(50 * time.Millisecond)
	close(release)
	require.NoError(t, <-holder)
	require.NoError(t, <-waiter)
	hold, release = make(chan struct{}), make(chan struct{})
	holder = h.start(func(context.Context) error { close(hold); <-release; return nil })
	<-hold
	rejected := h.start(ok)
	require.True(t, h.clk.WaitForTimers(2, nil))
	h.clk.Advance(histBulkheadMax)
	require.NoError(t, <-rejected)
	close(release)
	require.NoError(t, <-holder)

	// One slow success.
	require.NoError(t, h.call(h.takes(histSlow+500*time.Millisecond, nil)))

	// A 503 with Retry-After, then success; a 503, then success after the backoff.
	require.NoError(t, h.call(sequence(err503RetryAfter)))
	require.NoError(t, h.call(sequence(err503)))
	for range 10 {
		require.NoError(t, h.call(ok))
	}
	// 503s until the budget denies a retry: the calls that ran out of attempts and the one
	// denied a retry get the fallback (retries_exhausted).
	for i := 0; p.Retry().Snapshot().BudgetDenied == 0; i++ {
		require.Less(t, i, 5, "the budget never denied a retry")
		require.NoError(t, h.call(sequence(err503, err503, err503)))
	}
	// (A business error — classify.Business — is ignored by the breaker; the retry counts it as
	// a failed attempt of class "error" today, so it is left out: the bulkhead's rejection
	// below is the ignored call.)
	for range 10 {
		require.NoError(t, h.call(ok))
	}
	// An attempt that hangs until its time limit: not retried (the retry is not idempotent),
	// slow and failed for the breaker; the fallback answers (timeout).
	done := h.start(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	require.True(t, h.clk.WaitForTimers(1, nil))
	h.clk.Advance(histTimeout)
	require.NoError(t, <-done)
	// A non-retryable failure: the fallback answers (error).
	require.NoError(t, h.call(sequence(err504)))

	// Non-retryable failures until the breaker trips; then two calls it rejects (circuit_open).
	for i := 0; p.Breaker().State() != catalog.StateOpen; i++ {
		require.Less(t, i, 20, "the breaker never tripped")
		require.NoError(t, h.call(sequence(err504)))
	}
	require.NoError(t, h.call(ok))
	require.NoError(t, h.call(ok))
	// A failed probe reopens it; a successful one closes it.
	h.clk.Advance(histOpen)
	require.NoError(t, h.call(sequence(err504)))
	require.Equal(t, catalog.StateOpen, p.Breaker().State())
	h.clk.Advance(histOpen)
	require.NoError(t, h.call(ok))
	require.Equal(t, catalog.StateClosed, p.Breaker().State())

	// Every path ran.
	b, r, bh, to, fb := p.Breaker().Snapshot(), p.Retry().Snapshot(), p.Bulkhead().Snapshot(), p.Timeout().Snapshot(), p.Fallback().Snapshot()
	for _, tr := range [][2]catalog.State{{catalog.StateClosed, catalog.StateOpen}, {catalog.StateOpen, catalog.StateHalfOpen},
		{catalog.StateHalfOpen, catalog.StateOpen}, {catalog.StateHalfOpen, catalog.StateClosed}} {
		assert.NotZero(t, b.Transitions[tr[0]][tr[1]], "transition %s→%s", tr[0], tr[1])
	}
	for _, k := range catalog.CallKinds {
		assert.NotZero(t, b.Calls[k], "breaker calls %s", k)
	}
	assert.NotZero(t, b.NotPermitted, "rejections")
	assert.NotZero(t, b.Trips[catalog.TripProbeFailed], "failed probe")
	for _, src := range catalog.DelaySources {
		assert.NotZero(t, r.Backoff[src].Count, "retry delays of source %s", src)
	}
	assert.NotZero(t, r.BudgetDenied, "budget denial")
	for _, k := range []catalog.RetryKind{catalog.RetrySuccessfulWithoutRetry, catalog.RetrySuccessfulWithRetry,
		catalog.RetryFailedWithoutRetry, catalog.RetryFailedWithRetry} {
		assert.NotZero(t, r.Calls[k], "retry calls %s", k)
	}
	for _, a := range []catalog.Admission{catalog.AdmissionPermitted, catalog.AdmissionRejected} {
		assert.NotZero(t, bh.Calls[a], "bulkhead %s", a)
	}
	assert.NotZero(t, bh.Wait.Sum, "bulkhead wait")
	for _, k := range []catalog.TimeoutKind{catalog.TimeoutSuccessful, catalog.TimeoutFailed, catalog.TimeoutTimedOut} {
		assert.NotZero(t, to.Calls[k], "timeout %s", k)
	}
	for _, cause := range catalog.Causes {
		assert.NotZero(t, fb.Calls[cause], "fallback cause %s", cause)
	}
}

// textSeries gathers c and returns the series of its text exposition (every sample line:
// each bucket, sum and count of a histogram), by the value of the `name` label.
func textSeries(t *testing.T, c prometheus.Collector) map[string][]string {
	t.Helper()
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	// Parse the text back: what a scraper of the text format stores.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	out := map[string][]string{}
	for family, mf := range parsed {
		for _, m := range mf.GetMetric() {
			name := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == catalog.LabelName {
					name = l.GetValue()
				}
			}
			lines := 1 // a counter or gauge
			if h := m.GetHistogram(); h != nil {
				lines = len(h.GetBucket()) + 2 // every bucket (+Inf included), _sum, _count
			}
			for range lines {
				out[name] = append(out[name], family)
			}
		}
	}
	// Cross-check with the raw text: one sample line per series.
	samples := 0
	for _, l := range strings.Split(buf.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			samples++
		}
	}
	total := 0
	for _, s := range out {
		total += len(s)
	}
	require.Equal(t, samples, total, "series counted from the parsed exposition = sample lines")
	return out
}

// perFamily counts series by family.
func perFamily(series []string) map[string]int {
	out := map[string]int{}
	for _, f := range series {
		out[f]++
	}
	return out
}

func TestSeriesBudgetAfterEveryPath(t *testing.T) {
	h := newPipelineHistory(t, "payments")
	def, err := New(h.reg)
	require.NoError(t, err)
	full, err := New(h.reg, WithFullDetail())
	require.NoError(t, err)
	fresh := textSeries(t, def)["payments"]
	h.everyPath()
	got, gotFull := textSeries(t, def)["payments"], textSeries(t, full)["payments"]

	breakerSeries := func(series []string) int {
		n := 0
		for _, f := range series {
			if strings.HasPrefix(f, catalog.DefaultNamespace+"_"+string(catalog.CircuitBreaker)+"_") {
				n++
			}
		}
		return n
	}
	logTable(t, perFamily(fresh), perFamily(got), perFamily(gotFull))
	t.Logf("per breaker: %d (fresh %d, full detail %d); per dependency: %d (fresh %d, full detail %d)",
		breakerSeries(got), breakerSeries(fresh), breakerSeries(gotFull), len(got), len(fresh), len(gotFull))
	assert.LessOrEqual(t, breakerSeries(got), maxSeriesPerBreaker, "series per breaker")
	assert.LessOrEqual(t, len(got), maxSeriesPerDependency, "series per dependency")

	// Manual operations are rare label values: a forced open and its reset add its state and
	// its two transitions, and the breaker stays within its budget.
	h.p.Breaker().ForceOpen()
	h.p.Breaker().Reset()
	manual := textSeries(t, def)["payments"]
	assert.Equal(t, breakerSeries(got)+3, breakerSeries(manual), "forced_open state, closed→forced_open, forced_open→closed")
	assert.LessOrEqual(t, breakerSeries(manual), maxSeriesPerBreaker, "series per breaker after manual operations")
}

// logTable prints the series of one dependency per family: fresh, after every path, and in
// full detail.
func logTable(t *testing.T, fresh, got, full map[string]int) {
	t.Helper()
	families := slices.Sorted(maps.Keys(full))
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-60s %6s %6s %6s\n", "family", "fresh", "every", "full")
	var sums [3]int
	for _, f := range families {
		fmt.Fprintf(&b, "%-60s %6d %6d %6d\n", f, fresh[f], got[f], full[f])
		sums[0] += fresh[f]
		sums[1] += got[f]
		sums[2] += full[f]
	}
	fmt.Fprintf(&b, "%-60s %6d %6d %6d", "total", sums[0], sums[1], sums[2])
	t.Log(b.String())
}

// textExposition gathers c and returns its text exposition.
func textExposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return buf.Bytes()
}

// TestExpositionsLintClean lints the default and the full-detail exposition after every path
// with client_golang's linter and with `promtool check metrics` (bin/promtool, built by
// scripts/install-tools.sh; the promtool half is skipped only when it is absent).
func TestExpositionsLintClean(t *testing.T) {
	h := newPipelineHistory(t, "payments")
	h.everyPath()
	h.p.Breaker().ForceOpen() // a rare state and a trip cause too
	promtool := filepath.Join(moduleRoot(t), "bin", "promtool")
	_, statErr := os.Stat(promtool)
	for name, opts := range map[string][]Option{"default": nil, "full detail": {WithFullDetail()}, "classic buckets": {WithClassicBuckets()}} {
		t.Run(name, func(t *testing.T) {
			c, err := New(h.reg, opts...)
			require.NoError(t, err)
			pr := prometheus.NewPedanticRegistry()
			require.NoError(t, pr.Register(c))
			problems, err := testutil.GatherAndLint(pr)
			require.NoError(t, err)
			assert.Empty(t, problems)

			if statErr != nil {
				t.Skipf("promtool half skipped: %v (run scripts/install-tools.sh)", statErr)
			}
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = bytes.NewReader(textExposition(t, c))
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "promtool check metrics: %s", out)
			assert.Empty(t, strings.TrimSpace(string(out)), "promtool check metrics reports problems")
		})
	}
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test")
		dir = parent
	}
}
