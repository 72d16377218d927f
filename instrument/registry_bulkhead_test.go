package instrument

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
)

func TestRegistryBulkhead(t *testing.T) {
	r, err := NewRegistry(WithMaxNames(2))
	require.NoError(t, err)
	assert.Empty(t, r.Bulkheads())

	_, err = r.Bulkhead("payments", bulkhead.Config{MaxConcurrent: -1})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "MaxConcurrent", ce.Field)
	assert.Equal(t, -1, ce.Value)
	assert.Empty(t, r.Bulkheads(), "a failed creation registers nothing")

	p, err := r.Bulkhead("payments", bulkhead.Config{MaxConcurrent: 30, MaxWait: 200 * time.Millisecond})
	require.NoError(t, err)
	p2, err := r.Bulkhead("payments", bulkhead.Config{MaxConcurrent: 1})
	require.NoError(t, err)
	assert.Same(t, p, p2, "one bulkhead per name; the first config wins")
	assert.Equal(t, 30, p2.Config().MaxConcurrent)

	inv, err := r.Bulkhead("inventory", bulkhead.Config{MaxConcurrent: 20})
	require.NoError(t, err)
	over, err := r.Bulkhead("risk", bulkhead.Config{MaxConcurrent: 15})
	require.NoError(t, err)
	assert.Equal(t, catalog.OverflowName, over.Name())
	assert.Equal(t, uint64(1), r.OverflowCount(catalog.Bulkhead))

	all := r.Bulkheads()
	require.Len(t, all, 3)
	assert.Equal(t, []string{catalog.OverflowName, "inventory", "payments"}, []string{all[0].Name, all[1].Name, all[2].Name})
	assert.Same(t, inv, all[1].Value)

	// The registry's hub receives the bulkhead's rejections.
	var rejections []events.Rejection
	r.Events().Rejections.Add(func(e events.Rejection) { rejections = append(rejections, e) })
	one, err := r.Bulkhead("_overflow", bulkhead.Config{MaxConcurrent: 1})
	require.NoError(t, err)
	assert.Same(t, over, one)
	release, err := inv.Acquire(context.Background())
	require.NoError(t, err)
	defer release.Done()
	for range 19 {
		_, err := inv.Acquire(context.Background())
		require.NoError(t, err)
	}
	_, err = inv.Acquire(context.Background())
	require.ErrorIs(t, err, bulkhead.ErrFull)
	require.Len(t, rejections, 1)
	assert.Equal(t, "inventory", rejections[0].Name)
	assert.Equal(t, catalog.Bulkhead, rejections[0].Primitive)
}
