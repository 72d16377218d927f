package fallback

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// TestStormwatchErrorsCarryTheirCause checks the FallbackCause contract against the breaker's and
// the retry's real errors (the bulkhead's and the timeout's are covered by TestDefaultClassify).
func TestStormwatchErrorsCarryTheirCause(t *testing.T) {
	open := &breaker.OpenError{Name: "prices", State: catalog.StateOpen, Remaining: time.Second}
	assert.Equal(t, catalog.CauseCircuitOpen, DefaultClassify(open))
	assert.Equal(t, catalog.CauseCircuitOpen, DefaultClassify(fmt.Errorf("get: %w", open)))

	fake := clock.NewFake(epoch)
	cfg := retry.Config{}
	cfg.MaxAttempts = 2
	cfg.Clock = fake
	cfg.DisableBudget = true
	r, err := retry.New("prices", cfg)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		errc <- r.Do(context.Background(), func(context.Context) error { return errors.New("connection closed") })
	}()
	require.True(t, fake.WaitForTimers(1, nil), "the retry waits before its second attempt")
	fake.Advance(time.Minute)
	exhausted := <-errc
	require.Error(t, exhausted)
	assert.Equal(t, catalog.CauseRetriesExhausted, DefaultClassify(exhausted))
}
