package httpx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guard bounds every blocking wait of these tests.
const guard = 10 * time.Second

// fastRetry retries at once, without a budget, so that tests decide the attempts.
func fastRetry(maxAttempts int) *retry.Config {
	return &retry.Config{MaxAttempts: maxAttempts, Backoff: retry.Backoff{Strategy: retry.None},
		DisableBudget: true}
}

// tracker is a base RoundTripper over a real loopback transport that counts dials and
// remembers every response body it handed out, to check that each one gets closed.
type tracker struct {
	base   *http.Transport
	dials  atomic.Int64
	mu     sync.Mutex
	bodies []*trackedBody
}

type trackedBody struct {
	io.ReadCloser
	closed atomic.Bool
}

func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}

func newTracker(t *testing.T) *tracker {
	tr := &tracker{}
	d := &net.Dialer{Timeout: 2 * time.Second}
	tr.base = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		tr.dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.base.CloseIdleConnections)
	return tr
}

func (tr *tracker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := tr.base.RoundTrip(req)
	if resp != nil {
		b := &trackedBody{ReadCloser: resp.Body}
		resp.Body = b
		tr.mu.Lock()
		tr.bodies = append(tr.bodies, b)
		tr.mu.Unlock()
	}
	return resp, err
}

// open returns the indexes of the response bodies not closed yet.
func (tr *tracker) open() []int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var open []int
	for i, b := range tr.bodies {
		if !b.closed.Load() {
			open = append(open, i)
		}
	}
	return open
}

// server is a scripted loopback server: handle answers the n-th request (1-based) and the
// server records each request's body and headers.
type server struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
	stop    chan struct{} // closed at cleanup: ends handlers that wait
}

func newServer(t *testing.T, handle func(n int64, w http.ResponseWriter, r *http.Request, stop <-chan struct{})) *server {
	s := &server{stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		handle(n, w, r, s.stop)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.stop) })
	return s
}

func (s *server) seen() ([]string, []http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...), append([]http.Header(nil), s.headers...)
}

// hang waits for the client to give up (or the test to end).
func hang(_ int64, _ http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-stop:
	}
}

func newTransport(t *testing.T, base http.RoundTripper, opts ...Option) *Transport {
	t.Helper()
	tr, err := NewTransport(base, opts...)
	require.NoError(t, err)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func request(t *testing.T, ctx context.Context, method, url, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	require.NoError(t, err)
	return req
}

func TestPOSTWithoutIdempotencyKeyIsNotRetriedAfterAReadTimeout(t *testing.T) {
	srv := newServer(t, hang)
	tr := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{
		Retry: fastRetry(3), Timeout: &timeout.Config{Timeout: 50 * time.Millisecond},
	}))
	resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodPost, srv.URL+"/charge", "amount=100"))
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, timeout.ErrTimedOut)
	assert.Equal(t, int64(1), srv.hits.Load(), "the charge may have been processed: never repeated")
}

func TestPOSTWithIdempotencyKeyIsRetriedWithTheSameKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		key  string // set by the caller
	}{
		{name: "generated", opts: []Option{WithIdempotencyKeys(nil)}},
		{name: "the caller's", key: "order-42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, hang)
			opts := append([]Option{WithPipeline(instrument.PipelineConfig{
				Retry: fastRetry(3), Timeout: &timeout.Config{Timeout: 50 * time.Millisecond},
			})}, tc.opts...)
			tr := newTransport(t, newTracker(t), opts...)
			req := request(t, context.Background(), http.MethodPost, srv.URL+"/charge", "amount=100")
			if tc.key != "" {
				req.Header.Set(IdempotencyKeyHeader, tc.key)
			}
			_, err := tr.RoundTrip(req)
			require.ErrorIs(t, err, timeout.ErrTimedOut)
			bodies, headers := srv.seen()
			require.Len(t, headers, 3, "retried until attempts ran out")
			key := headers[0].Get(IdempotencyKeyHeader)
			require.NotEmpty(t, key)
			if tc.key != "" {
				assert.Equal(t, tc.key, key)
			}
			for i := range headers {
				assert.Equal(t, key, headers[i].Get(IdempotencyKeyHeader), "attempt %d carries the same key", i+1)
				assert.Equal(t, "amount=100", bodies[i], "attempt %d re-sends the body byte for byte", i+1)
			}
			if tc.key == "" {
				assert.Empty(t, req.Header.Get(IdempotencyKeyHeader), "the caller's request is not modified")
			}
		})
	}
}

