package otelx

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument"
)

func newRegistry(t testing.TB) *instrument.Registry {
	t.Helper()
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	return reg
}
