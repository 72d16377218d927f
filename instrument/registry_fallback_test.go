package instrument

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

func TestRegistryFallback(t *testing.T) {
	r, err := NewRegistry()
	require.NoError(t, err)
	assert.Empty(t, r.Fallbacks())

	_, err = r.Fallback("prices", fallback.Config{On: []catalog.Cause{catalog.Cause(42)}})
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "prices", ce.Name)
	assert.Equal(t, "On[0]", ce.Field)

	f, err := r.Fallback("prices", fallback.Config{On: []catalog.Cause{catalog.CauseError}})
	require.NoError(t, err)
	f2, err := r.Fallback("prices", fallback.Config{})
	require.NoError(t, err)
	assert.Same(t, f, f2)
	assert.False(t, f2.Handles(catalog.CauseTimeout), "the first config wins")

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

	assert.Equal(t, uint64(2), f.Snapshot().Calls[catalog.CauseError])
	require.Len(t, got, 2)
	assert.Equal(t, "prices", got[0].Name)

	all := r.Fallbacks()
	require.Len(t, all, 1)
	assert.Same(t, f, all[0].Value)
}

// Named primitives from one registry compose by nesting their closure helpers: here a fallback
// around a bulkhead around a per-attempt timeout, all for the dependency "prices-api".
func ExampleRegistry_Fallback() {
	reg, err := NewRegistry()
	if err != nil {
		panic(err)
	}
	bh, err := reg.Bulkhead("prices-api", bulkhead.Config{MaxConcurrent: 10, MaxWait: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	to, err := reg.Timeout("prices-api", timeout.Config{Timeout: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	fb, err := reg.Fallback("prices-api", fallback.Config{
		On: []catalog.Cause{catalog.CauseBulkheadFull, catalog.CauseTimeout},
	})
	if err != nil {
		panic(err)
	}

	slowFetch := func(ctx context.Context) (float64, error) {
		<-ctx.Done() // the dependency hangs; the attempt's deadline ends it
		return 0, ctx.Err()
	}
	price, fromFallback, err := fallback.Call(context.Background(), fb,
		func(ctx context.Context) (float64, error) {
			return bulkhead.Call(ctx, bh, func(ctx context.Context) (float64, error) {
				return timeout.Call(ctx, to, slowFetch)
			})
		},
		func(_ context.Context, cause catalog.Cause, _ error) (float64, error) {
			fmt.Println("fallback cause:", cause)
			return 9.99, nil // last known price
		})
	fmt.Println(price, fromFallback, err)
	fmt.Println("timed out:", to.Snapshot().Calls[catalog.TimeoutTimedOut], "in flight:", bh.Snapshot().InFlight)
	// Output:
	// fallback cause: timeout
	// 9.99 true <nil>
	// timed out: 1 in flight: 0
}
