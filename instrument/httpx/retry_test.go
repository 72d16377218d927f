package httpx

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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// recClock is a fake clock that records every wait the retry starts and ends it at once, so that
// a retry runs its delays without anybody advancing the clock: the delays are read back, in order.
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
	c.Fake.Advance(d)
	return firedTimer{}
}

func (c *recClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type firedTimer struct{}

func (firedTimer) C() <-chan time.Time {
	c := make(chan time.Time, 1)
	c <- t0
	return c
}
func (firedTimer) Stop() bool { return false }

// retryFixture is a retry on a recClock, a fixed jitter draw of 0, exponential backoff from
// 100 ms, no budget, with its events recorded.
type retryFixture struct {
	r   *retry.Retry
	clk *recClock
	mu  sync.Mutex
	ev  []events.Retry
}

func newRetryFixture(t *testing.T, mod func(*retry.Config)) *retryFixture {
	t.Helper()
	f := &retryFixture{clk: newRecClock()}
	hub := new(events.Hub)
	hub.Retries.Add(func(e events.Retry) { f.mu.Lock(); f.ev = append(f.ev, e); f.mu.Unlock() })
	cfg := retry.Config{Clock: f.clk, Rand: zeroRand{}, Events: hub}
	cfg.Backoff = retry.Backoff{Strategy: retry.Exponential}
	cfg.DisableBudget = true
	if mod != nil {
		mod(&cfg)
	}
	r, err := retry.New("quotes-api", cfg)
	require.NoError(t, err)
	f.r = r
	return f
}

func (f *retryFixture) events() []events.Retry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.Retry(nil), f.ev...)
}

func (f *retryFixture) outcomes() []catalog.Outcome {
	var out []catalog.Outcome
	for _, e := range f.events() {
		out = append(out, e.Outcome)
	}
	return out
}

// response is a synthetic response to a GET of /v1/orders.
func response(status int, header ...string) *http.Response {
	req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/v1/orders", nil)
	resp := &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: http.Header{}, Body: http.NoBody, Request: req}
	for i := 0; i+1 < len(header); i += 2 {
		resp.Header.Set(header[i], header[i+1])
	}
	return resp
}

func TestResult(t *testing.T) {
	assert.Nil(t, Result(nil, response(200), nil))
	assert.Nil(t, Result(nil, response(304), nil))
	assert.Nil(t, Result(nil, nil, nil))

	err := Result(nil, response(503, "Retry-After", "2", RetryDisabledHeader, " TRUE "), nil)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "HTTP 503 Service Unavailable", e.Error())
	assert.Equal(t, 503, e.HTTPStatus())
	assert.True(t, e.Idempotent(), "a GET")
	assert.True(t, e.DoNotRetry(), "the do-not-retry signal")
	wait, ok := e.RetryAfter(t0)
	assert.True(t, ok)
	assert.Equal(t, 2*time.Second, wait)
	assert.Equal(t, "HTTP 404", (&Error{StatusCode: 404}).Error())

	post, _ := http.NewRequest(http.MethodPost, "http://api.example.com/v1/orders", nil)
	reset := &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}
	err = Result(post, nil, reset)
	require.ErrorAs(t, err, &e)
	assert.False(t, e.Idempotent(), "a POST without an idempotency key")
	assert.Zero(t, e.HTTPStatus(), "no response")
	assert.ErrorIs(t, err, reset)
	_, ok = e.RetryAfter(t0)
	assert.False(t, ok)

	// Retry-After counts on 429 and 503 only.
	for status, want := range map[int]bool{429: true, 503: true, 500: false, 502: false, 404: false} {
		_, ok := Result(nil, response(status, "Retry-After", "5"), nil).(*Error).RetryAfter(t0)
		assert.Equal(t, want, ok, "status %d", status)
	}

	// The error is a classify.StatusError: a breaker classifies it by its status.
	var se classify.StatusError = &Error{StatusCode: 404}
	assert.Equal(t, classify.Verdict{Class: catalog.ClassHTTP4xx}, classify.ClassifyError(fmt.Errorf("x: %w", se), true))
	assert.Zero(t, (&Error{StatusCode: 502, Err: errors.New("reset")}).HTTPStatus())
}

