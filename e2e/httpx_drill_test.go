//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// drillGuard bounds every request of the drill.
const drillGuard = 10 * time.Second

// drillServer is a loopback server that counts its requests.
type drillServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newDrillServer(t *testing.T, handle http.HandlerFunc) *drillServer {
	s := &drillServer{}
	stop := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if handle == nil { // hang until the client gives up or the test ends
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		handle(w, r)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(stop) })
	return s
}

// TestHTTPXOutageDrill is a fault-injection drill on loopback, on the wall clock and scaled down
// from seconds to milliseconds: the bank channel times out on every request while the order
// service keeps calling it and the inventory service. With per-dependency breaker, bulkhead and
// timeout and a single retry layer, the bank's breaker trips within its window, the payment
// fallback answers "payment processing", and inventory, behind its own bulkhead, keeps a 100%
// success rate throughout.
func TestHTTPXOutageDrill(t *testing.T) {
	bank := newDrillServer(t, nil) // maintenance: every request times out
	inventory := newDrillServer(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "in stock")
	})
	bankHost := strings.TrimPrefix(bank.URL, "http://")

	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	var tripped atomic.Int64 // closed→open transitions of the bank's breaker
	reg.Events().Transitions.Add(func(e events.Transition) {
		if e.Name == bankHost && e.From == catalog.StateClosed && e.To == catalog.StateOpen {
			tripped.Add(1)
		}
	})
	const (
		window   = 10
		minCalls = 5
	)
	tr, err := httpx.NewTransport(&http.Transport{}, httpx.WithRegistry(reg),
		httpx.WithPipeline(instrument.PipelineConfig{
			Retry: &retry.Config{ // retry only at this layer: 2 attempts, exponential backoff
				MaxAttempts: 2,
				Backoff:     retry.Backoff{Strategy: retry.Exponential, Base: 5 * time.Millisecond},
				Budget:      retry.BudgetConfig{MinRetriesPerSecond: 1000},
			},
			Breaker:  &breaker.Config{WindowSize: window, MinCalls: minCalls, FailureRateThreshold: 0.5, OpenDuration: time.Minute},
			Bulkhead: &bulkhead.Config{MaxConcurrent: 4, MaxWait: 50 * time.Millisecond},
			Timeout:  &timeout.Config{Timeout: 40 * time.Millisecond},
		}),
		httpx.WithFallback(func(req *http.Request, cause catalog.Cause, err error) (*http.Response, error) {
			if req.URL.Host != bankHost {
				return nil, err // only payments degrade
			}
			return &http.Response{StatusCode: http.StatusAccepted, Body: io.NopCloser(strings.NewReader("payment processing"))}, nil
		}))
	require.NoError(t, err)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	const (
		workers = 8
		rounds  = 10 // each round: one payment and one inventory request per worker, concurrently
	)
	var (
		inventoryOK, inventoryFailed atomic.Int64
		paymentsDegraded, paymentsOK atomic.Int64
		causes                       sync.Map // catalog.Cause → *atomic.Int64
		wg                           sync.WaitGroup
	)
	get := func(url string) (*http.Response, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), drillGuard)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				var inner sync.WaitGroup
				inner.Add(1)
				go func() {
					defer inner.Done()
					resp, body, err := get(bank.URL + "/pay")
					if err != nil {
						return
					}
					if cause, ok := httpx.FromFallback(resp); ok && body == "payment processing" {
						paymentsDegraded.Add(1)
						n, _ := causes.LoadOrStore(cause, new(atomic.Int64))
						n.(*atomic.Int64).Add(1)
					} else {
						paymentsOK.Add(1)
					}
				}()
				resp, body, err := get(inventory.URL + "/stock")
				if err == nil && resp.StatusCode == http.StatusOK && body == "in stock" {
					inventoryOK.Add(1)
				} else {
					inventoryFailed.Add(1)
				}
				inner.Wait()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	const total = workers * rounds
	// Inventory is unaffected.
	assert.Equal(t, int64(total), inventoryOK.Load(), "inventory keeps a 100%% success rate")
	assert.Zero(t, inventoryFailed.Load())
	// Every payment got the degraded answer, none an error.
	assert.Equal(t, int64(total), paymentsDegraded.Load(), "every payment answered by the fallback")
	assert.Zero(t, paymentsOK.Load())
	// The bank's breaker tripped once, within its window: the bank saw at most a window's worth
	// of attempts plus those the breaker had already admitted when it tripped (at most one per
	// worker, running or queued at the bulkhead), out of the 160 the payments could make.
	bankPipe, err := tr.Pipeline(bankHost)
	require.NoError(t, err)
	assert.Equal(t, int64(1), tripped.Load())
	assert.Equal(t, catalog.StateOpen, bankPipe.Breaker().State())
	hits := bank.hits.Load()
	assert.LessOrEqual(t, hits, int64(window+workers), "the bank stopped receiving requests after the trip (got %d)", hits)
	circuitOpen, _ := causes.Load(catalog.CauseCircuitOpen)
	require.NotNil(t, circuitOpen)
	assert.GreaterOrEqual(t, circuitOpen.(*atomic.Int64).Load(), int64(total)-hits, "after the trip payments fail fast")
	// Separate bulkheads: the inventory's never rejected anything.
	invPipe, err := tr.Pipeline(strings.TrimPrefix(inventory.URL, "http://"))
	require.NoError(t, err)
	assert.Equal(t, uint64(0), invPipe.Bulkhead().Snapshot().Calls[catalog.AdmissionRejected])
	assert.Equal(t, catalog.StateClosed, invPipe.Breaker().State())
	assert.Less(t, elapsed, drillGuard)
	t.Logf("drill: %d payments degraded (bank hit %d times), %d inventory ok, in %v", paymentsDegraded.Load(), hits, inventoryOK.Load(), elapsed)
}