type zeroRand struct{}

func (zeroRand) Float64() float64 { return 0 }

func TestGET503WithRetryAfterWaitsAsTold(t *testing.T) {
	srv := newServer(t, func(n int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	fake := clock.NewFake(time.Now())
	rc := fastRetry(3)
	rc.Backoff = retry.Backoff{} // default full jitter: must not be used
	rc.Clock, rc.Rand = fake, zeroRand{}
	tr := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{Retry: rc, Breaker: &breaker.Config{Clock: fake}}))
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, srv.URL+"/quote", ""))
		done <- result{resp, err}
	}()
	require.True(t, fake.WaitForTimers(1, nil))
	fake.Advance(1999 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("retried before Retry-After elapsed")
	default:
	}
	assert.Equal(t, int64(1), srv.hits.Load())
	fake.Advance(time.Millisecond)
	var r result
	select {
	case r = <-done:
	case <-time.After(guard):
		t.Fatal("no retry after Retry-After elapsed")
	}
	require.NoError(t, r.err)
	defer r.resp.Body.Close()
	body, _ := io.ReadAll(r.resp.Body)
	assert.Equal(t, "ok", string(body))
	assert.Equal(t, int64(2), srv.hits.Load())
	p, err := tr.Pipeline(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	snap := p.Retry().Snapshot()
	assert.Equal(t, uint64(1), snap.Backoff[1].Count, "the delay came from Retry-After")
}

func TestEveryDiscardedResponseIsClosedAndTheBodyResent(t *testing.T) {
	srv := newServer(t, func(n int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		if n < 3 {
			http.Error(w, strings.Repeat("busy ", 1000), http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "stored")
	})
	track := newTracker(t)
	tr := newTransport(t, track, WithPipeline(instrument.PipelineConfig{
		Retry: fastRetry(3), Timeout: &timeout.Config{Timeout: 5 * time.Second},
	}))
	payload := bytes.Repeat([]byte{0, 1, 2, 255}, 4096)
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/blob/7", bytes.NewReader(payload))
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, []int{2}, track.open(), "the two discarded responses are closed; the returned one is the caller's")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the body is readable after the attempt returned")
	assert.Equal(t, "stored", string(body))
	require.NoError(t, resp.Body.Close())
	assert.Empty(t, track.open())
	bodies, _ := srv.seen()
	require.Len(t, bodies, 3)
	for i, b := range bodies {
		assert.True(t, bytes.Equal(payload, []byte(b)), "attempt %d: body re-sent byte-identical", i+1)
	}
}

func TestFourXXNeverTripTheBreaker(t *testing.T) {
	srv := newServer(t, func(_ int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		http.NotFound(w, nil)
	})
	tr := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{
		Retry: fastRetry(3), Breaker: &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 3},
	}))
	for range 20 {
		resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, srv.URL+"/missing", ""))
		require.NoError(t, err)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		_ = resp.Body.Close()
	}
	p, err := tr.Pipeline(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	assert.Equal(t, catalog.StateClosed, p.Breaker().State())
	assert.Equal(t, uint64(0), p.Breaker().Snapshot().Calls[catalog.CallFailed])
	assert.Equal(t, int64(20), srv.hits.Load(), "4xx are not retried")
}

