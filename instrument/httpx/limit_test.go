package httpx

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// WithLimit holds whatever the option order: a second request while the only permit is taken is
// rejected without reaching the server and is not retried; a 503 is a drop for the limiter.
func TestWithLimitRejectsBeyondTheLimit(t *testing.T) {
	entered, unblock := make(chan struct{}), make(chan struct{})
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/slow" {
			close(entered)
			<-unblock
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	tr, err := NewTransport(nil,
		WithLimit(limit.Config{InitialLimit: 1, MaxLimit: 1}),
		WithPipeline(instrument.PipelineConfig{}), // after WithLimit: the limit still applies
	)
	require.NoError(t, err)
	client := &http.Client{Transport: tr}

	done := make(chan error, 1)
	go func() {
		resp, err := client.Get(srv.URL + "/slow")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-entered
	_, err = client.Get(srv.URL + "/fast")
	require.ErrorIs(t, err, limit.ErrLimited)
	close(unblock)
	require.NoError(t, <-done)
	assert.Equal(t, 1, hits, "the rejected request never reached the server")

	resp, err := client.Get(srv.URL + "/fast")
	if err == nil {
		resp.Body.Close()
	}
	p, err := tr.Pipeline(hostKey(httptest.NewRequest("GET", srv.URL, nil)))
	require.NoError(t, err)
	sn := p.Limiter().Snapshot()
	assert.Equal(t, [catalog.NumSampleKinds]uint64{1, 1, 0}, sn.Samples, "the 200 is measured, the 503 dropped")
	assert.Equal(t, uint64(1), sn.Rejections[catalog.ReasonLimit])
}

func TestWithThrottleCountsResponses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	tr, err := NewTransport(nil, WithPipeline(instrument.PipelineConfig{}), WithThrottle(throttle.Config{}))
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	p, err := tr.Pipeline(hostKey(httptest.NewRequest("GET", srv.URL, nil)))
	require.NoError(t, err)
	sn := p.Throttle().Snapshot()
	assert.Equal(t, uint64(1), sn.Calls[catalog.ThrottleRefused], "a 429 is a refusal")
	assert.Equal(t, 1.0, sn.Requests)
}
