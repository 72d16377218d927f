package retry

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recClock is a fake clock that records every wait (timer) the code under test starts.
type recClock struct {
	*clock.Fake
	mu    sync.Mutex
	waits []time.Duration
}

func newRecClock() *recClock { return &recClock{Fake: clock.NewFake(t0)} }

func (c *recClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return c.Fake.NewTimer(d)
}

func (c *recClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// drive runs fn in a goroutine and, each time it starts waiting, advances the fake clock by
// exactly that wait, until fn returns.
func drive(c *recClock, fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	for c.WaitForTimers(1, done) {
		w := c.Waits()
		c.Advance(w[len(w)-1])
	}
	<-done
}

// recorder collects retry events.
type recorder struct {
	mu sync.Mutex
	ev []events.Retry
}

func (r *recorder) add(e events.Retry) { r.mu.Lock(); r.ev = append(r.ev, e); r.mu.Unlock() }
func (r *recorder) all() []events.Retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Retry(nil), r.ev...)
}
func (r *recorder) outcomes() []catalog.Outcome {
	var out []catalog.Outcome
	for _, e := range r.all() {
		out = append(out, e.Outcome)
	}
	return out
}

type fixture struct {
	r   *Retry
	clk *recClock
	rec *recorder
	hub *events.Hub
}

// newFixture returns a Retry on a recording fake clock with a fixed Rand (0.5), exponential
// backoff (100 ms ×2), no budget, and an event recorder; mod adjusts the config.
func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{clk: newRecClock(), rec: &recorder{}, hub: new(events.Hub)}
	f.hub.Retries.Add(f.rec.add)
	cfg := Config{}
	cfg.Clock = f.clk
	cfg.Rand = fixedRand(0.5)
	cfg.Backoff = Backoff{Strategy: Exponential}
	cfg.Budget = BudgetConfig{Disabled: true}
	cfg.Events = f.hub
	if mod != nil {
		mod(&cfg)
	}
	r, err := New("payments-api", cfg)
	require.NoError(t, err)
	f.r = r
	return f
}

func (f *fixture) do(ctx context.Context, fn func(context.Context) error) (err error) {
	drive(f.clk, func() { err = f.r.Do(ctx, fn) })
	return err
}

type fakeRejection struct{}

func (fakeRejection) Error() string  { return "circuit breaker payments-api is open" }
func (fakeRejection) Rejected() bool { return true }

// requireConfigError checks that err is a *ConfigError of the retry called name about field,
// with the rejected value (unless value is nil).
func requireConfigError(t *testing.T, err error, name, field string, value any) *ConfigError {
	t.Helper()
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, string(catalog.Retry), ce.Primitive)
	assert.Equal(t, name, ce.Name)
	assert.Equal(t, field, ce.Field)
	if value != nil {
		assert.Equal(t, value, ce.Value)
	}
	assert.NotEmpty(t, ce.Reason)
	return ce
}

func TestNewValidates(t *testing.T) {
	_, err := New("", Config{})
	requireConfigError(t, err, "", "name", "")
	for _, c := range []struct {
		cfg   Config
		field string
		value any
	}{
		{Config{MaxAttempts: -2}, "MaxAttempts", -2},
		{Config{AttemptTimeout: -time.Second}, "AttemptTimeout", -time.Second},
		{Config{MaxDuration: -time.Second}, "MaxDuration", -time.Second},
		{Config{MinAttemptTime: -time.Second}, "MinAttemptTime", -time.Second},
	} {
		_, err := New("orders", c.cfg)
		requireConfigError(t, err, "orders", c.field, c.value)
	}
	_, err = New("orders", Config{MaxAttempts: -2})
	assert.EqualError(t, err, `retry "orders": MaxAttempts = -2: must not be negative (0 means the default, 3; 1 turns retrying off)`)
}

