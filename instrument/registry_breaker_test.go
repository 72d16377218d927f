package instrument

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

func TestRegistryBreakerGetOrCreate(t *testing.T) {
	reg, err := NewRegistry(WithMaxNames(2))
	require.NoError(t, err)
	a, err := reg.Breaker("payments", breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1})
	require.NoError(t, err)
	a2, err := reg.Breaker("payments", breaker.Config{}) // cfg ignored for an existing name
	require.NoError(t, err)
	assert.Same(t, a, a2)
	assert.Equal(t, breaker.ConsecutiveFailures, a2.Config().Window)

	_, err = reg.Breaker("orders", breaker.Config{WindowSize: -1})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "WindowSize", ce.Field)
	_, err = reg.Breaker("orders", breaker.Config{})
	require.NoError(t, err)
	ov, err := reg.Breaker("inventory", breaker.Config{})
	require.NoError(t, err)
	assert.Equal(t, catalog.OverflowName, ov.Name())
	assert.Equal(t, uint64(1), reg.OverflowCount(catalog.CircuitBreaker))

	var names []string
	for _, n := range reg.Breakers() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{catalog.OverflowName, "orders", "payments"}, names)
}

func TestRegistryBreakerEmitsToTheRegistryHub(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	var got []events.Transition
	reg.Events().Transitions.Add(func(e events.Transition) { got = append(got, e) })
	b, err := reg.Breaker("payments", breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1})
	require.NoError(t, err)
	_ = b.Do(context.Background(), func(context.Context) error { return errors.New("down") })
	require.Len(t, got, 1)
	assert.Equal(t, "payments", got[0].Name)
	assert.Equal(t, catalog.StateClosed, got[0].From)
	assert.Equal(t, catalog.StateOpen, got[0].To)
	assert.Equal(t, catalog.TripConsecutiveFailures, got[0].Cause)

	own := new(events.Hub)
	var mine int
	own.Transitions.Add(func(events.Transition) { mine++ })
	b2, err := reg.Breaker("orders", breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1, Events: own})
	require.NoError(t, err)
	_ = b2.Do(context.Background(), func(context.Context) error { return errors.New("down") })
	assert.Equal(t, 1, mine, "an explicit hub is kept")
	assert.Len(t, got, 1)
}
