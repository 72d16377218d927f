package retry

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"go/build"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
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
	cfg.DisableBudget = true
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

// adapterErr is an attempt error carrying every retry hint, the way a protocol adapter's error
// does (package httpx's Error is the real one).
type adapterErr struct {
	status     int           // HTTPStatus
	wait       time.Duration // RetryAfter's answer, when hasWait
	hasWait    bool          //
	at         time.Time     // RetryAfter's answer as a point in time, when non-zero
	idempotent bool          // Idempotent
	noRetry    bool          // DoNotRetry
	err        error         // the transport error, if any
	seenNow    *[]time.Time  // records RetryAfter's now
}

func (e *adapterErr) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("status %d", e.status)
}
func (e *adapterErr) Unwrap() error { return e.err }
func (e *adapterErr) HTTPStatus() int {
	if e.err != nil {
		return 0
	}
	return e.status
}
func (e *adapterErr) Idempotent() bool { return e.idempotent }
func (e *adapterErr) DoNotRetry() bool { return e.noRetry }
func (e *adapterErr) RetryAfter(now time.Time) (time.Duration, bool) {
	if e.seenNow != nil {
		*e.seenNow = append(*e.seenNow, now)
	}
	if !e.at.IsZero() {
		return e.at.Sub(now), true
	}
	return e.wait, e.hasWait
}

var (
	_ classify.RetryAfterHint = (*adapterErr)(nil)
	_ classify.DoNotRetryHint = (*adapterErr)(nil)
	_ classify.IdempotentHint = (*adapterErr)(nil)
	_ classify.StatusError    = (*adapterErr)(nil)
)

// status is an error that reports an HTTP status and nothing else: no idempotency of its own.
type status int

func (s status) Error() string   { return fmt.Sprintf("status %d", int(s)) }
func (s status) HTTPStatus() int { return int(s) }

type fakeRejection struct{}

func (fakeRejection) Error() string  { return "circuit breaker payments-api is open" }
func (fakeRejection) Rejected() bool { return true }

// requireConfigError checks that err is a *catalog.ConfigError of the retry called name about field,
// with the rejected value (unless value is nil).
func requireConfigError(t *testing.T, err error, name, field string, value any) *catalog.ConfigError {
	t.Helper()
	var ce *catalog.ConfigError
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
	assert.Equal(t, BudgetConfig{Ratio: 0.1, Capacity: 100, MinRetriesPerSecond: 1, DecayWindow: 10 * time.Second}, c.Budget,
		"Config reports the budget's defaults too")
	assert.NotNil(t, r.budget, "the budget is on by default")
	off, err := New("orders", Config{Budget: BudgetConfig{DisableFloor: true, DisableDecay: true}})
	require.NoError(t, err)
	assert.Equal(t, BudgetConfig{Ratio: 0.1, Capacity: 100, DisableFloor: true, DisableDecay: true}, off.Config().Budget)

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

func TestMaxAttemptsBoundTheAttempts(t *testing.T) {
	f := newFixture(t, nil)
	calls := 0
	err := f.do(context.Background(), func(context.Context) error {
		calls++
		return &adapterErr{status: 503, idempotent: true}
	})
	require.Error(t, err)
	assert.Equal(t, 3, calls, "exactly MaxAttempts attempts")
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, f.clk.Waits(),
		"two waits, none after the last attempt")
	assert.Contains(t, err.Error(), "3 attempts")
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Len(t, rerr.Attempts(), 3)
	assert.Equal(t, catalog.OutcomeGaveUp, rerr.Outcome())
	var ae *adapterErr
	require.ErrorAs(t, err, &ae, "the last attempt's error is reachable")
	assert.Same(t, ae, rerr.Attempts()[2])
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeRetrying, catalog.OutcomeGaveUp}, f.rec.outcomes())
	for _, e := range f.rec.all() {
		assert.Equal(t, 503, e.HTTPStatus, "the status comes through classify.StatusError")
		assert.Equal(t, catalog.ClassHTTP5xx, e.ErrorClass)
	}

	s := f.r.Snapshot()
	assert.Equal(t, [catalog.NumRetryKinds]uint64{catalog.RetryFailedWithRetry: 1}, s.Calls)
	assert.Equal(t, uint64(2), s.Retries)
	assert.Equal(t, uint64(3), s.Errors[catalog.ClassHTTP5xx])
	assert.Equal(t, uint64(2), s.Backoff[catalog.SourceBackoff].Count)
	assert.InDelta(t, 0.3, s.Backoff[catalog.SourceBackoff].Sum, 1e-9)
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
	id := events.CorrelationID(ev[0].Context)
	assert.Len(t, id, 36, "a correlation id is generated")
	for i, e := range ev {
		assert.Equal(t, id, events.CorrelationID(e.Context), "one id for the logical call")
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
	assert.Zero(t, ev[0].HTTPStatus, "an error without a status reports none")
	assert.Equal(t, [catalog.NumRetryKinds]uint64{catalog.RetrySuccessfulWithRetry: 1}, f.r.Snapshot().Calls)

	// A correlation id already in the context is kept, and the attempts see it.
	f2 := newFixture(t, nil)
	var seen []string
	n = 0
	ctx := events.WithCorrelationID(context.Background(), "req-7")
	require.NoError(t, f2.do(ctx, func(ctx context.Context) error {
		seen = append(seen, events.CorrelationID(ctx))
		n++
		if n == 1 {
			return boom
		}
		return nil
	}))
	assert.Equal(t, []string{"req-7", "req-7"}, seen)
	assert.Equal(t, "req-7", events.CorrelationID(f2.rec.all()[0].Context))

	// The generated id reaches the attempts after the first event.
	f3 := newFixture(t, nil)
	seen, n = nil, 0
	require.NoError(t, f3.do(context.Background(), func(ctx context.Context) error {
		seen = append(seen, events.CorrelationID(ctx))
		n++
		if n == 1 {
			return boom
		}
		return nil
	}))
	require.Len(t, seen, 2)
	assert.Empty(t, seen[0], "no event yet, no id")
	assert.Equal(t, events.CorrelationID(f3.rec.all()[0].Context), seen[1])
}