func TestZeroConfigIsTheDefault(t *testing.T) {
	r, err := New("orders", Config{})
	require.NoError(t, err)
	assert.Equal(t, "orders", r.Name())
	c := r.Config()
	assert.Equal(t, 3, c.MaxAttempts)
	assert.Equal(t, Backoff{Strategy: FullJitter, Base: 100 * time.Millisecond, Multiplier: 2, Cap: 10 * time.Second, Factor: 0.5}, c.Backoff)
	assert.Equal(t, RetryAfterConfig{Min: 500 * time.Millisecond, Max: 60 * time.Second, Jitter: 0.2}, c.RetryAfter)
	assert.NotNil(t, r.Budget())

	// Three attempts, two waits.
	f := newFixture(t, nil)
	calls := 0
	err = f.do(context.Background(), func(context.Context) error { calls++; return errors.New("down") })
	require.Error(t, err)
	assert.Equal(t, 3, calls)
	assert.Len(t, f.clk.Waits(), 2)

	one := newFixture(t, func(c *Config) { c.MaxAttempts = 1 })
	calls = 0
	_ = one.do(context.Background(), func(context.Context) error { calls++; return errors.New("down") })
	assert.Equal(t, 1, calls, "MaxAttempts 1 turns retrying off")
}

func TestMaxAttemptsAgainstAlways503Server(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	f := newFixture(t, nil)

	err := f.do(context.Background(), func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := srv.Client().Do(req)
		if res := HTTPResult(req, resp, err); res != nil {
			DiscardResponse(resp)
			return res
		}
		DiscardResponse(resp)
		return nil
	})
	require.Error(t, err)
	assert.Equal(t, int64(3), requests.Load(), "exactly MaxAttempts requests")
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, f.clk.Waits(),
		"two waits, none after the last attempt")
	assert.Contains(t, err.Error(), "3 attempts")
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Len(t, rerr.Attempts(), 3)
	assert.Equal(t, catalog.OutcomeGaveUp, rerr.Outcome())
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
	assert.Same(t, rerr.Last(), rerr.Attempts()[2])
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeRetrying, catalog.OutcomeGaveUp}, f.rec.outcomes())

	s := f.r.Snapshot()
	assert.Equal(t, [catalog.NumRetryKinds]uint64{catalog.RetryFailedWithRetry: 1}, s.Calls)
	assert.Equal(t, uint64(2), s.Retries)
	assert.Equal(t, uint64(3), s.Errors[catalog.ClassHTTP5xx])
	assert.Equal(t, uint64(2), s.Backoff[0].Count)
	assert.InDelta(t, 0.3, s.Backoff[0].Sum, 1e-9)
}

