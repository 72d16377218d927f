package httpx

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// TestSeed004Drill replays the fault-injection drill of seed 004's post-mortem (seed notes
// INC-05, INC-08) on loopback, scaled down from seconds to milliseconds: the bank channel times
// out on 100% of requests while the order service keeps calling it and the inventory service.
// With the fixed configuration — per-dependency breaker, bulkhead and timeout, one retry — the
// bank's breaker trips within its window, the payment fallback answers "payment processing",
// and inventory, behind its own bulkhead, keeps a 100% success rate throughout.
func TestSeed004Drill(t *testing.T) {
	bank := newServer(t, hang) // maintenance: every request times out
	inventory := newServer(t, func(_ int64, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
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
		window   = 10 // INC-05: slidingWindowSize 50, scaled down
		minCalls = 5
	)
	tr := newTransport(t, newTracker(t), WithRegistry(reg),
		WithPipeline(instrument.PipelineConfig{
			Retry: &retry.Config{ // retry only at this layer: maxAttempts 2, exponential backoff
				MaxAttempts: 2,
				Backoff:     retry.Backoff{Strategy: retry.Exponential, Base: 5 * time.Millisecond},
				Budget:      retry.BudgetConfig{MinRetriesPerSecond: 1000},
			},
			Breaker:  &breaker.Config{WindowSize: window, MinCalls: minCalls, FailureRateThreshold: 0.5, OpenDuration: time.Minute},
			Bulkhead: &bulkhead.Config{MaxConcurrent: 4, MaxWait: 50 * time.Millisecond}, // INC-06: 30 / 200 ms
			Timeout:  &timeout.Config{Timeout: 40 * time.Millisecond},                    // INC-05: TimeLimiter 5 s
		}),
		WithFallback(func(req *http.Request, cause catalog.Cause, err error) (*http.Response, error) {
			if req.URL.Host != bankHost {
				return nil, err // only payments degrade
			}
			return &http.Response{StatusCode: http.StatusAccepted, Body: io.NopCloser(strings.NewReader("payment processing"))}, nil
		}))
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
		ctx, cancel := context.WithTimeout(context.Background(), guard)
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
					if cause, ok := FromFallback(resp); ok && body == "payment processing" {
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
	assert.Less(t, elapsed, guard)
	t.Logf("drill: %d payments degraded (bank hit %d times), %d inventory ok, in %v", paymentsDegraded.Load(), hits, inventoryOK.Load(), elapsed)
}
