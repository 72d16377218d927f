package collector

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

func TestTimeoutExposition(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	fake := clock.NewFake(waitEpoch)

	_, err = reg.Timeout("inventory", timeout.Config{Timeout: 800 * time.Millisecond})
	require.NoError(t, err)
	pay, err := reg.Timeout("payments", timeout.Config{Timeout: 600 * time.Millisecond, Clock: fake})
	require.NoError(t, err)

	ctx := context.Background()
	require.NoError(t, pay.Do(ctx, func(context.Context) error { return nil }))
	require.Error(t, pay.Do(ctx, func(context.Context) error { return errors.New("503") }))
	for range 2 {
		err = pay.Do(ctx, func(ctx context.Context) error {
			fake.Advance(600 * time.Millisecond)
			<-ctx.Done()
			return ctx.Err()
		})
		require.ErrorIs(t, err, timeout.ErrTimedOut)
	}

	want := `
# HELP resilience_timeout_calls_total Attempts run under a time limit, by outcome.
# TYPE resilience_timeout_calls_total counter
resilience_timeout_calls_total{kind="failed",name="inventory"} 0
resilience_timeout_calls_total{kind="failed",name="payments"} 1
resilience_timeout_calls_total{kind="successful",name="inventory"} 0
resilience_timeout_calls_total{kind="successful",name="payments"} 1
resilience_timeout_calls_total{kind="timed_out",name="inventory"} 0
resilience_timeout_calls_total{kind="timed_out",name="payments"} 2
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), catalog.TimeoutCalls.FullName(catalog.DefaultNamespace)))
	requireLintClean(t, c)
}