func TestSucceedsAfterRetries(t *testing.T) {
	f := newFixture(t, nil)
	n := 0
	boom := errors.New("boom")
	err := f.do(context.Background(), func(context.Context) error {
		n++
		if n < 3 {
			return boom
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	ev := f.rec.all()
	require.Len(t, ev, 3)
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeRetrying, catalog.OutcomeSucceeded}, f.rec.outcomes())
	id := CorrelationID(ev[0].Context)
	assert.Len(t, id, 36, "a correlation id is generated")
	for i, e := range ev {
		assert.Equal(t, id, CorrelationID(e.Context), "one id for the logical call")
		assert.Equal(t, i+1, e.Attempt)
		assert.Equal(t, "payments-api", e.Name)
		assert.Equal(t, 3, e.MaxAttempts)
	}
	assert.Equal(t, catalog.ClassError, ev[0].ErrorClass)
	assert.Equal(t, catalog.SourceBackoff, ev[0].DelaySource)
	assert.Equal(t, 100*time.Millisecond, ev[0].Delay)
	assert.Equal(t, 100*time.Millisecond, ev[1].Elapsed)
	assert.Equal(t, 300*time.Millisecond, ev[2].Elapsed)
	assert.Empty(t, ev[2].ErrorClass)
	assert.Equal(t, [catalog.NumRetryKinds]uint64{catalog.RetrySuccessfulWithRetry: 1}, f.r.Snapshot().Calls)

	// A correlation id already in the context is kept, and the attempts see it.
	f2 := newFixture(t, nil)
	var seen []string
	n = 0
	ctx := WithCorrelationID(context.Background(), "req-7")
	require.NoError(t, f2.do(ctx, func(ctx context.Context) error {
		seen = append(seen, CorrelationID(ctx))
		n++
		if n == 1 {
			return boom
		}
		return nil
	}))
	assert.Equal(t, []string{"req-7", "req-7"}, seen)
	assert.Equal(t, "req-7", CorrelationID(f2.rec.all()[0].Context))
}

func TestNeverRetried(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { <-hold; _ = c.Close() }() // never answers
		}
	}()
	silentURL := "http://" + l.Addr().String() + "/orders"
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 100 * time.Millisecond}

	cases := []struct {
		name  string
		class catalog.Class
		fn    func(ctx context.Context, cancel context.CancelFunc) error
		check func(t *testing.T, err error)
	}{
		{"caller cancellation", catalog.ClassCanceled, func(ctx context.Context, cancel context.CancelFunc) error {
			cancel()
			return ctx.Err()
		}, func(t *testing.T, err error) { assert.ErrorIs(t, err, context.Canceled) }},
		{"breaker open", catalog.ClassRejected, func(context.Context, context.CancelFunc) error {
			return fmt.Errorf("attempt: %w", fakeRejection{})
		}, func(t *testing.T, err error) {
			var rej classify.Rejection
			assert.ErrorAs(t, err, &rej)
			var rerr *Error
			assert.False(t, errors.As(err, &rerr), "a single non-retryable attempt is returned as is")
		}},
		{"404", catalog.ClassHTTP4xx, func(context.Context, context.CancelFunc) error {
			return &HTTPError{StatusCode: 404, Idempotent: true}
		}, nil},
		{"501", catalog.ClassHTTP5xxPermanent, func(context.Context, context.CancelFunc) error {
			return &HTTPError{StatusCode: 501, Idempotent: true}
		}, nil},
		{"tls certificate", catalog.ClassTLSCert, func(context.Context, context.CancelFunc) error {
			return &HTTPError{Err: &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, Idempotent: true}
		}, nil},
		{"permanent", catalog.ClassError, func(context.Context, context.CancelFunc) error {
			return classify.Permanent(errors.New("bad config"))
		}, nil},
		{"non-idempotent POST after a read timeout", catalog.ClassTimeout, func(ctx context.Context, _ context.CancelFunc) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, silentURL, strings.NewReader("{}"))
			resp, err := client.Do(req)
			return HTTPResult(req, resp, err)
		}, func(t *testing.T, err error) {
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.False(t, he.Idempotent)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(cfg *Config) {
				cfg.MaxAttempts = 5
				cfg.RetryIf = func(error, classify.Verdict) bool {
					return c.class == catalog.ClassCanceled || c.class == catalog.ClassRejected
				}
				if c.class != catalog.ClassCanceled && c.class != catalog.ClassRejected {
					cfg.RetryIf = nil
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			err := f.do(ctx, func(ctx context.Context) error { calls++; return c.fn(ctx, cancel) })
			require.Error(t, err)
			assert.Equal(t, 1, calls, "not retried")
			assert.Empty(t, f.clk.Waits())
			assert.Empty(t, f.rec.all(), "no retry decision to report")
			s := f.r.Snapshot()
			assert.Equal(t, uint64(1), s.Errors[c.class], "class %s", c.class)
			if c.check != nil {
				c.check(t, err)
			}
		})
	}
}

func TestRetryIf(t *testing.T) {
	// RetryIf can refuse a retryable error and allow a non-retryable one.
	f := newFixture(t, func(c *Config) {
		c.RetryIf = func(err error, v classify.Verdict) bool { return v.Class == catalog.ClassHTTP4xx }
	})
	calls := 0
	err := f.do(context.Background(), func(context.Context) error { calls++; return &HTTPError{StatusCode: 409} })
	require.Error(t, err)
	assert.Equal(t, 3, calls)
	calls = 0
	err = f.do(context.Background(), func(context.Context) error { calls++; return &HTTPError{StatusCode: 503} })
	require.Error(t, err)
	assert.Equal(t, 1, calls)
}

func TestCancelDuringBackoffReturnsPromptly(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Backoff = Backoff{Strategy: Constant, Base: 10 * time.Second} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = f.r.Do(ctx, func(context.Context) error { return errors.New("unavailable") })
	}()
	require.True(t, f.clk.WaitForTimers(1, done), "the retry is waiting")
	start := time.Now()
	cancel()
	<-done
	elapsed := time.Since(start)
	assert.Less(t, elapsed, 5*time.Millisecond, "returned %v after cancel", elapsed)
	assert.ErrorIs(t, err, context.Canceled)
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, catalog.OutcomeAborted, rerr.Outcome())
	assert.Contains(t, err.Error(), "aborted after 1 attempt")
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeAborted}, f.rec.outcomes())
	assert.Zero(t, f.clk.Timers(), "the timer was stopped")
	s := f.r.Snapshot()
	assert.Equal(t, [catalog.NumRetryKinds]uint64{catalog.RetryAborted: 1}, s.Calls)
	assert.Zero(t, s.Retries)
	assert.Zero(t, s.Backoff[0].Count, "an aborted wait is not a delay waited")
}