func TestParseRetryAfter(t *testing.T) {
	huge := "1" + strings.Repeat("0", 399) // a 400-digit number of seconds
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30", 30 * time.Second, true},
		{"30.0", 30 * time.Second, true},
		{" 30", 30 * time.Second, true},
		{"30 ", 30 * time.Second, true},
		{"\t30", 30 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{".5", 500 * time.Millisecond, true},
		{"0.000000001", time.Nanosecond, true},
		{"0.0000000019", time.Nanosecond, true},
		{"0", 0, true},
		{"007", 7 * time.Second, true},
		{"86400", 86400 * time.Second, true},
		{"4294967295", 4294967295 * time.Second, true},
		{"4294967296", maxRetryAfter, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{huge, maxRetryAfter, true},
		{huge + ".5", maxRetryAfter, true},
		{strings.Repeat("0", 400) + "12", 12 * time.Second, true},
		{"-1", 0, false},
		{"abc", 0, false},
		{"", 0, false},
		{"   ", 0, false},
		{"1e3", 0, false},
		{"+5", 0, false},
		{"1.2.3", 0, false},
		{".", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"５", 0, false}, // a full-width digit is not a digit
		{t0.Add(45 * time.Second).Format(http.TimeFormat), 45 * time.Second, true},
		{t0.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{t0.Add(90 * time.Second).Format(time.RFC850), 90 * time.Second, true},
		{t0.Add(30 * time.Second).Format(time.ANSIC), 30 * time.Second, true},
		{"Fri, 31 Dec 9999 23:59:59 GMT", maxRetryAfter, true},
		{"Mon, 01 Jan 0001 00:00:00 GMT", 0, true},
		{"Mon, 32 Nov 2026 12:00:00 GMT", 0, false},
	}
	for _, c := range cases {
		got, ok := parseRetryAfter(c.in, t0)
		assert.Equal(t, c.ok, ok, "%q", c.in)
		assert.Equal(t, c.want, got, "%q", c.in)
	}
}

// A 400-digit Retry-After is a valid value that asks for a very long wait: the retry waits its
// maximum (60 s by default), not its backoff.
func TestHugeRetryAfterClampsToTheMaximum(t *testing.T) {
	for _, v := range []string{"1" + strings.Repeat("0", 399), "99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		f := newRetryFixture(t, func(c *retry.Config) { c.MaxAttempts = 2 })
		_ = f.r.Do(context.Background(), func(context.Context) error {
			return Result(nil, response(http.StatusServiceUnavailable, "Retry-After", v), nil)
		})
		assert.Equal(t, []time.Duration{60 * time.Second}, f.clk.Waits(), "Retry-After %.20s…", v)
		ev := f.events()
		require.Len(t, ev, 2)
		assert.Equal(t, catalog.SourceRetryAfter, ev[0].DelaySource)
	}
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
			f := newRetryFixture(t, func(cfg *retry.Config) { cfg.MaxAttempts = 2 })
			_ = f.r.Do(context.Background(), func(context.Context) error {
				return Result(nil, response(c.status, "Retry-After", c.retryAfter), nil)
			})
			assert.Equal(t, []time.Duration{c.wait}, f.clk.Waits())
			ev := f.events()
			require.Len(t, ev, 2)
			assert.Equal(t, c.source, ev[0].DelaySource)
			assert.Equal(t, c.status, ev[0].HTTPStatus, "the retry log's http_status")
			assert.Equal(t, uint64(1), f.r.Snapshot().Backoff[c.source].Count)
		})
	}
}

func TestRetryHooks(t *testing.T) {
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
	f := newRetryFixture(t, nil)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/orders?token=s3cret", nil)
	h := RetryHooks(req)
	assert.Equal(t, "GET "+strings.TrimPrefix(srv.URL, "http://")+"/v1/orders", h.Endpoint)
	discard := h.Discard
	h.Discard = func(resp *http.Response) { closed.Add(1); discard(resp) }
	resp, err := retry.CallWith(context.Background(), f.r, func(ctx context.Context) (*http.Response, error) {
		return srv.Client().Do(req.WithContext(ctx))
	}, h)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "ok", string(body))
	assert.Equal(t, int64(1), closed.Load(), "the dropped 503 was discarded")
	assert.Equal(t, []time.Duration{time.Second}, f.clk.Waits(), "Retry-After: 1")
	ev := f.events()
	assert.Equal(t, h.Endpoint, ev[0].Endpoint)
	assert.Equal(t, []catalog.Outcome{catalog.OutcomeRetrying, catalog.OutcomeSucceeded}, f.outcomes())
	assert.Equal(t, []int{503, 200}, []int{ev[0].HTTPStatus, ev[1].HTTPStatus}, "each event carries its response's status")

	// Exhausted: the last response comes back undrained with the error.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(502)
		_, _ = io.WriteString(w, "bad gateway")
	}))
	defer srv2.Close()
	req2, _ := http.NewRequest(http.MethodGet, srv2.URL, nil)
	f2 := newRetryFixture(t, nil)
	resp, err = retry.CallWith(context.Background(), f2.r, func(ctx context.Context) (*http.Response, error) {
		return srv2.Client().Do(req2.WithContext(ctx))
	}, RetryHooks(req2))
	var he *Error
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 502, he.StatusCode)
	require.NotNil(t, resp)
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "bad gateway", string(body))
	assert.Len(t, f2.clk.Waits(), 2)
}