func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestDeadHostTripsTheBreakerAndLaterRequestsFailFastWithoutDialling(t *testing.T) {
	addr := deadAddr(t)
	track := newTracker(t)
	tr := newTransport(t, track, WithPipeline(instrument.PipelineConfig{
		Retry:   fastRetry(2),
		Breaker: &breaker.Config{WindowSize: 20, MinCalls: 10},
	}))
	var wg sync.WaitGroup
	var refused, rejected atomic.Int64
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, "http://"+addr+"/pay", ""))
			switch {
			case errors.Is(err, breaker.ErrOpen):
				rejected.Add(1)
			case err != nil:
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(100), refused.Load()+rejected.Load(), "every request failed")
	p, err := tr.Pipeline(addr)
	require.NoError(t, err)
	require.Equal(t, catalog.StateOpen, p.Breaker().State())
	assert.Equal(t, uint64(1), p.Breaker().Snapshot().Transitions[catalog.StateClosed][catalog.StateOpen])

	dials := track.dials.Load()
	var rejections atomic.Int64
	defer tr.Registry().Events().Rejections.Add(func(events.Rejection) { rejections.Add(1) })()
	const later = 100
	for range later {
		_, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, "http://"+addr+"/pay", ""))
		require.ErrorIs(t, err, breaker.ErrOpen)
	}
	assert.Equal(t, dials, track.dials.Load(), "no network call while the breaker is open")
	assert.Equal(t, int64(later), rejections.Load(), "each later request refused by the breaker, once, without a network call")
}

func TestRetryDisabledResponseIsNotRetried(t *testing.T) {
	srv := newServer(t, func(_ int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.Header().Set(RetryDisabledHeader, "true")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tr := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{Retry: fastRetry(3)}))
	resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, srv.URL, ""))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, int64(1), srv.hits.Load())
}

func TestTimeoutHeaderPropagation(t *testing.T) {
	srv := newServer(t, func(_ int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {})
	tr := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{
		Retry: fastRetry(1), Timeout: &timeout.Config{Timeout: 2 * time.Second},
	}))
	ms := func(t *testing.T, ctx context.Context) string {
		resp, err := tr.RoundTrip(request(t, ctx, http.MethodGet, srv.URL, ""))
		require.NoError(t, err)
		_ = resp.Body.Close()
		_, headers := srv.seen()
		return headers[len(headers)-1].Get(TimeoutHeader)
	}
	v, err := strconv.Atoi(ms(t, context.Background()))
	require.NoError(t, err)
	assert.True(t, v > 0 && v <= 2000, "the attempt's limit bounds the header: %d", v)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	v, err = strconv.Atoi(ms(t, ctx))
	require.NoError(t, err)
	assert.True(t, v > 0 && v <= 500, "the caller's earlier deadline bounds the header: %d", v)

	// A request whose deadline has passed is refused before it is sent, and its body closed.
	hits := srv.hits.Load()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	body := &trackedBody{ReadCloser: io.NopCloser(strings.NewReader("x"))}
	req, err := http.NewRequestWithContext(expired, http.MethodPut, srv.URL, body)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, ErrDeadlineExpired)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, hits, srv.hits.Load(), "not sent")
	assert.True(t, body.closed.Load(), "the request body is closed as a RoundTripper must")

	// Without any deadline there is no header.
	plain := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{Retry: fastRetry(1)}))
	resp, err := plain.RoundTrip(request(t, context.Background(), http.MethodGet, srv.URL, ""))
	require.NoError(t, err)
	_ = resp.Body.Close()
	_, headers := srv.seen()
	assert.Empty(t, headers[len(headers)-1].Get(TimeoutHeader))
}

func TestUnrewindableBodyIsNotRetried(t *testing.T) {
	srv := newServer(t, func(_ int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tr := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{Retry: fastRetry(3)}))
	req := request(t, context.Background(), http.MethodPut, srv.URL, "")
	req.Body = io.NopCloser(strings.NewReader("once")) // no GetBody
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, int64(1), srv.hits.Load())

	dead := deadAddr(t)
	req = request(t, context.Background(), http.MethodPut, "http://"+dead, "")
	req.Body = io.NopCloser(strings.NewReader("once"))
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the request body cannot be rewound")
}