func TestGiveUpWhenTheDeadlineLeavesNoUsefulTime(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.MaxAttempts = 10
		c.MaxDuration = time.Second
		c.Backoff = Backoff{Strategy: Constant, Base: 800 * time.Millisecond}
	})
	calls := 0
	err := f.do(context.Background(), func(context.Context) error { calls++; return errors.New("down") })
	require.Error(t, err)
	// Attempt 1 at 0: 1 s left, 0.8 s wait leaves 0.2 s ≥ 10% of 1 s → retry. Attempt 2 at 0.8 s:
	// 0.2 s left; the wait is clamped to 0.2 s and leaves nothing → give up.
	assert.Equal(t, 2, calls)
	assert.Equal(t, []time.Duration{800 * time.Millisecond}, f.clk.Waits())
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeGaveUp}, f.rec.outcomes())
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, catalog.OutcomeGaveUp, rerr.Outcome())

	// With the per-attempt timeout as the minimum useful time.
	f = newFixture(t, func(c *Config) {
		c.MaxAttempts = 10
		c.MaxDuration = 10 * time.Second
		c.AttemptTimeout = 3 * time.Second
		c.Backoff = Backoff{Strategy: Constant, Base: 4 * time.Second}
	})
	calls = 0
	_ = f.do(context.Background(), func(context.Context) error { calls++; return errors.New("down") })
	// 10 s: wait 4, 6 left ≥ 3 → retry; at 4 s: 6 left, 4 + 3 > 6 → give up.
	assert.Equal(t, 2, calls)

	// The delay is clamped to the remaining deadline before the check.
	f = newFixture(t, func(c *Config) {
		c.MaxDuration = 10 * time.Second
		c.MinAttemptTime = time.Nanosecond
		c.Backoff = Backoff{Strategy: Constant, Base: 30 * time.Second, Cap: time.Minute}
	})
	_ = f.do(context.Background(), func(context.Context) error { return errors.New("down") })
	assert.Empty(t, f.clk.Waits(), "a clamped delay leaves no time: given up without waiting")
}

func TestRetryAfterSetsTheDelay(t *testing.T) {
	cases := []struct {
		status     int
		retryAfter string
		wait       time.Duration
		source     catalog.DelaySource
	}{
		{503, "2", 2 * time.Second, catalog.SourceRetryAfter},
		{429, "0", 500 * time.Millisecond, catalog.SourceRetryAfter},
		{429, "86400", 60 * time.Second, catalog.SourceRetryAfter},
		{503, "-1", 100 * time.Millisecond, catalog.SourceBackoff},
		{503, "abc", 100 * time.Millisecond, catalog.SourceBackoff},
		{500, "5", 100 * time.Millisecond, catalog.SourceBackoff}, // only 429 and 503 carry Retry-After
		{503, t0.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second, catalog.SourceRetryAfter},
		{503, t0.Add(-time.Hour).Format(http.TimeFormat), 500 * time.Millisecond, catalog.SourceRetryAfter},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d %s", c.status, c.retryAfter), func(t *testing.T) {
			f := newFixture(t, func(cfg *Config) { cfg.MaxAttempts = 2; cfg.Rand = fixedRand(0) })
			_ = f.do(context.Background(), func(context.Context) error {
				return &HTTPError{StatusCode: c.status, RetryAfter: c.retryAfter, Idempotent: true}
			})
			assert.Equal(t, []time.Duration{c.wait}, f.clk.Waits())
			ev := f.rec.all()
			require.Len(t, ev, 2)
			assert.Equal(t, c.source, ev[0].DelaySource)
			assert.Equal(t, c.status, ev[0].HTTPStatus)
			s := f.r.Snapshot()
			assert.Equal(t, uint64(1), s.Backoff[c.source].Count)
		})
	}
	f := newFixture(t, func(cfg *Config) { cfg.MaxAttempts = 2; cfg.RetryAfter.Disabled = true })
	_ = f.do(context.Background(), func(context.Context) error { return &HTTPError{StatusCode: 503, RetryAfter: "9"} })
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, f.clk.Waits())
}

