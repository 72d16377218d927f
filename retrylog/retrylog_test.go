package retrylog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 30, 9, 14, 2, 481_000_000, time.UTC)

type zeroRand struct{}

func (zeroRand) Float64() float64 { return 0 }

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func lines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		out = append(out, m)
	}
	return out
}

// waitClock is a fake clock that remembers the last wait the code under test started.
type waitClock struct {
	*clock.Fake
	mu   sync.Mutex
	last time.Duration
}

func newWaitClock() *waitClock { return &waitClock{Fake: clock.NewFake(t0)} }

func (c *waitClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.last = d
	c.mu.Unlock()
	return c.Fake.NewTimer(d)
}

// drive runs fn, advancing the fake clock by exactly each wait, until fn returns.
func drive(fc *waitClock, fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	for fc.WaitForTimers(1, done) {
		fc.mu.Lock()
		d := fc.last
		fc.mu.Unlock()
		fc.Advance(d)
	}
	<-done
}

// scripted runs the golden sequence through a real registry and retry on a fake clock.
func scripted(t *testing.T, w io.Writer) {
	fc := newWaitClock()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	l, err := New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}), WithClock(fc))
	require.NoError(t, err)
	defer l.Attach(reg.Events())()
	cfg := retry.Config{}
	cfg.MaxAttempts = 5
	cfg.Clock = fc
	cfg.Rand = zeroRand{}
	cfg.Backoff = retry.Backoff{Strategy: retry.Exponential, Base: 1740 * time.Millisecond, Cap: 30 * time.Second}
	cfg.DisableBudget = true
	r, err := reg.Retry("orders-api", cfg)
	require.NoError(t, err)

	// Call 1: 503 with Retry-After: 2, a timeout, then success. The attempts report through
	// package httpx's errors, as the HTTP transport does: a POST with an idempotency key.
	post, err := http.NewRequest(http.MethodPost, "https://api.example.com/api/v2/orders", nil)
	require.NoError(t, err)
	post.Header.Set(httpx.IdempotencyKeyHeader, "order-7")
	unavailable := &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{"Retry-After": {"2"}}}
	ctx := WithCorrelationID(context.Background(), "c1f8a2e4-6b90-4d3e-9a11-7c5de0f3b842")
	n := 0
	drive(fc, func() {
		_, err = retry.CallWith(ctx, r, func(context.Context) (int, error) {
			n++
			switch n {
			case 1:
				fc.Advance(120 * time.Millisecond) // the attempt takes time
				return 0, httpx.Result(post, unavailable, nil)
			case 2:
				fc.Advance(time.Second)
				return 0, httpx.Result(post, nil, context.DeadlineExceeded)
			}
			return 1, nil
		}, retry.Hooks[int]{Endpoint: httpx.Endpoint(post)})
	})
	require.NoError(t, err)

	// Call 2: always 502, two attempts, gives up.
	r2, err := reg.Retry("inventory-api", func() retry.Config { c := cfg; c.MaxAttempts = 2; return c }())
	require.NoError(t, err)
	get, err := http.NewRequest(http.MethodGet, "http://inventory.internal/v1/stock", nil)
	require.NoError(t, err)
	ctx = WithCorrelationID(context.Background(), "req-0002")
	drive(fc, func() {
		_, err = retry.CallWith(ctx, r2, func(context.Context) (int, error) {
			return 0, httpx.Result(get, &http.Response{StatusCode: 502, Status: "502 Bad Gateway"}, nil)
		}, retry.Hooks[int]{Endpoint: httpx.Endpoint(get)})
	})
	require.Error(t, err)
}

