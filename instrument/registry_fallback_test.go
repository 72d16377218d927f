package instrument

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
)

func TestRegistryFallback(t *testing.T) {
	r, err := NewRegistry()
	require.NoError(t, err)
	assert.Empty(t, r.Fallbacks())

	_, err = r.Fallback("prices", fallback.Config{On: []fallback.Cause{"nope"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `fallback "prices": On contains "nope"`)

	f, err := r.Fallback("prices", fallback.Config{On: []fallback.Cause{fallback.CauseError}})
	require.NoError(t, err)
	f2, err := r.Fallback("prices", fallback.Config{})
	require.NoError(t, err)
	assert.Same(t, f, f2)
	assert.False(t, f2.Handles(fallback.CauseTimeout), "the first config wins")

	var got []events.Fallback
	r.Events().Fallbacks.Add(func(e events.Fallback) { got = append(got, e) })
	// One registered fallback serves calls of any result type.
	s, fromFallback, err := fallback.Call(context.Background(), f,
		func(context.Context) (string, error) { return "", errors.New("down") }, fallback.Value("cached"))
	require.NoError(t, err)
	assert.True(t, fromFallback)
	assert.Equal(t, "cached", s)
	n, fromFallback, err := fallback.Call(context.Background(), f,
		func(context.Context) (int, error) { return 0, errors.New("down") }, fallback.Value(7))
	require.NoError(t, err)
	assert.True(t, fromFallback)
	assert.Equal(t, 7, n)

	assert.Equal(t, uint64(2), f.Stats().ByCause(fallback.CauseError))
	require.Len(t, got, 2)
	assert.Equal(t, "prices", got[0].Name)

	all := r.Fallbacks()
	require.Len(t, all, 1)
	assert.Same(t, f, all[0].Value)
}
