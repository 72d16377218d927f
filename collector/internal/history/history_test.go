package history

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// TestMain fails the package's tests if any goroutine they started is still running at the end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// names returns the names of a registry's primitives.
func names[T any](all []instrument.Named[T]) []string {
	out := make([]string, 0, len(all))
	for _, n := range all {
		out = append(out, n.Name)
	}
	return out
}

func TestEveryPathKeepsToTheOneDependency(t *testing.T) {
	h := New(t)
	h.EveryPath() // checks that every path ran
	reg := h.Registry()
	assert.Equal(t, []string{Dependency}, names(reg.Breakers()))
	assert.Equal(t, []string{Dependency}, names(reg.Retries()))
	assert.Equal(t, []string{Dependency}, names(reg.Bulkheads()))
	assert.Equal(t, []string{Dependency}, names(reg.Timeouts()))
	assert.Equal(t, []string{Dependency}, names(reg.Fallbacks()))
	assert.Zero(t, reg.OverflowCount(catalog.CircuitBreaker))
	assert.Equal(t, catalog.StateClosed, h.Pipeline().Breaker().State())
	assert.True(t, h.Clock().Now().After(epoch), "the script moved the fake clock")
}

func TestEveryPathWithMoreNames(t *testing.T) {
	h := New(t, WithMoreNames())
	h.EveryPath()
	reg := h.Registry()
	assert.Equal(t, MaxNames, reg.MaxNames())
	assert.Equal(t, []string{catalog.OverflowName, "extra-1", Second, Dependency}, names(reg.Breakers()))
	assert.Equal(t, []string{Second, Dependency}, names(reg.Retries()))
	assert.Equal(t, uint64(2), reg.OverflowCount(catalog.CircuitBreaker), "extra-2 and extra-3")
	for _, b := range reg.Breakers() {
		if b.Name == Second {
			assert.Equal(t, catalog.StateForcedOpen, b.Value.State())
		}
	}
	assert.Equal(t, catalog.StateClosed, h.Pipeline().Breaker().State())
}

func TestManyNames(t *testing.T) {
	reg := ManyNames(t)
	require.Len(t, reg.Breakers(), 1000)
	require.Len(t, reg.Retries(), 100)
	require.Len(t, reg.Bulkheads(), 100)
	assert.Equal(t, "dependency-0000", reg.Breakers()[0].Name)
	assert.Equal(t, "dependency-0999", reg.Breakers()[999].Name)
	assert.Equal(t, "dependency-0990", reg.Retries()[99].Name)
	for _, b := range reg.Breakers() {
		require.Equal(t, uint64(1), b.Value.Snapshot().Calls[catalog.CallSuccessful], b.Name)
	}
}
