package collector

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
)

func TestFallbackExposition(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)

	_, err = reg.Fallback("inventory", fallback.Config{})
	require.NoError(t, err)
	prices, err := reg.Fallback("prices", fallback.Config{})
	require.NoError(t, err)
	ctx := context.Background()
	for _, callErr := range []error{
		&bulkhead.FullError{Name: "prices", MaxConcurrent: 1},
		&bulkhead.FullError{Name: "prices", MaxConcurrent: 1},
		errors.New("500"),
	} {
		_, fromFallback, err := fallback.Call(ctx, prices,
			func(context.Context) (int, error) { return 0, callErr }, fallback.Value(1))
		require.NoError(t, err)
		require.True(t, fromFallback)
	}

	want := `
# HELP resilience_fallback_calls_total Fallback invocations, by cause.
# TYPE resilience_fallback_calls_total counter
resilience_fallback_calls_total{cause="bulkhead_full",name="inventory"} 0
resilience_fallback_calls_total{cause="bulkhead_full",name="prices"} 2
resilience_fallback_calls_total{cause="circuit_open",name="inventory"} 0
resilience_fallback_calls_total{cause="circuit_open",name="prices"} 0
resilience_fallback_calls_total{cause="error",name="inventory"} 0
resilience_fallback_calls_total{cause="error",name="prices"} 1
resilience_fallback_calls_total{cause="retries_exhausted",name="inventory"} 0
resilience_fallback_calls_total{cause="retries_exhausted",name="prices"} 0
resilience_fallback_calls_total{cause="timeout",name="inventory"} 0
resilience_fallback_calls_total{cause="timeout",name="prices"} 0
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), catalog.FallbackCalls.FullName(catalog.DefaultNamespace)))
	requireLintClean(t, c)
}