func TestNeverRetried(t *testing.T) {
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	cases := []struct {
		name    string
		class   catalog.Class
		retryIf bool // a RetryIf that always says yes: these rules hold against it
		fn      func(ctx context.Context, cancel context.CancelFunc) error
		check   func(t *testing.T, err error)
	}{
		{"caller cancellation", catalog.ClassCanceled, true, func(ctx context.Context, cancel context.CancelFunc) error {
			cancel()
			return ctx.Err()
		}, func(t *testing.T, err error) { assert.ErrorIs(t, err, context.Canceled) }},
		{"breaker open", catalog.ClassRejected, true, func(context.Context, context.CancelFunc) error {
			return fmt.Errorf("attempt: %w", fakeRejection{})
		}, func(t *testing.T, err error) {
			var rej classify.Rejection
			assert.ErrorAs(t, err, &rej)
			var rerr *Error
			assert.False(t, errors.As(err, &rerr), "a single non-retryable attempt is returned as is")
		}},
		{"do-not-retry hint", catalog.ClassHTTP5xx, true, func(context.Context, context.CancelFunc) error {
			return fmt.Errorf("attempt: %w", &adapterErr{status: 503, idempotent: true, noRetry: true})
		}, nil},
		{"404", catalog.ClassHTTP4xx, false, func(context.Context, context.CancelFunc) error {
			return &adapterErr{status: 404, idempotent: true}
		}, nil},
		{"501", catalog.ClassHTTP5xxPermanent, false, func(context.Context, context.CancelFunc) error {
			return status(501)
		}, nil},
		{"tls certificate", catalog.ClassTLSCert, false, func(context.Context, context.CancelFunc) error {
			return &adapterErr{err: &net.OpError{Op: "remote error", Err: x509.UnknownAuthorityError{}}, idempotent: true}
		}, nil},
		{"permanent", catalog.ClassError, false, func(context.Context, context.CancelFunc) error {
			return classify.Permanent(errors.New("bad config"))
		}, nil},
		{"non-idempotent operation after a read timeout", catalog.ClassTimeout, false, func(context.Context, context.CancelFunc) error {
			return &adapterErr{err: readTimeout, idempotent: false}
		}, nil},
		{"504 of a non-idempotent operation", catalog.ClassHTTP5xx, false, func(context.Context, context.CancelFunc) error {
			return status(504) // no idempotency hint: Config.Idempotent (false) decides
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(cfg *Config) {
				cfg.MaxAttempts = 5
				if c.retryIf {
					cfg.RetryIf = func(error, classify.Verdict) bool { return true }
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

func TestIdempotencyComesFromTheError(t *testing.T) {
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tt := range []struct {
		name       string
		configured bool  // Config.Idempotent
		err        error // returned by every attempt
		calls      int
	}{
		{"the error says idempotent", false, &adapterErr{err: readTimeout, idempotent: true}, 3},
		{"the error says not idempotent", true, &adapterErr{err: readTimeout, idempotent: false}, 1},
		{"no hint: the configuration decides", true, readTimeout, 3},
		{"no hint, not configured", false, readTimeout, 1},
		{"504 with the hint", false, &adapterErr{status: 504, idempotent: true}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.Idempotent = tt.configured })
			calls := 0
			_ = f.do(context.Background(), func(context.Context) error { calls++; return tt.err })
			assert.Equal(t, tt.calls, calls)
		})
	}
}

func TestRetryIf(t *testing.T) {
	// RetryIf can refuse a retryable error and allow a non-retryable one.
	f := newFixture(t, func(c *Config) {
		c.RetryIf = func(err error, v classify.Verdict) bool { return v.Class == catalog.ClassHTTP4xx }
	})
	calls := 0
	err := f.do(context.Background(), func(context.Context) error { calls++; return status(409) })
	require.Error(t, err)
	assert.Equal(t, 3, calls)
	calls = 0
	err = f.do(context.Background(), func(context.Context) error { calls++; return status(503) })
	require.Error(t, err)
	assert.Equal(t, 1, calls)
}

func TestRetryIfCannotRetryABusinessError(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.RetryIf = func(error, classify.Verdict) bool { return true }
	})
	calls := 0
	business := classify.Business(errors.New("insufficient funds"))
	err := f.do(context.Background(), func(context.Context) error { calls++; return business })
	assert.Equal(t, 1, calls, "a business error is an answer: never repeated, whatever RetryIf says")
	assert.ErrorIs(t, err, business)
	assert.Zero(t, f.r.Snapshot().Retries)
}

func TestCancelDuringBackoffAbortsTheWait(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Backoff = Backoff{Strategy: Constant, Base: 10 * time.Second} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var err error
	calls := 0
	go func() {
		defer close(done)
		err = f.r.Do(ctx, func(context.Context) error { calls++; return errors.New("unavailable") })
	}()
	require.True(t, f.clk.WaitForTimers(1, done), "the retry is waiting")
	cancel() // the fake clock never advances: only the cancellation can end the wait
	<-done
	assert.Equal(t, 1, calls, "no attempt after the cancellation")
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
	assert.Zero(t, s.Backoff[catalog.SourceBackoff].Count, "an aborted wait is not a delay waited")
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

func TestRetryAfterHintSetsTheDelay(t *testing.T) {
	cases := []struct {
		name   string
		err    *adapterErr
		wait   time.Duration
		source catalog.DelaySource
	}{
		{"2 s", &adapterErr{status: 503, wait: 2 * time.Second, hasWait: true}, 2 * time.Second, catalog.SourceRetryAfter},
		{"0: the minimum", &adapterErr{status: 429, hasWait: true}, 500 * time.Millisecond, catalog.SourceRetryAfter},
		{"a day: the maximum", &adapterErr{status: 429, wait: 24 * time.Hour, hasWait: true}, 60 * time.Second, catalog.SourceRetryAfter},
		{"the longest duration: the maximum", &adapterErr{status: 503, wait: 1<<63 - 1, hasWait: true}, 60 * time.Second, catalog.SourceRetryAfter},
		{"negative: the minimum", &adapterErr{status: 503, wait: -time.Hour, hasWait: true}, 500 * time.Millisecond, catalog.SourceRetryAfter},
		{"no usable value: the backoff", &adapterErr{status: 503}, 100 * time.Millisecond, catalog.SourceBackoff},
		{"a point in time, read on the retry's clock", &adapterErr{status: 503, at: t0.Add(7 * time.Second)}, 7 * time.Second, catalog.SourceRetryAfter},
		{"a point in the past: the minimum", &adapterErr{status: 503, at: t0.Add(-time.Hour)}, 500 * time.Millisecond, catalog.SourceRetryAfter},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(cfg *Config) { cfg.MaxAttempts = 2; cfg.Rand = fixedRand(0) })
			var nows []time.Time
			c.err.seenNow, c.err.idempotent = &nows, true
			_ = f.do(context.Background(), func(context.Context) error { return fmt.Errorf("wrapped: %w", c.err) })
			assert.Equal(t, []time.Duration{c.wait}, f.clk.Waits())
			assert.Equal(t, []time.Time{t0}, nows, "asked once, with the retry clock's reading")
			ev := f.rec.all()
			require.Len(t, ev, 2)
			assert.Equal(t, c.source, ev[0].DelaySource)
			assert.Equal(t, c.err.status, ev[0].HTTPStatus)
			s := f.r.Snapshot()
			assert.Equal(t, uint64(1), s.Backoff[c.source].Count)
		})
	}

	// Disabled: the hint is not even asked.
	f := newFixture(t, func(cfg *Config) { cfg.MaxAttempts = 2; cfg.DisableRetryAfter = true })
	var nows []time.Time
	_ = f.do(context.Background(), func(context.Context) error {
		return &adapterErr{status: 503, wait: 9 * time.Second, hasWait: true, seenNow: &nows}
	})
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, f.clk.Waits())
	assert.Empty(t, nows)

	// The jitter stays inside the clamp.
	f = newFixture(t, func(cfg *Config) { cfg.MaxAttempts = 2; cfg.Rand = fixedRand(1) })
	_ = f.do(context.Background(), func(context.Context) error {
		return &adapterErr{status: 429, wait: 30 * time.Second, hasWait: true}
	})
	assert.Equal(t, []time.Duration{36 * time.Second}, f.clk.Waits(), "+20%")
}