func TestFallbackAnswersWithAMarkedResponse(t *testing.T) {
	srv := newServer(t, func(_ int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	track := newTracker(t)
	var gotCause catalog.Cause
	var gotErr error
	tr := newTransport(t, track, WithPipeline(instrument.PipelineConfig{Retry: fastRetry(2)}),
		WithFallback(func(req *http.Request, cause catalog.Cause, err error) (*http.Response, error) {
			gotCause, gotErr = cause, err
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("payment processing"))}, nil
		}))
	resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, srv.URL+"/status", ""))
	require.NoError(t, err)
	defer resp.Body.Close()
	cause, ok := FromFallback(resp)
	assert.True(t, ok)
	assert.Equal(t, catalog.CauseRetriesExhausted, cause)
	assert.Equal(t, catalog.CauseRetriesExhausted, gotCause)
	var he *Error
	require.ErrorAs(t, gotErr, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "payment processing", string(body))
	assert.Empty(t, track.open(), "the real responses, the last one included, are closed")
	_, ok = FromFallback(&http.Response{Header: http.Header{}})
	assert.False(t, ok)
}

func TestKeysAndCardinality(t *testing.T) {
	ok := func(_ int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {}
	a, b, c := newServer(t, ok), newServer(t, ok), newServer(t, ok)
	reg, err := instrument.NewRegistry(instrument.WithMaxNames(2))
	require.NoError(t, err)
	tr := newTransport(t, newTracker(t), WithRegistry(reg), WithPipeline(instrument.PipelineConfig{Retry: fastRetry(1), Breaker: &breaker.Config{}}))
	for _, s := range []*server{a, b, c, c} {
		resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, s.URL, ""))
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	var names []string
	for _, n := range reg.Breakers() {
		names = append(names, n.Name)
	}
	hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	assert.ElementsMatch(t, []string{hostA, hostB, catalog.OverflowName}, names)
	assert.Equal(t, uint64(2), reg.OverflowCount(catalog.CircuitBreaker), "every request of the refused key is counted")

	// Userinfo and query strings never reach names or logs.
	reg2, err := instrument.NewRegistry()
	require.NoError(t, err)
	var logs bytes.Buffer
	var logMu sync.Mutex
	l, err := retrylog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	require.NoError(t, err)
	defer l.Attach(reg2.Events())()
	dead := deadAddr(t)
	tr2 := newTransport(t, newTracker(t), WithRegistry(reg2), WithPipeline(instrument.PipelineConfig{Retry: fastRetry(2)}),
		WithKey(func(r *http.Request) string { return "dead-api" }))
	_, err = tr2.RoundTrip(request(t, context.Background(), http.MethodGet, "http://alice:s3cret@"+dead+"/v1/pay?token=abc123", ""))
	require.Error(t, err)
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	assert.Contains(t, out, `"endpoint":"GET `+dead+`/v1/pay"`)
	assert.NotContains(t, out, "s3cret")
	assert.NotContains(t, out, "alice")
	assert.NotContains(t, out, "abc123")
	require.Len(t, reg2.Retries(), 1)
	assert.Equal(t, "dead-api", reg2.Retries()[0].Name)

	tr3 := newTransport(t, newTracker(t), WithKey(func(*http.Request) string { return "" }))
	_, err = tr3.RoundTrip(request(t, context.Background(), http.MethodGet, a.URL, ""))
	require.ErrorContains(t, err, "key function returned an empty name")
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestOptionsAreValidated(t *testing.T) {
	rc := retry.Config{}
	withAttemptTimeout := rc
	withAttemptTimeout.AttemptTimeout = time.Second
	tests := []struct {
		name  string
		opt   Option
		field string
		value any
		want  string
	}{
		{"nil option", nil, "option 0", nil, "httpx: option 0: is nil"},
		{"nil registry", WithRegistry(nil), "WithRegistry", nil, "httpx: WithRegistry: registry must not be nil"},
		{"nil key", WithKey(nil), "WithKey", nil, "WithKey: key function must not be nil"},
		{"nil endpoint", WithEndpoint(nil), "WithEndpoint", nil, "WithEndpoint: endpoint function must not be nil"},
		{"nil fallback", WithFallback(nil), "WithFallback", nil, "WithFallback: fallback function must not be nil"},
		{"bad timeout header", WithTimeoutHeader("X Timeout"), "WithTimeoutHeader", "X Timeout", `WithTimeoutHeader = "X Timeout": not a valid header name`},
		{"bad signal header", WithRetryDisabledHeader(""), "WithRetryDisabledHeader", "", `WithRetryDisabledHeader = "": not a valid header name`},
		{"attempt timeout twice", WithPipeline(instrument.PipelineConfig{Retry: &withAttemptTimeout, Timeout: &timeout.Config{Timeout: time.Second}}),
			"Retry.AttemptTimeout", time.Second, "Retry.AttemptTimeout = 1s: the Timeout layer already bounds each attempt"},
		{"invalid layer", WithPipeline(instrument.PipelineConfig{Bulkhead: &bulkhead.Config{MaxConcurrent: -1}}), "Bulkhead.MaxConcurrent", -1, `pipeline "pipeline": Bulkhead.MaxConcurrent = -1`},
	}
	for _, tt := range tests {
		_, err := NewTransport(nil, tt.opt)
		var ce *catalog.ConfigError
		require.ErrorAs(t, err, &ce, tt.name)
		assert.Equal(t, tt.field, ce.Field, tt.name)
		assert.Equal(t, tt.value, ce.Value, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
	}
	_, err := NewTransport(nil, WithPipeline(instrument.PipelineConfig{Bulkhead: &bulkhead.Config{MaxConcurrent: -1}}))
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce, "the pipeline's configuration error is inspectable")
	assert.Equal(t, "Bulkhead.MaxConcurrent", ce.Field)
	assert.Equal(t, -1, ce.Value)
	_, err = MiddlewareWithHeader(http.NotFoundHandler(), "bad header")
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "bad header", ce.Value)
	require.ErrorContains(t, err, `MiddlewareWithHeader.header = "bad header"`)
	_, err = MiddlewareWithHeader(nil, "X-No-Retry")
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "MiddlewareWithHeader.next", ce.Field)
	tr, err := NewTransport(nil, WithTimeoutHeader(""), WithEndpoint(func(r *http.Request) string { return "GET " + r.URL.String() }))
	require.NoError(t, err)
	assert.NotNil(t, tr.Registry())
}