func TestDoNotRetrySignalIsHonoured(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set(RetryDisabledHeader, "true")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	f := newRetryFixture(t, func(c *retry.Config) { c.RetryIf = func(error, classify.Verdict) bool { return true } })
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := retry.CallWith(context.Background(), f.r, func(ctx context.Context) (*http.Response, error) {
		return srv.Client().Do(req.WithContext(ctx))
	}, RetryHooks(req))
	DiscardResponse(resp)
	var he *Error
	require.ErrorAs(t, err, &he)
	assert.True(t, he.DoNotRetry())
	assert.Equal(t, int64(1), n.Load(), "the upstream said its retries are exhausted: no retry, whatever RetryIf says")
}

func TestNonIdempotentRequestIsNotRetriedAfterAReadTimeout(t *testing.T) {
	f := newRetryFixture(t, func(c *retry.Config) { c.Idempotent = true }) // the request's own idempotency wins
	post, _ := http.NewRequest(http.MethodPost, "http://api.example.com/v1/charge", strings.NewReader("{}"))
	readTimeout := &url.Error{Op: "Post", URL: post.URL.String(), Err: &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}}
	calls := 0
	err := f.r.Do(context.Background(), func(context.Context) error { calls++; return Result(post, nil, readTimeout) })
	require.Error(t, err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, uint64(1), f.r.Snapshot().Errors[catalog.ClassTimeout])

	// With an Idempotency-Key it is retried.
	post.Header.Set(IdempotencyKeyHeader, "order-42")
	calls = 0
	_ = f.r.Do(context.Background(), func(context.Context) error { calls++; return Result(post, nil, readTimeout) })
	assert.Equal(t, 3, calls)

	// A TLS certificate error is never retried.
	calls = 0
	certErr := &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}
	_ = f.r.Do(context.Background(), func(context.Context) error { calls++; return Result(nil, nil, certErr) })
	assert.Equal(t, 1, calls)
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestReturnedBodyIsReleasedOnCloseOrEOF(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.(http.Flusher).Flush() // headers first, body later: the body is read from the connection
		_, _ = io.WriteString(w, strings.Repeat("x", 1<<16))
	}))
	defer srv.Close()
	for _, cfg := range []func(*retry.Config){
		func(c *retry.Config) { c.AttemptTimeout = 10 * time.Second },
		func(c *retry.Config) { c.MaxDuration = 10 * time.Second },
		func(c *retry.Config) { c.AttemptTimeout, c.MaxDuration = 10*time.Second, 20*time.Second },
	} {
		for _, byEOF := range []bool{false, true} {
			f := newRetryFixture(t, cfg)
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			var actx context.Context
			resp, err := retry.CallWith(context.Background(), f.r, func(ctx context.Context) (*http.Response, error) {
				actx = ctx
				return srv.Client().Do(req.WithContext(ctx))
			}, RetryHooks(req))
			require.NoError(t, err)
			require.NoError(t, actx.Err(), "the attempt's context lives on with the response")
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Len(t, body, 1<<16)
			if byEOF {
				assert.ErrorIs(t, actx.Err(), context.Canceled, "reading to the end released the context")
			}
			require.NoError(t, resp.Body.Close())
			assert.ErrorIs(t, actx.Err(), context.Canceled, "closing the body released the context")
		}
	}
	// A response without a body releases at once.
	released := 0
	assert.Nil(t, retain(nil, func() { released++ }))
	resp := retain(&http.Response{Body: http.NoBody}, func() { released++ })
	assert.Equal(t, http.NoBody, resp.Body)
	assert.Equal(t, 2, released)
}

