package demo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// The overload script offers payments half its capacity, then 2× and 3×, then half again, and
// gives it an adaptive limiter; the other dependencies keep their steady faults.
func TestOverloadScenarioScript(t *testing.T) {
	sc, err := LookupScenario(ScenarioOverload)
	require.NoError(t, err)
	require.NoError(t, sc.validate())
	assert.Equal(t, []string{Payments}, sc.Limited)
	capacity := float64(overloadCapacity) * float64(time.Second) / float64(overloadService)
	var shares []float64
	for _, p := range sc.Phases {
		f := p.fault(Payments)
		assert.Equal(t, overloadCapacity, f.Capacity, p.Name)
		shares = append(shares, f.Load*DefaultRate/capacity)
		assert.Equal(t, Steady, p.fault(Inventory), p.Name)
	}
	assert.Equal(t, []float64{0.5, 2, 3, 0.5}, shares)
}

// An endpoint with a Capacity serves that many requests at a time; the others wait in order.
func TestDownstreamCapacityQueues(t *testing.T) {
	clk := clock.NewFake(epoch)
	d := NewDownstream(clk, nil, 1, Payments)
	defer d.Close()
	require.NoError(t, d.SetFault(Payments, Fault{Latency: time.Second, Capacity: 1}))
	var done atomic.Int32
	var wg sync.WaitGroup
	serve := func() {
		defer wg.Done()
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+Payments, nil).WithContext(context.Background()))
		assert.Equal(t, http.StatusOK, rec.Code)
		done.Add(1)
	}
	wg.Add(2)
	go serve()
	require.True(t, clk.WaitForTimers(1, nil), "the first request is served")
	go serve()
	for d.Received(Payments) < 2 {
		runtime.Gosched() // the second request has arrived (it cannot start a timer before the slot is free)
	}
	assert.Equal(t, 1, clk.Timers(), "one request in service, the other waiting for the slot")
	clk.Advance(time.Second)
	require.True(t, clk.WaitForTimers(1, nil), "the second request is served after the first")
	assert.LessOrEqual(t, done.Load(), int32(1), "the second is still in service")
	clk.Advance(time.Second)
	wg.Wait()
	assert.Equal(t, int32(2), done.Load())
	assert.Error(t, d.SetFault(Payments, Fault{Capacity: -1}))
}

// load.run follows its multiplier: three times the rate, three times the calls.
func TestLoadFollowsItsMultiplier(t *testing.T) {
	clk := clock.NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		load{rate: 10, maxInFlight: 100, mult: func() float64 { return 3 }}.run(ctx, clk, epoch,
			func(context.Context) { calls.Add(1) }, func() {})
	}()
	for i := 0; i < 30; i++ {
		require.True(t, clk.WaitForTimers(1, nil))
		clk.Advance(time.Second / 30)
	}
	require.True(t, clk.WaitForTimers(1, nil))
	cancel()
	<-finished
	assert.Equal(t, int32(30), calls.Load(), "30 calls in one second at 3 × 10/s")
}