func TestBudgetDeniesRetries(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Budget = BudgetConfig{NoFloor: true} })
	for range 10 { // ten first attempts that succeed: one token
		require.NoError(t, f.do(context.Background(), func(context.Context) error { return nil }))
	}
	fail := func(context.Context) error { return errors.New("down") }
	err := f.do(context.Background(), fail) // one retry on the token, then denied
	require.Error(t, err)
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, catalog.OutcomeBudgetExhausted, rerr.Outcome())
	assert.Len(t, rerr.Attempts(), 2)
	assert.Contains(t, err.Error(), "retry budget exhausted after 2 attempts")
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeBudgetExhausted}, f.rec.outcomes())
	s := f.r.Snapshot()
	assert.Equal(t, uint64(1), s.BudgetDenied)
	assert.Zero(t, s.BudgetTokens)
	assert.Equal(t, [catalog.NumRetryKinds]uint64{catalog.RetrySuccessfulWithoutRetry: 10, catalog.RetryFailedWithRetry: 1}, s.Calls)
}

func TestAttemptTimeoutBoundsEachAttempt(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.AttemptTimeout = 20 * time.Millisecond; c.Idempotent = true })
	calls := 0
	err := f.do(context.Background(), func(ctx context.Context) error {
		calls++
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		assert.LessOrEqual(t, time.Until(dl), 20*time.Millisecond)
		<-ctx.Done()
		return ctx.Err()
	})
	require.Error(t, err)
	assert.Equal(t, 3, calls, "the attempt's own deadline is a retryable timeout for an idempotent call")
	assert.Equal(t, uint64(3), f.r.Snapshot().Errors[catalog.ClassTimeout])
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	f = newFixture(t, func(c *Config) { c.AttemptTimeout = 20 * time.Millisecond })
	calls = 0
	_ = f.do(context.Background(), func(ctx context.Context) error { calls++; <-ctx.Done(); return ctx.Err() })
	assert.Equal(t, 1, calls, "not idempotent: a timeout is not retried")
}

func TestCallWithHTTPHooks(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
			_, _ = io.WriteString(w, "busy")
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()

	var closed atomic.Int64
	f := newFixture(t, func(c *Config) { c.Rand = fixedRand(0) })
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/orders?token=s3cret", nil)
	h := HTTPHooks(req)
	assert.Equal(t, "GET "+strings.TrimPrefix(srv.URL, "http://")+"/v1/orders", h.Endpoint)
	discard := h.Discard
	h.Discard = func(resp *http.Response) { closed.Add(1); discard(resp) }
	var resp *http.Response
	var err error
	drive(f.clk, func() {
		resp, err = CallWith(context.Background(), f.r, func(ctx context.Context) (*http.Response, error) {
			return srv.Client().Do(req.WithContext(ctx))
		}, h)
	})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "ok", string(body))
	assert.Equal(t, int64(1), closed.Load(), "the dropped 503 was discarded")
	assert.Equal(t, []time.Duration{time.Second}, f.clk.Waits(), "Retry-After: 1")
	assert.Equal(t, h.Endpoint, f.rec.all()[0].Endpoint)
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeSucceeded}, f.rec.outcomes())
	assert.Equal(t, 200, f.rec.all()[1].HTTPStatus, "the succeeded event carries the response status")

	// Exhausted: the last response comes back undrained with the error.
	n.Store(-100)
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(502)
		_, _ = io.WriteString(w, "bad gateway")
	}))
	defer srv2.Close()
	req2, _ := http.NewRequest(http.MethodGet, srv2.URL, nil)
	f2 := newFixture(t, nil)
	drive(f2.clk, func() {
		resp, err = CallWith(context.Background(), f2.r, func(ctx context.Context) (*http.Response, error) {
			return srv2.Client().Do(req2.WithContext(ctx))
		}, HTTPHooks(req2))
	})
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 502, he.StatusCode)
	require.NotNil(t, resp)
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "bad gateway", string(body))
}