func TestEndpoint(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "https://user:pass@api.example.com/v2/orders?token=s3cret#frag", nil)
	assert.Equal(t, "POST api.example.com/v2/orders", Endpoint(req))
	assert.Equal(t, "", Endpoint(nil))
	req = &http.Request{URL: &url.URL{Path: "/v1/a b"}, Host: "alice@h:8080"}
	assert.Equal(t, "GET h:8080/v1/a%20b", Endpoint(req), "no method means GET; the Host header's userinfo goes too")
	req = &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/a?b#c"}}
	assert.Equal(t, "GET /a%3Fb%23c", Endpoint(req), "an escaped '?' is part of the path")
}

func TestSanitizeEndpoint(t *testing.T) {
	cases := map[string]string{
		"GET https://user:pass@api.example.com/v1/x?token=s3cret": "GET https://api.example.com/v1/x",
		"https://user:pass@host/p?q=1#f":                          "https://host/p",
		"POST /api/v2/orders?debug=1":                             "POST /api/v2/orders",
		"user:pass@host:8080/path?x":                              "host:8080/path",
		"GET api.example.com/v1/orders":                           "GET api.example.com/v1/orders",
		"":                                                        "",
		// Shapes whose userinfo got through before.
		"POST //user:pass@h:8080/a":           "POST //h:8080/a", // url.URL.String() of a URL without scheme
		"//user:pass@h:8080/a":                "//h:8080/a",
		"123 https://user:pass@h/x":           "123 https://h/x", // the first word is not a method
		"call-orders user:pass@h/x":           "call-orders h/x",
		"db-query //user:pass@h/x":            "db-query //h/x",
		"GET /x user:pass@h":                  "GET /x h",
		"GET http://h/ http://user:pass@h2/y": "GET http://h/ http://h2/y",
		"GET h/proxy/http://user:pass@in/x":   "GET h/proxy/http://in/x",
		"GET https://user:pa?ss@host/x":       "GET https://",
	}
	for in, want := range cases {
		assert.Equal(t, want, SanitizeEndpoint(in), in)
	}
	u := &url.URL{User: url.UserPassword("user", "pass"), Host: "h:8080", Path: "/a"}
	assert.Equal(t, "POST //h:8080/a", SanitizeEndpoint("POST "+u.String()))
}

// FuzzRetryAfter checks the Retry-After parser and the delay the retry derives from it: never a
// panic; a value parsed or reported absent; a parsed value within [0, maxRetryAfter]; digits worth
// maxRetryAfter or more parse as maxRetryAfter, and as the retry's maximum (60 s) once clamped;
// an HTTP-date in the past parses as 0; whatever the header, the retry's delay is within its
// clamp [0.5 s, 60 s] when Retry-After set it, and the backoff's (100 ms) otherwise.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"30", "30.0", " 30", "-1", "abc", "0", "86400", "1e3", ".", "+5", "",
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Fri, 31 Dec 9999 23:59:59 GMT", "99999999999999999999", "4294967296", "0.0000000001",
		"1" + strings.Repeat("0", 399), "\xff", "３"} {
		f.Add(s)
	}
	now := t0
	clk := newRecClock()
	r, err := retry.New("fuzz", retry.Config{MaxAttempts: 2, Clock: clk, Rand: clock.Locked(clock.Global{}),
		Backoff: retry.Backoff{Strategy: retry.Constant}, DisableBudget: true})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, now)
		if !ok && d != 0 {
			t.Fatalf("%q: absent but %v", v, d)
		}
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("%q: %v outside [0, %v]", v, d, maxRetryAfter)
		}
		s := strings.TrimSpace(v)
		if s != "" && digits(s) {
			if !ok {
				t.Fatalf("%q: digits reported absent", v)
			}
			n, err := strconv.ParseUint(s, 10, 64)
			if (err != nil || n >= maxRetryAfterSeconds) && d != maxRetryAfter {
				t.Fatalf("%q: %v, want the maximum %v", v, d, maxRetryAfter)
			}
			if err == nil && n < maxRetryAfterSeconds && d != time.Duration(n)*time.Second {
				t.Fatalf("%q: %v, want %ds", v, d, n)
			}
		}
		if at, err := http.ParseTime(s); err == nil && !at.After(now) && (!ok || d != 0) {
			t.Fatalf("%q: a date in the past gives %v, %t", v, d, ok)
		}

		// Through the retry: the delay before the second attempt.
		clk.mu.Lock()
		clk.waits = clk.waits[:0]
		clk.mu.Unlock()
		clk.Set(now)
		_ = r.Do(context.Background(), func(context.Context) error {
			return Result(nil, response(http.StatusTooManyRequests, "Retry-After", v), nil)
		})
		waits := clk.Waits()
		if len(waits) != 1 {
			t.Fatalf("%q: waits %v", v, waits)
		}
		rc := r.Config()
		switch w := waits[0]; {
		case !ok && w != rc.Backoff.Base:
			t.Fatalf("%q: absent, but the delay is %v, not the backoff's", v, w)
		case ok && (w < rc.RetryAfter.Min || w > rc.RetryAfter.Max):
			t.Fatalf("%q: delay %v outside the clamp", v, w)
		case ok && d >= rc.RetryAfter.Max && w != rc.RetryAfter.Max:
			t.Fatalf("%q: asks for %v, waits %v, want the maximum", v, d, w)
		}
	})
}