func TestGoldenJSON(t *testing.T) {
	var buf bytes.Buffer
	scripted(t, &buf)
	golden := "testdata/retry.golden.jsonl"
	if *update {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), buf.String())

	// Exactly the documented attributes (plus slog's time, level, msg): delay_source only when a
	// delay follows (retrying), error_class only after a failed attempt, http_status only with a
	// response.
	keys := []string{"event", "name", "correlation_id", "endpoint", "attempt", "max_attempts", "elapsed_ms",
		"delay_ms", "outcome", "time", "level", "msg"}
	ls := lines(t, buf.String())
	require.Len(t, ls, 5)
	var outcomes []string
	for _, m := range ls {
		got := make([]string, 0, len(m))
		for k := range m {
			got = append(got, k)
		}
		want := append([]string(nil), keys...)
		for _, optional := range []string{"delay_source", "error_class", "http_status"} {
			if _, ok := m[optional]; ok {
				want = append(want, optional)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		assert.Equal(t, want, got)
		assert.Equal(t, "retry", m["msg"])
		assert.Equal(t, "retry", m["event"])
		_, hasSource := m["delay_source"]
		assert.Equal(t, m["outcome"] == "retrying", hasSource, "delay_source exactly when a delay follows")
		_, hasClass := m["error_class"]
		assert.Equal(t, m["outcome"] != "succeeded", hasClass, "error_class exactly after a failed attempt")
		outcomes = append(outcomes, m["outcome"].(string))
	}
	assert.Equal(t, []string{"retrying", "retrying", "succeeded", "retrying", "gave_up"}, outcomes)
	assert.Equal(t, []string{"WARN", "WARN", "INFO", "WARN", "ERROR"},
		[]string{ls[0]["level"].(string), ls[1]["level"].(string), ls[2]["level"].(string), ls[3]["level"].(string), ls[4]["level"].(string)})
	_, hasStatus := ls[1]["http_status"]
	assert.False(t, hasStatus, "a timeout has no response")
	assert.Equal(t, float64(503), ls[0]["http_status"])
	assert.Equal(t, "retry_after", ls[0]["delay_source"])
	assert.Equal(t, float64(2000), ls[0]["delay_ms"])
}

func TestSecretsNeverLoggedOrExported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":"s3cret-body"}`)
	}))
	defer srv.Close()
	fc := newWaitClock()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	var buf syncBuffer
	l, err := New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), WithClock(fc))
	require.NoError(t, err)
	defer l.Attach(reg.Events())()
	cfg := retry.Config{}
	cfg.Clock = fc
	r, err := reg.Retry("payments-api", cfg)
	require.NoError(t, err)

	u := strings.Replace(srv.URL, "http://", "http://user:pass@", 1) + "/v1/charge?token=s3cret&card=4111"
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer s3cret-bearer")
	var resp *http.Response
	drive(fc, func() {
		resp, err = retry.CallWith(context.Background(), r, func(ctx context.Context) (*http.Response, error) {
			return srv.Client().Do(req.WithContext(ctx))
		}, httpx.RetryHooks(req))
	})
	require.Error(t, err)
	httpx.DiscardResponse(resp)
	assert.Contains(t, err.Error(), "503", "the error itself is the caller's")

	// An event from elsewhere with a raw URL is sanitised too.
	l.Log(events.Retry{Name: "payments-api", Endpoint: "POST https://user:pass@api.example.com/v1/x?token=s3cret", Outcome: catalog.OutcomeGaveUp, At: t0})
	// Whatever the shape: scheme-relative, a first word that is not a method, a DSN.
	l.Log(events.Retry{Name: "payments-api", Endpoint: "POST //user:pass@h:8080/a?token=s3cret", Outcome: catalog.OutcomeGaveUp, At: t0})
	l.Log(events.Retry{Name: "ledger-db", Endpoint: "query postgres://user:pass@db:5432/ledger?sslmode=s3cret", Outcome: catalog.OutcomeGaveUp, At: t0})

	c, err := collector.New(reg)
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	var metrics strings.Builder
	for _, mf := range mfs {
		metrics.WriteString(mf.String())
	}
	log := buf.String()
	require.Len(t, lines(t, log), 5) // retrying, budget_exhausted (the floor allows one retry per second), the raw events
	assert.Contains(t, log, `"endpoint":"GET 127.0.0.1:`)
	assert.Contains(t, log, `"endpoint":"POST https://api.example.com/v1/x"`)
	assert.Contains(t, log, `"endpoint":"POST //h:8080/a"`)
	assert.Contains(t, log, `"endpoint":"query postgres://db:5432/ledger"`)
	for _, secret := range []string{"s3cret", "pass", "user:", "token=", "Bearer", "Authorization", "card=", "4111"} {
		assert.NotContains(t, log, secret)
		assert.NotContains(t, metrics.String(), secret)
	}
}

func TestRateLimitPerName(t *testing.T) {
	fc := clock.NewFake(t0)
	var buf bytes.Buffer
	l, err := New(slog.NewJSONHandler(&buf, nil), WithClock(fc))
	require.NoError(t, err)
	ev := events.Retry{Name: "payments-api", Outcome: catalog.OutcomeRetrying, Attempt: 1, MaxAttempts: 3}

	// 1,000 retries within one second.
	for range 1000 {
		ev.At = fc.Now()
		l.Log(ev)
		fc.Advance(time.Millisecond) // the 1,000th lands at +999 ms
	}
	l.Flush()
	ls := lines(t, buf.String())
	assert.LessOrEqual(t, len(ls), 11)
	regular, suppressed := count(ls)
	assert.Equal(t, 10, regular)
	assert.Equal(t, 1000, regular+suppressed, "every retry is either logged or counted")
	last := ls[len(ls)-1]
	assert.Equal(t, float64(990), last["suppressed"])
	assert.Equal(t, "payments-api", last["name"])
	assert.Equal(t, "WARN", last["level"])

	// A storm of 5,000 over five seconds, interleaved with a quiet second name.
	buf.Reset()
	fc.Advance(time.Hour)
	other := events.Retry{Name: "orders-api", Outcome: catalog.OutcomeRetrying}
	for i := range 5000 {
		l.Log(ev)
		if i%500 == 0 {
			l.Log(other)
		}
		fc.Advance(time.Millisecond)
	}
	l.Flush()
	ls = lines(t, buf.String())
	var storm []map[string]any
	otherLines := 0
	for _, m := range ls {
		if m["name"] == "orders-api" {
			otherLines++
			continue
		}
		storm = append(storm, m)
	}
	assert.Equal(t, 10, otherLines, "the quiet name is not affected by the storm")
	regular, suppressed = count(storm)
	assert.Equal(t, 50, regular)
	assert.Equal(t, 5000, regular+suppressed)
	assert.LessOrEqual(t, len(storm), 5*11)

	// Limit off.
	buf.Reset()
	unlimited, err := New(slog.NewJSONHandler(&buf, nil), WithRateLimit(0), WithClock(fc))
	require.NoError(t, err)
	for range 100 {
		unlimited.Log(ev)
	}
	assert.Len(t, lines(t, buf.String()), 100)
}

