package instrument

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// TestPipelineHedgesEachAttemptThroughTheInnerLayers: with a hedge layer, a stuck attempt is
// hedged after the delay; both attempts pass the breaker and take a bulkhead permit; the
// hedge's answer is the call's, the stuck attempt's value is discarded; the retry sees one
// successful attempt, and the hedge spent a token of the retry budget.
func TestPipelineHedgesEachAttemptThroughTheInnerLayers(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	p, err := reg.Pipeline("payments", PipelineConfig{
		Retry:    &retry.Config{Clock: clk},
		Breaker:  &breaker.Config{Clock: clk},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 5, Clock: clk},
		Hedge:    &hedge.Config{Delay: 20 * time.Millisecond, Idempotent: true, Clock: clk},
	})
	require.NoError(t, err)
	require.NotNil(t, p.Hedge())

	var n, inflightSeen, discarded atomic.Int32
	started := make(chan struct{}, 2)
	done := make(chan string, 1)
	go func() {
		v, _, err := CallWith(context.Background(), p, func(ctx context.Context) (string, error) {
			first := n.Add(1) == 1
			inflightSeen.Store(int32(p.Bulkhead().Snapshot().InFlight))
			started <- struct{}{}
			if first {
				<-ctx.Done()
				return "stale", ctx.Err()
			}
			return "fresh", nil
		}, retry.Hooks[string]{Discard: func(v string) {
			if v == "stale" {
				discarded.Add(1)
			}
		}}, nil)
		if err != nil {
			v = err.Error()
		}
		done <- v
	}()
	<-started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(20 * time.Millisecond)
	<-started
	assert.Equal(t, "fresh", <-done)
	assert.Equal(t, int32(2), inflightSeen.Load(), "the hedge held a bulkhead permit of its own")
	assert.Equal(t, int32(1), discarded.Load(), "the losing attempt's value is discarded")

	hs := p.Hedge().Snapshot()
	assert.Equal(t, uint64(1), hs.Hedges[catalog.HedgeWon])
	bs := p.Breaker().Snapshot()
	assert.Equal(t, uint64(1), bs.Calls[catalog.CallSuccessful])
	assert.Equal(t, uint64(1), bs.Calls[catalog.CallIgnored], "the cancelled loser is no failure")
	rs := p.Retry().Snapshot()
	assert.Equal(t, uint64(1), rs.Calls[catalog.RetrySuccessfulWithoutRetry], "one logical call, one attempt for the retry")
	assert.Equal(t, uint64(2), p.Bulkhead().Snapshot().Calls[catalog.AdmissionPermitted])
}

func TestPipelineRefusesAnInvalidHedge(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	_, err = reg.Pipeline("payments", PipelineConfig{Hedge: &hedge.Config{MaxHedges: 99}})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Hedge.MaxHedges", ce.Field)
}