// FuzzSanitizeEndpoint checks that no userinfo, query string or fragment survives, for any input
// (invalid UTF-8 included), and that sanitising is idempotent. Userinfo is what precedes an '@'
// in an authority: a word's first segment, or a segment after "//".
func FuzzSanitizeEndpoint(f *testing.F) {
	for _, s := range []string{
		"GET https://user:pass@api.example.com/v1/x?token=s3cret",
		"POST //user:pass@h:8080/a",
		"//user:pass@h:8080/a",
		"123 https://user:pass@h/x",
		"call user:pass@h/x?q#f",
		"GET http://h/ http://user:pass@h2/y",
		"GET https://user:pa?ss@host/x",
		"https://host?a=b@c/d",
		"GET /users/a@b.example/orders",
		"//u@/v@w",
		"u@ x@y",
		"\xffuser:pass@h\xfe/x",
		"GET\tuser:pass@h\n/x",
		"",
	} {
		f.Add(s, "", "")
	}
	f.Add("GET https://", "alice:hunter22", "api.example.com/v1/x?token=s3cret")
	f.Add("", "u:p", "h:8080/a#frag")
	f.Fuzz(func(t *testing.T, prefix, userinfo, rest string) {
		in := prefix + userinfo + "@" + rest
		for _, s := range []string{prefix + userinfo + rest, in} {
			out := SanitizeEndpoint(s)
			if strings.ContainsAny(out, "?#") {
				t.Fatalf("%q → %q: a query string or fragment survived", s, out)
			}
			if u := userinfoIn(out); u != "" {
				t.Fatalf("%q → %q: userinfo %q survived", s, out, u)
			}
			if again := SanitizeEndpoint(out); again != out {
				t.Fatalf("%q → %q → %q: not idempotent", s, out, again)
			}
			if utf8.ValidString(s) && !utf8.ValidString(out) {
				t.Fatalf("%q → %q: invalid UTF-8 made of valid input", s, out)
			}
		}
		// A secret planted as the userinfo of a URL never comes out, unless the rest of the
		// input holds it too.
		if strings.HasSuffix(prefix, "//") && !strings.ContainsAny(userinfo, "@/?# \t\n\v\f\r") && len(userinfo) >= 4 &&
			!strings.Contains(prefix+rest, userinfo) && strings.Contains(SanitizeEndpoint(in), userinfo) {
			t.Fatalf("%q → %q: %q kept", in, SanitizeEndpoint(in), userinfo)
		}
	})
}

// userinfoIn returns the first userinfo in s: the part up to an '@' of a word's first segment or
// of a segment after "//"; "" when there is none.
func userinfoIn(s string) string {
	for _, word := range strings.FieldsFunc(s, func(r rune) bool { return r < utf8.RuneSelf && isASCIISpace(byte(r)) }) {
		segs := strings.Split(word, "/")
		if strings.Contains(segs[0], "@") {
			return segs[0]
		}
		for i := 2; i < len(segs); i++ { // segs[i] follows "//" when segs[i-1] is empty
			if segs[i-1] == "" && strings.Contains(segs[i], "@") {
				return segs[i]
			}
		}
	}
	return ""
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
