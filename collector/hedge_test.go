package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// TestHedgeExposition: two calls through a 50 ms hedge — one answered before the delay, one
// whose hedge won — give 2 calls, 1 hedge won, every other outcome at 0, and the delay.
func TestHedgeExposition(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	h, err := reg.Hedge("payments", hedge.Config{Delay: 50 * time.Millisecond, Idempotent: true, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, h.Do(ctx, func(context.Context) error { return nil }))

	attempts := make(chan struct{}, 2)
	done := make(chan error, 1)
	n := 0
	go func() {
		done <- h.Do(ctx, func(ctx context.Context) error {
			n++
			first := n == 1
			attempts <- struct{}{}
			if first { // stuck until the hedge wins
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
	}()
	<-attempts
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(50 * time.Millisecond)
	<-attempts
	require.NoError(t, <-done)

	c, err := New(reg)
	require.NoError(t, err)
	want := `
# HELP resilience_hedge_attempts_total Hedges (attempts started after the hedge delay, besides each call's first), by outcome; budget_denied hedges never ran.
# TYPE resilience_hedge_attempts_total counter
resilience_hedge_attempts_total{name="payments",outcome="budget_denied"} 0
resilience_hedge_attempts_total{name="payments",outcome="cancelled"} 0
resilience_hedge_attempts_total{name="payments",outcome="lost"} 0
resilience_hedge_attempts_total{name="payments",outcome="won"} 1
# HELP resilience_hedge_calls_total Calls made through the hedge.
# TYPE resilience_hedge_calls_total counter
resilience_hedge_calls_total{name="payments"} 2
# HELP resilience_hedge_delay_seconds Hedge delay in use; 0 while an adaptive hedge is warming up.
# TYPE resilience_hedge_delay_seconds gauge
resilience_hedge_delay_seconds{name="payments"} 0.05
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"resilience_hedge_attempts_total", "resilience_hedge_calls_total", "resilience_hedge_delay_seconds"))
}