func TestBudgetDeniesRetries(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Budget, c.DisableBudget = BudgetConfig{DisableFloor: true}, false })
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
	// Each attempt runs under a context of its own, which ends before the next attempt begins.
	const limit = time.Hour
	f := newFixture(t, func(c *Config) { c.AttemptTimeout = limit; c.Idempotent = true })
	var ctxs []context.Context
	before := time.Now()
	err := f.do(context.Background(), func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		require.True(t, ok, "the attempt has a deadline")
		assert.False(t, dl.Before(before.Add(limit)), "set when the attempt began")
		assert.False(t, dl.After(time.Now().Add(limit)), "bounded by AttemptTimeout")
		for i, prev := range ctxs {
			assert.ErrorIs(t, prev.Err(), context.Canceled, "attempt %d's context ended before attempt %d", i+1, len(ctxs)+1)
		}
		require.NoError(t, ctx.Err())
		ctxs = append(ctxs, ctx)
		return errors.New("unavailable")
	})
	require.Error(t, err)
	require.Len(t, ctxs, 3)
	assert.ErrorIs(t, ctxs[2].Err(), context.Canceled, "the last one ends with the call")

	// An attempt that overruns its limit fails with a timeout: retried when idempotent only.
	for _, idempotent := range []bool{true, false} {
		f := newFixture(t, func(c *Config) { c.AttemptTimeout = time.Nanosecond; c.Idempotent = idempotent })
		calls := 0
		err := f.do(context.Background(), func(ctx context.Context) error { calls++; <-ctx.Done(); return ctx.Err() })
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		if idempotent {
			assert.Equal(t, 3, calls, "the attempt's own deadline is a retryable timeout for an idempotent call")
			assert.Equal(t, uint64(3), f.r.Snapshot().Errors[catalog.ClassTimeout])
		} else {
			assert.Equal(t, 1, calls, "not idempotent: a timeout is not retried")
		}
	}
}

