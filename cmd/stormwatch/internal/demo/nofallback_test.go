package demo

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// failing answers every request 503.
func failing() *scripted {
	s := hanging()
	s.answer = func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader("down")), Request: r}, nil
	}
	return s
}

// TestNoFallbackFailsTheCaller: a dependency built with NoFallback has no fallback primitive, so
// a failed call reaches the caller as an error and the retry counts it failed; with its fallback,
// the same failure is answered with the degraded answer and counted as a fallback.
func TestNoFallbackFailsTheCaller(t *testing.T) {
	for _, noFallback := range []bool{false, true} {
		reg, err := instrument.NewRegistry()
		require.NoError(t, err)
		p := DefaultProfiles()[Payments]
		p.MaxAttempts, p.NoFallback = 2, noFallback
		clk := clock.NewFake(epoch)
		d, err := newDependency(reg, Payments, "http://downstream.invalid/payments", failing(), p, 1, clk)
		require.NoError(t, err)
		var answer string
		var fromFallback bool
		done := make(chan struct{})
		go func() { defer close(done); answer, fromFallback, err = d.Call(context.Background()) }()
		// The backoff (at most 100ms) passes on the fake clock, 10ms per round, until the call
		// has ended (bounded by guard).
		for deadline := time.Now().Add(guard); ; clk.Advance(10 * time.Millisecond) {
			select {
			case <-done:
			case <-time.After(time.Millisecond):
				require.True(t, time.Now().Before(deadline), "the call did not end")
				continue
			}
			break
		}
		rs := instrumentRetry(t, reg, Payments).Snapshot()
		assert.Equal(t, uint64(1), rs.Calls[catalog.RetryFailedWithRetry], "noFallback=%v: the retry's outcome is a failure either way", noFallback)
		if noFallback {
			require.ErrorContains(t, err, "payments: 503 Service Unavailable")
			assert.False(t, fromFallback)
			assert.Empty(t, reg.Fallbacks(), "no fallback primitive, so no fallback series")
			assert.Nil(t, d.fb)
			assert.Zero(t, d.counts().fallbacks, "the status line shows no fallbacks")
			continue
		}
		require.NoError(t, err)
		assert.True(t, fromFallback)
		assert.Equal(t, "payment pending (check later)", answer)
		assert.Equal(t, uint64(1), d.counts().fallbacks)
	}
}

// TestNoFallbackReachesEveryDependency: Config.NoFallback applies to every dependency's
// profile, and is refused (naming the flag) for the retry-storm replay, which it would not change.
func TestNoFallbackReachesEveryDependency(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	sc, err := LookupScenario(ScenarioOutage)
	require.NoError(t, err)
	deps, err := newDependencies(Config{NoFallback: true, Speed: 1, Profiles: DefaultProfiles(), Clock: clock.NewFake(epoch)},
		sc, reg, "http://downstream.invalid", failing())
	require.NoError(t, err)
	require.Len(t, deps, len(Dependencies))
	for _, d := range deps {
		assert.Nil(t, d.fb, d.name)
	}
	assert.Empty(t, reg.Fallbacks())

	err = Config{Scenario: ScenarioRetryStorm, NoFallback: true}.Validate()
	var ue *UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "--no-fallback")
	assert.NoError(t, Config{Scenario: ScenarioOutage, NoFallback: true}.Validate())
}
