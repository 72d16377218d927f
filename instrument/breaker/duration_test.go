package breaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// On the wall clock a call's duration is measured on the monotonic clock: the histogram and
// slow-call detection see the same durations. The call spins for 2 ms; its measured duration
// must lie between that and the time measured around the whole call.
func TestWallClockDurations(t *testing.T) {
	b, err := New("api", Config{SlowCallDuration: time.Millisecond})
	require.NoError(t, err)
	const spin = 2 * time.Millisecond
	busy := func(context.Context) error {
		for t0 := time.Now(); time.Since(t0) < spin; {
		}
		return nil
	}
	outer := time.Now()
	require.NoError(t, b.Do(context.Background(), busy))
	require.Error(t, b.Do(context.Background(), func(ctx context.Context) error { _ = busy(ctx); return errors.New("boom") }))
	require.NoError(t, b.Do(context.Background(), func(context.Context) error { return nil }))
	around := time.Since(outer)

	sn := b.Snapshot()
	ok, failed := sn.Durations[catalog.CallSuccessful], sn.Durations[catalog.CallFailed]
	assert.Equal(t, uint64(2), ok.Count)
	assert.Equal(t, uint64(1), failed.Count)
	assert.GreaterOrEqual(t, ok.Sum, 0.99*spin.Seconds(), "the spinning call took at least 2 ms")
	assert.GreaterOrEqual(t, failed.Sum, 0.99*spin.Seconds())
	assert.LessOrEqual(t, ok.Sum+failed.Sum, 1.01*around.Seconds(), "no call took longer than all of them")
	assert.Equal(t, uint64(1), sn.Calls[catalog.CallSlowSuccessful], "slow-call detection uses the same duration")
	assert.Equal(t, uint64(1), sn.Calls[catalog.CallSlowFailed])
	assert.Equal(t, uint64(1), sn.Calls[catalog.CallSuccessful], "the fast call")
}
