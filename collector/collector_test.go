package collector

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument"
)

func TestNewValidates(t *testing.T) {
	_, err := New(nil)
	require.Error(t, err)
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	_, err = New(reg, WithNamespace("bad-ns"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"bad-ns"`)
	c, err := New(reg, WithNamespace("acme"))
	require.NoError(t, err)
	assert.Equal(t, "acme", c.Namespace())
}

func TestOverflowCounterStartsAtZeroForEveryPrimitive(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	c, err := New(reg)
	require.NoError(t, err)
	want := `
# HELP resilience_registry_overflow_total Names refused by the registry's cardinality guard; their calls share the _overflow instance.
# TYPE resilience_registry_overflow_total counter
resilience_registry_overflow_total{primitive="bulkhead"} 0
resilience_registry_overflow_total{primitive="circuitbreaker"} 0
resilience_registry_overflow_total{primitive="fallback"} 0
resilience_registry_overflow_total{primitive="limiter"} 0
resilience_registry_overflow_total{primitive="hedge"} 0
resilience_registry_overflow_total{primitive="retry"} 0
resilience_registry_overflow_total{primitive="throttle"} 0
resilience_registry_overflow_total{primitive="timeout"} 0
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "resilience_registry_overflow_total"))

	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	problems, err := testutil.GatherAndLint(pr)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
