package demo

import (
	"context"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// alwaysRand draws x for every request.
type alwaysRand float64

func (r alwaysRand) Float64() float64 { return float64(r) }

// TestInProcessAnswersAsTheNetworkWould: the in-process transport returns the downstream's
// answers (status, headers, body), a reset connection as ECONNRESET (class conn_reset, as over
// a socket), and a hanging request's context error once its caller gives up.
func TestInProcessAnswersAsTheNetworkWould(t *testing.T) {
	clk := clock.NewFake(epoch)
	down := NewDownstream(clk, alwaysRand(0.5), 1, Payments)
	defer down.Close()
	tr := inProcess{h: down}
	do := func(ctx context.Context, f Fault) (*http.Response, error) {
		require.NoError(t, down.SetFault(Payments, f))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://downstream.invalid/payments", nil)
		require.NoError(t, err)
		return tr.RoundTrip(req)
	}

	resp, err := do(context.Background(), Fault{})
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", string(b))

	resp, err = do(context.Background(), Fault{ErrorRate: 1})
	require.NoError(t, err)
	assert.Equal(t, "503 Service Unavailable", resp.Status)

	resp, err = do(context.Background(), Fault{RateLimitRate: 1, RetryAfter: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"))

	_, err = do(context.Background(), Fault{ResetRate: 1})
	require.ErrorIs(t, err, syscall.ECONNRESET)
	assert.Equal(t, catalog.ClassConnReset, classify.ClassifyError(err, true).Class)

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := do(ctx, Fault{HangRate: 1}); got <- err }()
	cancel()
	select {
	case err := <-got:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(guard):
		t.Fatal("the hanging request did not end with its context")
	}

	// The latency runs on the downstream's clock: the answer waits for it.
	require.NoError(t, down.SetFault(Payments, Fault{Latency: time.Second}))
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://downstream.invalid/payments", nil)
		if resp, err := tr.RoundTrip(req); err == nil {
			answered <- resp.StatusCode
		}
	}()
	require.True(t, clk.WaitForTimers(1, nil))
	assert.Empty(t, answered, "not before the latency has passed")
	clk.Advance(time.Second)
	select {
	case code := <-answered:
		assert.Equal(t, http.StatusOK, code)
	case <-time.After(guard):
		t.Fatal("no answer after the latency")
	}
}
