package httpx

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

type okTransport struct{}

func (okTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// TestTransportCacheFollowsIdleEviction: a key whose primitives the registry evicted gets a
// fresh pipeline — the registry's — on its next request, not the cached, evicted one whose
// counts no scrape would read; and the cache forgets evicted keys.
func TestTransportCacheFollowsIdleEviction(t *testing.T) {
	const ttl = time.Minute
	clk := clock.NewFake(time.Unix(1e9, 0))
	reg, err := instrument.NewRegistry(instrument.WithIdleTTL(ttl, clk))
	require.NoError(t, err)
	cfg := DefaultPipeline()
	cfg.Breaker.Clock, cfg.Retry.Clock = clk, clk
	tr, err := NewTransport(okTransport{}, WithRegistry(reg), WithPipeline(cfg))
	require.NoError(t, err)
	get := func(host string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	get("a.example")
	get("b.example")
	first, err := tr.Pipeline("a.example")
	require.NoError(t, err)
	assert.Equal(t, int64(2), tr.cached.Load())

	clk.Advance(ttl / 2)
	reg.EvictIdle()  // a sweep (a scrape would run one): both moved since creation
	get("b.example") // b stays in use
	clk.Advance(ttl)
	require.Positive(t, reg.EvictIdle())
	get("b.example")
	assert.Equal(t, int64(1), tr.cached.Load(), "the evicted key left the cache")
	for _, nb := range reg.Breakers() {
		assert.NotEqual(t, "a.example", nb.Name)
	}

	get("a.example")
	again, err := tr.Pipeline("a.example")
	require.NoError(t, err)
	assert.NotSame(t, first, again, "a fresh pipeline after the eviction")
	var found bool
	for _, nb := range reg.Breakers() {
		if nb.Name == "a.example" {
			found = true
			assert.Equal(t, uint64(1), nb.Value.Snapshot().Calls[0], "the request after the eviction counts in the registry's breaker")
		}
	}
	assert.True(t, found)
}
