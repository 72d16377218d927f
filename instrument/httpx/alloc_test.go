package httpx

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// okBase answers every request with a 200 whose body is a fixed reader, allocating only what
// the test measures around it.
type okBase struct {
	resp http.Response
	seen *http.Request
}

func (b *okBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.seen = req
	b.resp.Body = http.NoBody
	b.resp.Request = req
	return &b.resp, nil
}

// The default pipeline (retry and breaker) adds no allocation to a request: the per-request
// state is recycled, its functions bound once, and the request is handed to the base as it is
// when nothing about it changes.
func TestDefaultPipelineAddsNoAllocation(t *testing.T) {
	base := &okBase{resp: http.Response{StatusCode: http.StatusOK}}
	tr, err := NewTransport(base)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.test/v1", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req) // create the key's primitives
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	})
	if !raceEnabled { // (the race detector makes sync.Pool drop items at random)
		assert.Zero(t, allocs, "a request through the default pipeline allocates nothing of its own")
	}
	assert.Same(t, req, base.seen, "an unchanged request is sent as it is (the caller's is never modified)")
	s := tr.reg.Breakers()
	require.Len(t, s, 1)
	assert.Equal(t, uint64(1002), s[0].Value.Snapshot().Calls[catalog.CallSuccessful], "every request counted once")
}

// With a Timeout layer each attempt gets its own request (its context and the timeout header),
// and the caller's request and header map are never modified.
func TestTimedAttemptCopiesTheRequest(t *testing.T) {
	base := &okBase{resp: http.Response{StatusCode: http.StatusOK}}
	tr, err := NewTransport(base, WithPipeline(instrument.PipelineConfig{
		Retry: &retry.Config{}, Breaker: &breaker.Config{}, Bulkhead: &bulkhead.Config{},
		Timeout: &timeout.Config{Timeout: time.Hour},
	}))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.test/v1", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	req.Header["x-raw"] = nil
	for range 3 {
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.NotSame(t, req, base.seen)
		h := base.seen.Header
		assert.Equal(t, "application/json", h.Get("Accept"))
		ms, _ := time.ParseDuration(h.Get(TimeoutHeader) + "ms")
		assert.InDelta(t, time.Hour, ms, float64(time.Minute), "the time left: %q", h.Get(TimeoutHeader))
		v, ok := h["x-raw"]
		assert.True(t, ok && v == nil, "a nil value is kept, as Header.Clone keeps it")
		assert.Equal(t, http.Header{"Accept": {"application/json"}, "x-raw": nil}, req.Header, "the caller's header is untouched")
		_, deadline := base.seen.Context().Deadline()
		assert.True(t, deadline)
	}
	// The attempts' header maps are distinct; the shared value slice is never written to.
	first := base.seen.Header
	_, err = tr.RoundTrip(req)
	require.NoError(t, err)
	first["Accept"] = []string{"changed"}
	assert.Equal(t, "application/json", base.seen.Header.Get("Accept"))
}

// A recycled call starts fresh: the state of a request that failed, was retried and blocked by
// its body never leaks into the next one.
func TestRecycledCallStartsFresh(t *testing.T) {
	n := 0
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		n++
		if req.Body != nil && req.Body != http.NoBody {
			_, _ = io.Copy(io.Discard, req.Body)
			_ = req.Body.Close()
		}
		if n == 1 {
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{RetryDisabledHeader: {"true"}},
				Body: http.NoBody, Request: req}, nil
		}
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	tr, err := NewTransport(base, WithPipeline(instrument.PipelineConfig{Retry: fastRetry(3)}))
	require.NoError(t, err)
	// An unrewindable POST body, with the downstream's do-not-retry signal: one attempt.
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://api.test/v1", io.NopCloser(strings.NewReader("x")))
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, 1, n)
	for i := range 3 {
		get, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.test/v1", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(get)
		require.NoError(t, err, "request %d", i)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Equal(t, 4, n, "one attempt each: nothing of the first call was carried over")
}

func TestSameContext(t *testing.T) {
	type valueCtx struct {
		context.Context
		v []int // not comparable: == on two of these would panic
	}
	bg := context.Background()
	c1, cancel := context.WithCancel(bg)
	defer cancel()
	assert.True(t, sameContext(bg, context.Background()))
	assert.False(t, sameContext(bg, context.TODO()))
	assert.True(t, sameContext(c1, c1))
	assert.False(t, sameContext(c1, bg))
	v := valueCtx{Context: bg, v: []int{1}}
	assert.False(t, sameContext(v, v), "values of a non-comparable type are never taken for the same")
}
