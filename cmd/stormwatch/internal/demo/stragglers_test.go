package demo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// The stragglers script: inventory has a 5% straggler tail and is hedged, is slow for everyone
// from 0:15 to 1:15 (without errors, which the spent budget would leave to the fallback), then
// gets its tail back; the other dependencies stay steady.
func TestStragglersScenarioScript(t *testing.T) {
	sc, err := LookupScenario(ScenarioStragglers)
	require.NoError(t, err)
	require.NoError(t, sc.validate())
	assert.Equal(t, []string{Inventory}, sc.Hedged)
	require.Len(t, sc.Phases, 3)
	tail := sc.Phases[0].fault(Inventory)
	assert.Equal(t, 0.05, tail.StragglerRate)
	assert.Equal(t, stragglersLatency, tail.StragglerLatency)
	assert.Greater(t, tail.StragglerLatency, stragglersDelay+tail.Latency+tail.Jitter, "only stragglers outlast the hedge delay")
	assert.Less(t, tail.Latency+tail.Jitter, stragglersDelay)
	slow := sc.Phases[1].fault(Inventory)
	assert.Equal(t, faultStart, sc.Phases[1].At)
	assert.Greater(t, slow.Latency, stragglersDelay, "every call outlasts the delay")
	assert.Zero(t, slow.ErrorRate)
	assert.Equal(t, faultEnd, sc.Phases[2].At)
	assert.Equal(t, tail, sc.Phases[2].fault(Inventory))
	for _, p := range sc.Phases {
		assert.Equal(t, Steady, p.fault(Payments), p.Name)
		assert.Equal(t, Steady, p.fault(Recommendations), p.Name)
	}
	assert.Error(t, Fault{StragglerRate: 1.5}.validate())
	assert.Error(t, Fault{StragglerLatency: -time.Second}.validate())
}

// handlerTransport serves requests in process with h, on the caller's goroutine.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// TestHedgingCutsTheStragglersTail runs the stragglers scenario's inventory on a fake clock
// against the scenario's downstream: a call whose first request straggles (540ms) is hedged
// after 100ms, the hedge answers 40ms later and wins, the straggler is cancelled, and the call
// takes 140ms; the unhedged twin's straggler takes its full 540ms. The status line shows both.
func TestHedgingCutsTheStragglersTail(t *testing.T) {
	clk := clock.NewFake(epoch)
	sc, err := LookupScenario(ScenarioStragglers)
	require.NoError(t, err)
	// Each request draws its fault share, whether it straggles, then its jitter (half of 40ms).
	straggler, fast := []float64{0.5, 0.01, 0.5}, []float64{0.5, 0.9, 0.5}
	down := NewDownstream(clk, &draws{v: concat(straggler, fast, straggler)}, 1, Dependencies...)
	defer down.Close()
	applyPhase(sc.Phases[0], down, &board{out: newPrinted()})
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	cfg := Config{Profiles: testProfiles(), Speed: 1, Clock: clk}
	deps, err := newDependencies(cfg, sc, reg, "http://downstream.invalid", handlerTransport{down})
	require.NoError(t, err)
	inv := deps[1]
	require.Equal(t, Inventory, inv.name)
	require.NotNil(t, inv.hg, "inventory is hedged")
	require.NotNil(t, inv.tw, "with an unhedged twin")
	assert.Nil(t, deps[0].hg, "payments is not hedged")

	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() { b, _, err := inv.Call(context.Background()); res <- result{b, err} }()
	// The hedge delay, the attempt's time limit and the straggler's latency.
	require.True(t, clk.WaitForTimers(3, nil))
	clk.Advance(stragglersDelay - time.Millisecond)
	assert.Equal(t, uint64(1), down.Received(Inventory), "no hedge before the delay")
	clk.Advance(time.Millisecond)
	// The straggler's two timers, and the hedge's.
	require.True(t, clk.WaitForTimers(4, nil))
	assert.Equal(t, uint64(2), down.Received(Inventory), "the hedge was sent")
	clk.Advance(40 * time.Millisecond)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, "ok\n", r.body)
	// The call returns with the winner; the cancelled straggler's goroutine stops its timers
	// after that, on its own.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.True(t, clk.WaitForTimersAtMost(0, ctx.Done()), "the straggler was cancelled: its timers stop")
	s := inv.hg.Snapshot()
	assert.Equal(t, uint64(1), s.Calls)
	assert.Equal(t, [catalog.NumHedgeOutcomes]uint64{1, 0, 0, 0}, s.Hedges, "one hedge, won")

	twinDone := make(chan struct{})
	go func() { defer close(twinDone); inv.tw.call(context.Background()) }()
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(540*time.Millisecond - time.Millisecond)
	select {
	case <-twinDone:
		t.Fatal("the twin's straggler answered early")
	default:
	}
	clk.Advance(time.Millisecond)
	<-twinDone

	assert.Equal(t, "  └ p99 hedged 140ms · unhedged 540ms · +100% load · won 100% · denied 0",
		hedgeLine(inv, inv.counts(), depCounts{}, 0))
	rs := inv.rt.Snapshot()
	assert.Equal(t, uint64(1), rs.Calls[catalog.RetrySuccessfulWithoutRetry], "one call: the hedge is the pipeline's layer inside the retry")
	assert.Zero(t, rs.Calls[catalog.RetryAborted], "the cancelled straggler is the hedge layer's loser, not a call of the retry")
	assert.Equal(t, uint64(3), down.Received(Inventory), "the twin's request reached the same endpoint, outside the pipeline")
}

func concat(vs ...[]float64) []float64 {
	var out []float64
	for _, v := range vs {
		out = append(out, v...)
	}
	return out
}

// latencies keeps the last n and reports the nearest-rank quantile.
func TestLatenciesQuantile(t *testing.T) {
	l := newLatencies(100)
	_, ok := l.quantile(0.99)
	assert.False(t, ok, "no latency yet")
	for i := 1; i <= 150; i++ { // the last 100: 51ms..150ms
		l.add(time.Duration(i) * time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{0.99: 149 * time.Millisecond, 0.5: 100 * time.Millisecond, 1: 150 * time.Millisecond, 0: 51 * time.Millisecond} {
		got, ok := l.quantile(q)
		require.True(t, ok)
		assert.Equal(t, want, got, "q=%v", q)
	}
}
