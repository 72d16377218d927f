package instrument

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

func TestRegistryTimeout(t *testing.T) {
	r, err := NewRegistry(WithMaxNames(1))
	require.NoError(t, err)
	assert.Empty(t, r.Timeouts())

	_, err = r.Timeout("payments", timeout.Config{Timeout: -time.Second})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Timeout", ce.Field)
	assert.Equal(t, -time.Second, ce.Value)

	p, err := r.Timeout("payments", timeout.Config{Timeout: 600 * time.Millisecond})
	require.NoError(t, err)
	p2, err := r.Timeout("payments", timeout.Config{Timeout: time.Hour})
	require.NoError(t, err)
	assert.Same(t, p, p2)
	assert.Equal(t, 600*time.Millisecond, p2.Config().Timeout)

	over, err := r.Timeout("inventory", timeout.Config{Timeout: 800 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, catalog.OverflowName, over.Name())
	assert.Equal(t, uint64(1), r.OverflowCount(catalog.Timeout))

	all := r.Timeouts()
	require.Len(t, all, 2)
	assert.Equal(t, catalog.OverflowName, all[0].Name)
	assert.Equal(t, "payments", all[1].Name)
	assert.Same(t, p, all[1].Value)
}