func TestMiddlewareSignalsExhaustedRetriesUpstream(t *testing.T) {
	// downstream fails; "middle" retries it through a Transport and answers 503; the upstream
	// client sees Retry-Disabled and does not retry middle.
	downstream := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
		switch r.URL.Path {
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/refuses":
			w.Header().Set(RetryDisabledHeader, "true")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	})
	midTransport := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{Retry: fastRetry(3)}))
	midClient := &http.Client{Transport: midTransport}
	var middleHits atomic.Int64
	middle := httptest.NewServer(Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		middleHits.Add(1)
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, downstream.URL+r.URL.Path, nil)
		resp, err := midClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		_ = resp.Body.Close()
		if resp.StatusCode >= 400 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})))
	t.Cleanup(middle.Close)
	upstream := newTransport(t, newTracker(t), WithPipeline(instrument.PipelineConfig{Retry: fastRetry(3)}))

	tests := []struct {
		path       string
		wantSignal bool
		wantHits   int64 // requests middle received from upstream
	}{
		{"/down", true, 1},     // middle's retries exhausted: upstream does not retry
		{"/refuses", true, 1},  // downstream said so: passed on
		{"/missing", false, 1}, // 404, not retried by middle: no signal... and a 503 answer
	}
	for _, tt := range tests {
		middleHits.Store(0)
		resp, err := upstream.RoundTrip(request(t, context.Background(), http.MethodGet, middle.URL+tt.path, ""))
		require.NoError(t, err, tt.path)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, tt.path)
		if tt.wantSignal {
			assert.Equal(t, "true", resp.Header.Get(RetryDisabledHeader), tt.path)
			assert.Equal(t, tt.wantHits, middleHits.Load(), tt.path)
		} else {
			assert.Empty(t, resp.Header.Get(RetryDisabledHeader), tt.path)
			assert.Equal(t, int64(3), middleHits.Load(), "without the signal upstream retries: %s", tt.path)
		}
	}

	// The helpers outside a middleware's request do nothing.
	assert.False(t, MarkRetryDisabled(context.Background()))
	assert.False(t, RetryDisabled(context.Background()))
	assert.False(t, NoteError(context.Background(), errors.New("x")))
}

