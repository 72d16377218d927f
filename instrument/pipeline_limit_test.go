package instrument

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

func limitedPipeline(t *testing.T, th *throttle.Config) *Pipeline {
	t.Helper()
	reg, err := NewRegistry()
	require.NoError(t, err)
	p, err := reg.Pipeline("payments", PipelineConfig{
		Retry:    &retry.Config{MaxAttempts: 3, RetryIf: func(error, classify.Verdict) bool { return true }},
		Breaker:  &breaker.Config{},
		Limit:    &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1},
		Throttle: th,
	})
	require.NoError(t, err)
	return p
}

// A limiter rejection is never retried (even by a RetryIf that says "retry everything") and is
// never a breaker failure; a fallback answering bulkhead_full answers it.
func TestPipelineNeverRetriesTheLimitersRejection(t *testing.T) {
	p := limitedPipeline(t, nil)
	held, err := p.Limiter().Acquire(context.Background()) // the only permit
	require.NoError(t, err)
	defer held.Done(context.Canceled)
	calls := 0
	var gotCause catalog.Cause
	fromFallback, err := p.DoWithFallback(context.Background(),
		func(context.Context) error { calls++; return nil },
		func(_ context.Context, cause catalog.Cause, err error) error { gotCause = cause; return err })
	require.ErrorIs(t, err, limit.ErrLimited)
	assert.False(t, fromFallback, "no fallback layer configured")
	assert.Zero(t, calls)
	assert.Zero(t, gotCause)
	assert.Equal(t, uint64(0), p.Retry().Snapshot().Retries, "no retry of a limiter rejection")
	snap := p.Breaker().Snapshot()
	assert.Equal(t, uint64(1), snap.Calls[catalog.CallIgnored], "a limiter rejection is not a breaker failure")
	assert.Equal(t, uint64(0), snap.Calls[catalog.CallFailed])
	assert.Equal(t, uint64(1), p.Limiter().Snapshot().Rejections[catalog.ReasonLimit])
}

// Each attempt takes its own permit and gives it back before the backoff: a failed attempt and a
// successful retry leave nothing in flight, and the limiter saw two samples (no drop: the error
// was an ordinary one).
func TestPipelineLimiterPermitPerAttempt(t *testing.T) {
	p := limitedPipeline(t, nil)
	n := 0
	err := p.Do(context.Background(), func(context.Context) error {
		n++
		assert.Equal(t, 1, p.Limiter().Snapshot().InFlight, "attempt %d runs under a permit", n)
		if n < 2 {
			return errBoom
		}
		return nil
	})
	require.NoError(t, err)
	sn := p.Limiter().Snapshot()
	assert.Equal(t, 0, sn.InFlight)
	assert.Equal(t, [catalog.NumSampleKinds]uint64{2, 0, 0}, sn.Samples)
	assert.Equal(t, uint64(2), sn.Calls[catalog.AdmissionPermitted])
}

// An attempt stopped by the Timeout layer reaches the limiter as a drop.
func TestPipelineTimeoutIsALimiterDrop(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	clk := clock.NewFake(time.Now())
	p, err := reg.Pipeline("payments", PipelineConfig{
		Limit:   &limit.Config{Clock: clk},
		Timeout: &timeout.Config{Timeout: time.Second, Clock: clk},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- p.Do(context.Background(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	}()
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(time.Second)
	require.ErrorIs(t, <-done, timeout.ErrTimedOut)
	assert.Equal(t, [catalog.NumSampleKinds]uint64{0, 1, 0}, p.Limiter().Snapshot().Samples)
}

// A request the throttle sheds gives its limiter permit back and is not retried.
func TestPipelineThrottleShedsWithoutHoldingAPermit(t *testing.T) {
	p := limitedPipeline(t, &throttle.Config{Rand: zeroRand{}})
	refusals := 0
	for i := 0; i < 5; i++ {
		_ = p.Do(context.Background(), func(context.Context) error {
			refusals++
			return statusErr(503)
		})
	}
	// The first attempt is sent (p = 0) and refused; after that nothing is accepted, p > 0 and
	// the draw 0 sheds every later attempt: the first call's retry and the four other calls —
	// and a shed attempt is never retried.
	assert.Equal(t, 1, refusals)
	ts := p.Throttle().Snapshot()
	assert.Equal(t, uint64(5), ts.Calls[catalog.ThrottleThrottled])
	assert.Equal(t, uint64(1), p.Retry().Snapshot().Retries)
	assert.Equal(t, uint64(1), ts.Calls[catalog.ThrottleRefused])
	ls := p.Limiter().Snapshot()
	assert.Equal(t, 0, ls.InFlight)
	assert.Equal(t, [catalog.NumSampleKinds]uint64{0, 1, 5}, ls.Samples, "the 503 is a drop, the shed requests are ignored")
}

type zeroRand struct{}

func (zeroRand) Float64() float64 { return 0 }