func TestResultPredicate(t *testing.T) {
	// A 200 whose body says "error" is the caller's to classify (FC-04): Check turns it into a
	// failure; dropped values are discarded, the returned one is not.
	f := newFixture(t, nil)
	var discarded []string
	results := []string{"error: try later", "error: try later", "ok"}
	i := 0
	var v string
	var err error
	drive(f.clk, func() {
		v, err = CallWith(context.Background(), f.r, func(context.Context) (string, error) {
			i++
			return results[i-1], nil
		}, Hooks[string]{
			Check: func(v string, err error) error {
				if err == nil && strings.HasPrefix(v, "error") {
					return errors.New(v)
				}
				return err
			},
			Discard: func(v string) { discarded = append(discarded, v) },
		})
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.Equal(t, []string{"error: try later", "error: try later"}, discarded)
}

func TestClassifyOverrideCannotRetryRejections(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Classify = func(error, bool) classify.Verdict {
			return classify.Verdict{Retryable: true, Class: catalog.Class(200)}
		}
	})
	calls := 0
	_ = f.do(context.Background(), func(context.Context) error { calls++; return fakeRejection{} })
	assert.Equal(t, 1, calls)
	calls = 0
	_ = f.do(context.Background(), func(context.Context) error { calls++; return errors.New("x") })
	assert.Equal(t, 3, calls)
	assert.Equal(t, uint64(3), f.r.Snapshot().Errors[catalog.ClassError],
		"a class outside the closed set is counted as error")
}

func TestConcurrentCallsAreCountedOnce(t *testing.T) {
	cfg := Config{}
	cfg.Backoff = Backoff{Strategy: None}
	cfg.Budget = BudgetConfig{Disabled: true}
	r, err := New("concurrent", cfg)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var n atomic.Int64
	for range 32 {
		wg.Go(func() {
			for range 100 {
				_ = r.Do(context.Background(), func(context.Context) error {
					if n.Add(1)%2 == 0 {
						return nil
					}
					return errors.New("odd")
				})
			}
		})
	}
	wg.Wait()
	s := r.Snapshot()
	var calls uint64
	for _, c := range s.Calls {
		calls += c
	}
	assert.Equal(t, uint64(3200), calls)
	assert.Equal(t, uint64(n.Load()), calls+s.Retries, "every attempt is a first attempt or a retry")
}

func TestErrorMessages(t *testing.T) {
	e := &Error{name: "x", outcome: catalog.OutcomeGaveUp, errs: []error{errors.New("a")}}
	assert.Equal(t, `retry "x": gave up after 1 attempt: a`, e.Error())
	e = &Error{name: "x", outcome: catalog.OutcomeGaveUp, errs: []error{errors.New("a"), errors.New("b")}, cause: context.DeadlineExceeded}
	assert.Equal(t, `retry "x": gave up after 2 attempts: context deadline exceeded (last error: b)`, e.Error())
	assert.ErrorIs(t, e, context.DeadlineExceeded)
	assert.Equal(t, "HTTP 503", (&HTTPError{StatusCode: 503}).Error())
	assert.Equal(t, "HTTP 503 Service Unavailable", (&HTTPError{StatusCode: 503, Status: "503 Service Unavailable"}).Error())
	assert.Nil(t, HTTPResult(nil, &http.Response{StatusCode: 200}, nil))
	assert.Nil(t, HTTPResult(nil, nil, nil))
}

func TestEndpointAndSanitize(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "https://user:pass@api.example.com/v2/orders?token=s3cret#frag", nil)
	assert.Equal(t, "POST api.example.com/v2/orders", Endpoint(req))
	assert.Equal(t, "", Endpoint(nil))
	cases := map[string]string{
		"GET https://user:pass@api.example.com/v1/x?token=s3cret": "GET https://api.example.com/v1/x",
		"https://user:pass@host/p?q=1#f":                          "https://host/p",
		"POST /api/v2/orders?debug=1":                             "POST /api/v2/orders",
		"user:pass@host:8080/path?x":                              "host:8080/path",
		"GET api.example.com/v1/orders":                           "GET api.example.com/v1/orders",
		"":                                                        "",
	}
	for in, want := range cases {
		assert.Equal(t, want, SanitizeEndpoint(in), in)
	}
}

func TestHTTPErrorIsAStatusError(t *testing.T) {
	var se classify.StatusError = &HTTPError{StatusCode: 404}
	assert.Equal(t, 404, se.HTTPStatus())
	assert.Equal(t, classify.Verdict{Class: catalog.ClassHTTP4xx}, classify.ClassifyError(fmt.Errorf("x: %w", se), true))
	assert.Zero(t, (&HTTPError{StatusCode: 502, Err: errors.New("reset")}).HTTPStatus())
}