func TestMiddlewareSuccessIsNeverMarked(t *testing.T) {
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.True(t, MarkRetryDisabled(r.Context()))
		assert.True(t, RetryDisabled(r.Context()))
		_, _ = io.WriteString(w, "served from cache")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Header().Get(RetryDisabledHeader))

	custom, err := MiddlewareWithHeader(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		MarkRetryDisabled(r.Context())
		w.WriteHeader(http.StatusInternalServerError)
	}), "x-no-retry")
	require.NoError(t, err)
	rec = httptest.NewRecorder()
	custom.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, "true", rec.Header().Get("X-No-Retry"))
}

func TestBodyStaysReadableUnderThePipelinesDeadlines(t *testing.T) {
	srv := newServer(t, func(n int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, strings.Repeat("x", 100_000))
	})
	withMaxDuration := fastRetry(2)
	withMaxDuration.MaxDuration = 5 * time.Second
	withAttemptTimeout := fastRetry(2)
	withAttemptTimeout.AttemptTimeout = 5 * time.Second
	for name, cfg := range map[string]instrument.PipelineConfig{
		"timeout layer":         {Retry: fastRetry(2), Timeout: &timeout.Config{Timeout: 5 * time.Second}},
		"retry MaxDuration":     {Retry: withMaxDuration, Timeout: &timeout.Config{Timeout: time.Second}},
		"retry AttemptTimeout":  {Retry: withAttemptTimeout},
		"breaker outside retry": {Order: instrument.BreakerPerCall, Retry: withMaxDuration, Breaker: &breaker.Config{}, Timeout: &timeout.Config{Timeout: time.Second}},
	} {
		srv.hits.Store(0)
		tr := newTransport(t, newTracker(t), WithPipeline(cfg))
		resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, srv.URL, ""))
		require.NoError(t, err, name)
		assert.Equal(t, http.StatusOK, resp.StatusCode, name)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "%s: the body is read after every layer returned", name)
		assert.Len(t, body, 100_000, name)
		require.NoError(t, resp.Body.Close())
	}
}

func TestPOSTIsRetriedWhenItNeverLeft(t *testing.T) {
	// Connection refused proves the server never saw the request: retrying is safe even without
	// an idempotency key.
	dead := deadAddr(t)
	track := newTracker(t)
	tr := newTransport(t, track, WithPipeline(instrument.PipelineConfig{Retry: fastRetry(3)}))
	_, err := tr.RoundTrip(request(t, context.Background(), http.MethodPost, "http://"+dead+"/charge", "amount=100"))
	require.Error(t, err)
	var rerr *retry.Error
	require.ErrorAs(t, err, &rerr)
	assert.Len(t, rerr.Attempts(), 3)
	assert.Equal(t, int64(3), track.dials.Load())
}

// Keys come from traffic: one that is not a valid label value (invalid UTF-8, a control
// character) must not fail the request, and must not reach the registry as it is.
func TestKeysFromTrafficAreSanitised(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	tr, err := NewTransport(http.DefaultTransport, WithRegistry(reg),
		WithPipeline(instrument.PipelineConfig{Breaker: &breaker.Config{}}),
		WithKey(func(*http.Request) string { return "bad\xffname\x01" }))
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	require.NoError(t, err, "a hostile key never fails the request")
	require.NoError(t, resp.Body.Close())
	bs := reg.Breakers()
	require.Len(t, bs, 1)
	assert.Equal(t, instrument.SanitizeName("bad\xffname\x01"), bs[0].Name)
	assert.True(t, utf8.ValidString(bs[0].Name))
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func TestResendCountIsOnEachRetriedAttemptsContext(t *testing.T) {
	srv := newServer(t, func(n int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	inner := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(inner.CloseIdleConnections)
	var seen []int
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		seen = append(seen, ResendCount(req.Context()))
		return inner.RoundTrip(req)
	})
	tr := newTransport(t, base, WithPipeline(instrument.PipelineConfig{Retry: fastRetry(3)}))
	resp, err := tr.RoundTrip(request(t, context.Background(), http.MethodGet, srv.URL, ""))
	require.NoError(t, err)
	DiscardResponse(resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []int{0, 1, 2}, seen, "the first attempt, then the first and second resends")
	assert.Equal(t, 0, ResendCount(context.Background()), "a context the Transport did not make")
}
