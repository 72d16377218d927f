package instrument

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// TestRegistryHedgeSpendsTheRetryBudget: a registry's hedge draws on the retry budget of the
// same name, so the token a hedge takes is gone for the retry.
func TestRegistryHedgeSpendsTheRetryBudget(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	r, err := reg.Retry("payments", retry.Config{Clock: clk,
		Budget: retry.BudgetConfig{Ratio: 0.5, Capacity: 4, DisableFloor: true, DisableDecay: true}})
	require.NoError(t, err)
	permanent := classify.Permanent(errors.New("no"))
	for range 2 { // two first attempts fund one token
		_ = r.Do(context.Background(), func(context.Context) error { return permanent })
	}
	require.Equal(t, 1, r.Snapshot().BudgetTokens)

	h, err := reg.Hedge("payments", hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true, Clock: clk})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 2)
	done := make(chan error, 1)
	go func() {
		done <- h.Do(ctx, func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done() // both attempts wait for the caller to leave
			return ctx.Err()
		})
	}()
	<-started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(10 * time.Millisecond)
	<-started // the hedge ran: it took the retry's token
	assert.Equal(t, 0, r.Snapshot().BudgetTokens, "the hedge spent the retry budget's token")

	other, err := reg.Hedge("inventory", hedge.Config{})
	require.NoError(t, err)
	assert.NotSame(t, h, other)
	again, err := reg.Hedge("payments", hedge.Config{})
	require.NoError(t, err)
	assert.Same(t, h, again, "one hedge per name")
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, uint64(1), h.Snapshot().Ran(), "the hedge ran (and was cancelled with the call)")
}
