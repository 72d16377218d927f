package instrument

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

func TestRegistryRetryGetOrCreateSharesTheBudget(t *testing.T) {
	reg, err := NewRegistry(WithMaxNames(2))
	require.NoError(t, err)
	cfg := retry.Config{}
	cfg.Budget = retry.BudgetConfig{DisableFloor: true}
	a, err := reg.Retry("payments", cfg)
	require.NoError(t, err)
	a2, err := reg.Retry("payments", retry.Config{}) // cfg ignored for an existing name
	require.NoError(t, err)
	assert.Same(t, a, a2, "one retry, and so one budget, per name")

	// Ten first attempts through one handle fund a retry through the other.
	for range 10 {
		require.NoError(t, a.Do(context.Background(), func(context.Context) error { return nil }))
	}
	assert.Equal(t, 1, a2.Snapshot().BudgetTokens)

	_, err = reg.Retry("orders", retry.Config{MaxAttempts: -1})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "MaxAttempts", ce.Field)
	_, err = reg.Retry("orders", cfg)
	require.NoError(t, err)
	ov, err := reg.Retry("inventory", cfg)
	require.NoError(t, err)
	assert.Equal(t, catalog.OverflowName, ov.Name())
	assert.Equal(t, uint64(1), reg.OverflowCount(catalog.Retry))

	var names []string
	for _, n := range reg.Retries() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{catalog.OverflowName, "orders", "payments"}, names)
}

func TestRegistryRetryEmitsToTheRegistryHub(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	var got []events.Retry
	reg.Events().Retries.Add(func(e events.Retry) { got = append(got, e) })
	cfg := retry.Config{}
	cfg.MaxAttempts = 1
	cfg.Events = new(events.Hub) // replaced by the registry's hub
	r, err := reg.Retry("payments", cfg)
	require.NoError(t, err)
	_ = r.Do(context.Background(), func(context.Context) error { return errors.New("x") })
	cfg.MaxAttempts = 2
	cfg.Backoff = retry.Backoff{Strategy: retry.None}
	r2, err := reg.Retry("orders", cfg)
	require.NoError(t, err)
	_ = r2.Do(context.Background(), func(context.Context) error { return errors.New("x") })
	require.Len(t, got, 2)
	assert.Equal(t, "orders", got[0].Name)
	assert.Equal(t, catalog.OutcomeRetrying, got[0].Outcome)
	assert.Equal(t, catalog.OutcomeGaveUp, got[1].Outcome)
}

// One retry per dependency, shared by name: every caller of "payments-api" draws on one budget.
func ExampleRegistry_Retry() {
	reg, _ := NewRegistry()
	cfg := retry.Config{}
	cfg.Backoff = retry.Backoff{Strategy: retry.None}
	r, _ := reg.Retry("payments-api", cfg)
	same, _ := reg.Retry("payments-api", retry.Config{})
	calls := 0
	err := r.Do(context.Background(), func(context.Context) error {
		calls++
		if calls == 1 {
			return errors.New("connection reset")
		}
		return nil
	})
	fmt.Println(err, calls, r == same, len(reg.Retries()))
	// Output: <nil> 2 true 1
}
