package instrument

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

func TestWithIdleTTLRefusesANonPositiveTTL(t *testing.T) {
	for _, ttl := range []time.Duration{0, -time.Second} {
		_, err := NewRegistry(WithIdleTTL(ttl, nil))
		var ce *catalog.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "IdleTTL", ce.Field)
		assert.Equal(t, ttl, ce.Value)
	}
}

func TestIdleEvictionIsOffByDefault(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	_, err = reg.Breaker("a", breaker.Config{})
	require.NoError(t, err)
	assert.Zero(t, reg.IdleTTL())
	assert.Zero(t, reg.EvictIdle())
	assert.Len(t, reg.Breakers(), 1)
	assert.Zero(t, reg.Evictions())
}

// TestIdleEvictionOfEveryKind checks, kind by kind, that an idle primitive goes after the TTL
// (not before), that use or a lookup keeps it, and that what must stay stays: a breaker not
// closed or holding a failure, a bulkhead with a call in flight.
func TestIdleEvictionOfEveryKind(t *testing.T) {
	const ttl = 10 * time.Minute
	clk := clock.NewFake(time.Unix(1e9, 0))
	reg, err := NewRegistry(WithIdleTTL(ttl, clk))
	require.NoError(t, err)
	ctx := context.Background()
	bcfg := breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 2, Clock: clk}

	idle, err := reg.Breaker("idle", bcfg)
	require.NoError(t, err)
	require.NoError(t, idle.Do(ctx, func(context.Context) error { return nil }))
	open, _ := reg.Breaker("open", bcfg)
	for range 2 {
		_ = open.Do(ctx, func(context.Context) error { return errors.New("down") })
	}
	require.Equal(t, catalog.StateOpen, open.State())
	failing, _ := reg.Breaker("failing", bcfg)
	_ = failing.Do(ctx, func(context.Context) error { return errors.New("down") })
	busy, _ := reg.Bulkhead("busy", bulkhead.Config{MaxConcurrent: 1})
	release, err := busy.Acquire(ctx)
	require.NoError(t, err)
	_, _ = reg.Bulkhead("free", bulkhead.Config{MaxConcurrent: 1})
	r, _ := reg.Retry("r", retry.Config{})
	require.NoError(t, r.Do(ctx, func(context.Context) error { return nil }))
	to, _ := reg.Timeout("t", timeout.Config{})
	require.NoError(t, to.Do(ctx, func(context.Context) error { return nil }))
	fb, _ := reg.Fallback("f", fallback.Config{})
	_ = fb
	used, _ := reg.Breaker("used", bcfg)
	_, _ = reg.Breaker("looked-up", bcfg)

	assert.Zero(t, reg.EvictIdle(), "nothing is idle for a TTL yet")
	for i := range 4 { // a TTL in quarters: "used" is called and "looked-up" looked up in each
		clk.Advance(ttl / 4)
		require.NoError(t, used.Do(ctx, func(context.Context) error { return nil }))
		_, _ = reg.Breaker("looked-up", bcfg)
		reg.EvictIdle()
		if i < 3 {
			require.Len(t, reg.Retries(), 1, "evicted before the TTL")
			require.Len(t, reg.Breakers(), 5, "evicted before the TTL")
		}
	}
	// One more quarter: a TTL has passed since every primitive last moved.
	clk.Advance(ttl / 4)
	reg.EvictIdle()
	names := func(list []string) []string { return list }
	var got []string
	for _, n := range reg.Breakers() {
		got = append(got, n.Name)
	}
	assert.Equal(t, names([]string{"failing", "looked-up", "open", "used"}), got)
	require.Len(t, reg.Bulkheads(), 1)
	assert.Equal(t, "busy", reg.Bulkheads()[0].Name, "a bulkhead with a call in flight stays")
	assert.Empty(t, reg.Retries())
	assert.Empty(t, reg.Timeouts())
	assert.Empty(t, reg.Fallbacks())
	assert.Equal(t, uint64(1), reg.Evicted(catalog.CircuitBreaker))
	assert.Equal(t, uint64(1), reg.Evicted(catalog.Bulkhead))
	assert.Equal(t, uint64(1), reg.Evicted(catalog.Retry))
	assert.Equal(t, uint64(5), reg.Evictions())

	// The busy bulkhead's call ends: a TTL later it goes too.
	release.Done()
	clk.Advance(ttl)
	reg.EvictIdle()
	clk.Advance(ttl / 4)
	reg.EvictIdle()
	assert.Empty(t, reg.Bulkheads())

	// A re-created name is a fresh primitive.
	again, err := reg.Breaker("idle", bcfg)
	require.NoError(t, err)
	assert.NotSame(t, idle, again)
	sn := again.Snapshot()
	assert.Equal(t, catalog.StateClosed, sn.State)
	assert.Zero(t, sn.Calls[catalog.CallSuccessful])
}

// TestIdleEvictionRunsLazily checks that without EvictIdle a sweep runs when a name is
// created or the primitives are listed, at most once per TTL/SweepDivisor.
func TestIdleEvictionRunsLazily(t *testing.T) {
	const ttl = time.Minute
	clk := clock.NewFake(time.Unix(1e9, 0))
	reg, err := NewRegistry(WithIdleTTL(ttl, clk))
	require.NoError(t, err)
	_, _ = reg.Timeout("old", timeout.Config{})
	reg.Timeouts() // the first sweep: marks "old" as seen now
	clk.Advance(ttl + ttl/SweepDivisor)
	assert.Len(t, reg.Timeouts(), 0, "listing swept")
	_, _ = reg.Timeout("old", timeout.Config{})
	clk.Advance(ttl + ttl/SweepDivisor)
	_, _ = reg.Timeout("new", timeout.Config{})
	got := reg.Timeouts()
	require.Len(t, got, 1, "creating a name swept")
	assert.Equal(t, "new", got[0].Name)
}

// TestIdleEvictionFreesNamesUnderTheGuard: evicted names no longer count against MaxNames.
func TestIdleEvictionFreesNamesUnderTheGuard(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	reg, err := NewRegistry(WithIdleTTL(time.Minute, clk), WithMaxNames(1))
	require.NoError(t, err)
	_, _ = reg.Timeout("a", timeout.Config{})
	clk.Advance(2 * time.Minute)
	reg.EvictIdle()
	b, err := reg.Timeout("b", timeout.Config{})
	require.NoError(t, err)
	assert.Equal(t, "b", b.Name())
	assert.Zero(t, reg.OverflowCount(catalog.Timeout))
}
