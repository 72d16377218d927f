package otelx

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument"
)

// epoch is where the tests' fake clocks start.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newRegistry(t testing.TB) *instrument.Registry {
	t.Helper()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	return reg
}
