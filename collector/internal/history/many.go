package history

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// ManyNames returns a new registry of 1,000 breakers named dependency-0000 to dependency-0999,
// every tenth with a retry and a bulkhead of the same name, each primitive with one successful
// call recorded (default configurations, wall clock): the registry the scrape benchmarks of
// the collector and of the OpenTelemetry bridge gather.
func ManyNames(tb testing.TB) *instrument.Registry {
	tb.Helper()
	reg, err := instrument.NewRegistry()
	require.NoError(tb, err)
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	for i := range 1000 {
		name := fmt.Sprintf("dependency-%04d", i)
		br, err := reg.Breaker(name, breaker.Config{})
		require.NoError(tb, err)
		require.NoError(tb, br.Do(ctx, ok))
		if i%10 != 0 {
			continue
		}
		r, err := reg.Retry(name, retry.Config{})
		require.NoError(tb, err)
		require.NoError(tb, r.Do(ctx, ok))
		bh, err := reg.Bulkhead(name, bulkhead.Config{})
		require.NoError(tb, err)
		require.NoError(tb, bh.Do(ctx, ok))
	}
	return reg
}