func TestDoNotRetrySignalIsHonoured(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set(DoNotRetryHeader, "true")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	f := newFixture(t, func(c *Config) { c.RetryIf = func(error, classify.Verdict) bool { return true } })
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	var resp *http.Response
	var err error
	drive(f.clk, func() {
		resp, err = CallWith(context.Background(), f.r, func(ctx context.Context) (*http.Response, error) {
			return srv.Client().Do(req.WithContext(ctx))
		}, HTTPHooks(req))
	})
	DiscardResponse(resp)
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	assert.True(t, he.RetryDisabled)
	assert.Equal(t, int64(1), n.Load(), "the upstream said its retries are exhausted: no retry")
}

func TestPanicPropagatesAndIsCounted(t *testing.T) {
	f := newFixture(t, nil)
	assert.PanicsWithValue(t, "boom", func() {
		_ = f.r.Do(context.Background(), func(context.Context) error { panic("boom") })
	})
	n := 0
	var recovered any
	drive(f.clk, func() {
		defer func() { recovered = recover() }()
		_ = f.r.Do(context.Background(), func(context.Context) error {
			n++
			if n == 2 {
				panic("boom")
			}
			return errors.New("x")
		})
	})
	assert.Equal(t, "boom", recovered, "the panic of the second attempt propagates")
	s := f.r.Snapshot()
	assert.Equal(t, [catalog.NumRetryKinds]uint64{catalog.RetryFailedWithoutRetry: 1, catalog.RetryFailedWithRetry: 1}, s.Calls, "each call counted once")
	assert.Equal(t, uint64(3), s.Errors[catalog.ClassError])
}

func FuzzSanitizeEndpoint(f *testing.F) {
	f.Add("GET", "user", "pass", "api.example.com", "/v1/x", "token=s3cret")
	f.Add("", "u", "p", "h:8080", "", "")
	f.Add("POST", "alice", "hunter22", "10.0.0.1", "/a/b", "q=1#frag")
	alnum := func(s string) bool {
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				return false
			}
		}
		return len(s) >= 4
	}
	f.Fuzz(func(t *testing.T, method, user, pass, host, path, query string) {
		raw := "https://" + user + ":" + pass + "@" + host + path + "?" + query
		if method != "" {
			raw = method + " " + raw
		}
		out := SanitizeEndpoint(raw)
		if strings.ContainsAny(out, "?#") {
			t.Fatalf("%q → %q: query or fragment kept", raw, out)
		}
		if strings.ContainsAny(user+pass, "@/?#") {
			return // not a URL: userinfo is percent-encoded
		}
		for _, secret := range []string{user, pass, query} {
			if alnum(secret) && !strings.Contains(method+host+path, secret) && strings.Contains(out, secret) {
				t.Fatalf("%q → %q: %q kept", raw, out, secret)
			}
		}
		if strings.ContainsAny(host+path, "@?#/") || strings.ContainsAny(method, "?#") || strings.ContainsFunc(method+host+path, unicode.IsSpace) {
			return
		}
		if want := strings.TrimSpace(method + " https://" + host + path); method != "" && out != want {
			t.Fatalf("%q → %q, want %q", raw, out, want)
		}
	})
}

func TestReturnedResponseStaysReadableUntilClosed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.(http.Flusher).Flush() // headers first, body later: the body is read from the connection
		_, _ = io.WriteString(w, strings.Repeat("x", 1<<16))
	}))
	defer srv.Close()
	for _, cfg := range []func(*Config){
		func(c *Config) { c.AttemptTimeout = 10 * time.Second },
		func(c *Config) { c.MaxDuration = 10 * time.Second },
		func(c *Config) { c.AttemptTimeout, c.MaxDuration = 10*time.Second, 20*time.Second },
	} {
		f := newFixture(t, cfg)
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		var actx context.Context
		resp, err := CallWith(context.Background(), f.r, func(ctx context.Context) (*http.Response, error) {
			actx = ctx
			return srv.Client().Do(req.WithContext(ctx))
		}, HTTPHooks(req))
		require.NoError(t, err)
		require.NoError(t, actx.Err(), "the attempt's context lives on with the response")
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Len(t, body, 1<<16)
		require.NoError(t, resp.Body.Close())
		assert.ErrorIs(t, actx.Err(), context.Canceled, "closing the body released the context")
	}

	// Without Bind the contexts end with the call.
	f := newFixture(t, func(c *Config) { c.AttemptTimeout = 10 * time.Second })
	var actx context.Context
	_, err := Call(context.Background(), f.r, func(ctx context.Context) (int, error) { actx = ctx; return 1, nil })
	require.NoError(t, err)
	assert.ErrorIs(t, actx.Err(), context.Canceled)
}
