package httpx

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// TestHedgingIsRefusedUntilSupported: the transport's per-request state is not safe for
// concurrent attempts, so a pipeline with a hedge layer is a configuration error, never a race.
func TestHedgingIsRefusedUntilSupported(t *testing.T) {
	_, err := NewTransport(http.DefaultTransport, WithPipeline(instrument.PipelineConfig{Hedge: &hedge.Config{}}))
	var ce *catalog.ConfigError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "Hedge", ce.Value)
}