func TestHooks(t *testing.T) {
	// A value whose content says "error" is the caller's to classify: Check turns it into a
	// failure; dropped values are discarded, the returned one is not; Status reports the
	// successful value's status in the succeeded event.
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
			Endpoint: "GET quotes.internal/v1/quote",
			Check: func(v string, err error) error {
				if err == nil && strings.HasPrefix(v, "error") {
					return &adapterErr{status: 502, idempotent: true}
				}
				return err
			},
			Discard: func(v string) { discarded = append(discarded, v) },
			Status:  func(string) int { return 200 },
		})
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.Equal(t, []string{"error: try later", "error: try later"}, discarded)
	ev := f.rec.all()
	require.Len(t, ev, 3)
	for _, e := range ev {
		assert.Equal(t, "GET quotes.internal/v1/quote", e.Endpoint)
	}
	assert.Equal(t, []int{502, 502, 200}, []int{ev[0].HTTPStatus, ev[1].HTTPStatus, ev[2].HTTPStatus})

	// Exhausted: the last value comes back, not discarded, with the error.
	f = newFixture(t, nil)
	discarded = nil
	drive(f.clk, func() {
		v, err = CallWith(context.Background(), f.r, func(context.Context) (string, error) {
			return "bad gateway", &adapterErr{status: 502, idempotent: true}
		}, Hooks[string]{Discard: func(v string) { discarded = append(discarded, v) }})
	})
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, "bad gateway", v)
	assert.Len(t, discarded, 2)
}