func count(ls []map[string]any) (regular, suppressed int) {
	for _, m := range ls {
		if n, ok := m["suppressed"]; ok {
			suppressed += int(n.(float64))
			continue
		}
		regular++
	}
	return
}

func TestLevelsAndOptions(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}),
		WithLevel(catalog.OutcomeAborted, slog.LevelWarn), WithLevel(catalog.OutcomeGaveUp, slog.LevelWarn+2))
	require.NoError(t, err)
	for _, o := range catalog.Outcomes {
		l.Log(events.Retry{Name: "x", Outcome: o, At: t0})
	}
	var levels []string
	for _, m := range lines(t, buf.String()) {
		levels = append(levels, m["level"].(string))
	}
	assert.Equal(t, []string{"WARN", "INFO", "WARN+2", "WARN", "WARN"}, levels)

	// Disabled levels are neither written nor counted against the rate limit.
	buf.Reset()
	quiet, err := New(slog.NewJSONHandler(&buf, nil), WithRateLimit(1), WithClock(clock.NewFake(t0)))
	require.NoError(t, err)
	quiet.Log(events.Retry{Name: "x", Outcome: catalog.OutcomeAborted})
	quiet.Log(events.Retry{Name: "x", Outcome: catalog.OutcomeGaveUp})
	assert.Len(t, lines(t, buf.String()), 1)

	var ce *catalog.ConfigError
	_, err = New(nil, WithLevel(catalog.Outcome(9), slog.LevelInfo))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "WithLevel", ce.Field)
	require.ErrorContains(t, err, `retrylog: WithLevel = "Outcome(9)": unknown outcome`)
	_, err = New(nil, WithRateLimit(-1))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, -1, ce.Value)
	require.ErrorContains(t, err, "retrylog: WithRateLimit = -1: must not be negative")
	_, err = New(nil, WithClock(nil))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "WithClock", ce.Field)
	def, err := New(nil)
	require.NoError(t, err)
	assert.NotNil(t, def.h)
}

func TestCorrelationID(t *testing.T) {
	ctx := WithCorrelationID(context.Background(), "abc")
	assert.Equal(t, "abc", CorrelationID(ctx))
	assert.Equal(t, "abc", events.CorrelationID(ctx))
	assert.Empty(t, CorrelationID(context.Background()))

	// Absent from the event's context: one is generated for the line.
	var buf bytes.Buffer
	l, err := New(slog.NewJSONHandler(&buf, nil))
	require.NoError(t, err)
	l.Log(events.Retry{Name: "x", Outcome: catalog.OutcomeRetrying})
	ls := lines(t, buf.String())
	require.Len(t, ls, 1)
	assert.Len(t, ls[0]["correlation_id"], 36)
}

func TestAttachDetach(t *testing.T) {
	fc := clock.NewFake(t0)
	var buf bytes.Buffer
	l, err := New(slog.NewJSONHandler(&buf, nil), WithRateLimit(1), WithClock(fc))
	require.NoError(t, err)
	hub := new(events.Hub)
	detach := l.Attach(hub)
	for range 3 {
		hub.Retries.Emit(events.Retry{Name: "x", Outcome: catalog.OutcomeRetrying})
	}
	detach() // flushes the summary
	hub.Retries.Emit(events.Retry{Name: "x", Outcome: catalog.OutcomeRetrying})
	ls := lines(t, buf.String())
	require.Len(t, ls, 2)
	assert.Equal(t, float64(2), ls[1]["suppressed"])
	assert.False(t, hub.Retries.Active())
	l.Attach(nil)() // harmless
}

func TestConcurrentLogging(t *testing.T) {
	var buf syncBuffer
	l, err := New(slog.NewJSONHandler(&buf, nil), WithClock(clock.NewFake(t0)))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 500 {
				l.Log(events.Retry{Name: []string{"a", "b"}[g%2], Outcome: catalog.OutcomeRetrying, Err: errors.New("x")})
			}
		})
	}
	wg.Wait()
	l.Flush()
	regular, suppressed := count(lines(t, buf.String()))
	assert.Equal(t, 20, regular)
	assert.Equal(t, 4000, regular+suppressed)
}