func TestBindKeepsTheContextsForTheReturnedValue(t *testing.T) {
	for name, cfg := range map[string]func(*Config){
		"AttemptTimeout": func(c *Config) { c.AttemptTimeout = time.Hour },
		"MaxDuration":    func(c *Config) { c.MaxDuration = time.Hour },
		"both":           func(c *Config) { c.AttemptTimeout, c.MaxDuration = time.Hour, 2*time.Hour },
	} {
		f := newFixture(t, cfg)
		var release func()
		actx, err := CallWith(context.Background(), f.r, func(ctx context.Context) (context.Context, error) { return ctx, nil },
			Hooks[context.Context]{Retain: func(v context.Context, r func()) context.Context { release = r; return v }})
		require.NoError(t, err, name)
		require.NotNil(t, release, name)
		require.NoError(t, actx.Err(), "%s: the attempt's context lives on with the value", name)
		release()
		assert.ErrorIs(t, actx.Err(), context.Canceled, "%s: release ends it", name)
	}

	// Without Retain the contexts end with the call; without contexts Retain is not called.
	f := newFixture(t, func(c *Config) { c.AttemptTimeout = time.Hour })
	actx, err := Call(context.Background(), f.r, func(ctx context.Context) (context.Context, error) { return ctx, nil })
	require.NoError(t, err)
	assert.ErrorIs(t, actx.Err(), context.Canceled)
	f = newFixture(t, nil)
	bound := false
	_, err = CallWith(context.Background(), f.r, func(ctx context.Context) (int, error) { return 1, nil },
		Hooks[int]{Retain: func(v int, _ func()) int { bound = true; return v }})
	require.NoError(t, err)
	assert.False(t, bound)
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
	calls = 0
	_ = f.do(context.Background(), func(context.Context) error { calls++; return &adapterErr{status: 503, noRetry: true} })
	assert.Equal(t, 1, calls, "nor the do-not-retry signal")
}

func TestConcurrentCallsAreCountedOnce(t *testing.T) {
	cfg := Config{}
	cfg.Backoff = Backoff{Strategy: None}
	cfg.DisableBudget = true
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
	conn := &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	e = &Error{name: "x", outcome: catalog.OutcomeBudgetExhausted, errs: []error{conn, conn}}
	assert.ErrorIs(t, e, syscall.ECONNREFUSED)
	cause, ok := e.FallbackCause()
	assert.True(t, ok)
	assert.Equal(t, catalog.CauseRetriesExhausted, cause)
	_, ok = (&Error{outcome: catalog.OutcomeAborted, errs: []error{conn}}).FallbackCause()
	assert.False(t, ok)
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

// The retry is protocol-agnostic: neither its code nor its tests import net/http or an adapter.
// The only way net/http reaches it is package classify's HTTP helpers (Classify of a response,
// IsIdempotent of a request), which the retry does not call.
func TestRetryKnowsNoHTTP(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	own := append(append(append([]string(nil), pkg.Imports...), pkg.TestImports...), pkg.XTestImports...)
	for _, imp := range own {
		assert.False(t, imp == "net/http" || strings.HasPrefix(imp, "net/http/") || strings.HasSuffix(imp, "/httpx"),
			"package retry imports %s", imp)
	}
	// Transitively, only through classify: no other stormwatch package it depends on imports
	// net/http (the standard packages it uses do not).
	const module = "github.com/stormwatch-go/stormwatch/"
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] || !strings.HasPrefix(path, module) || path == module+"instrument/classify" {
			return
		}
		seen[path] = true
		p, err := build.Import(path, ".", 0)
		require.NoError(t, err)
		for _, imp := range p.Imports {
			assert.NotEqual(t, "net/http", imp, "%s, a dependency of package retry, imports net/http", path)
			walk(imp)
		}
	}
	for _, imp := range pkg.Imports {
		walk(imp)
	}
	assert.True(t, seen[module+"events"], "the walk saw the dependencies")
}
