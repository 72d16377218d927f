package ticks

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnabledWhereTheKernelUsesTheCounter(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		assert.False(t, Enabled())
		return
	}
	if !supported() {
		assert.False(t, Enabled(), "another clocksource: the monotonic clock is used")
		return
	}
	require.True(t, Enabled(), "clocksource tsc: calibrated")
	assert.Greater(t, nsPerTick, 0.05)
	assert.Less(t, nsPerTick, 20.0)
}

// A duration measured with the counter agrees with the monotonic clock's.
func TestDurationAgreesWithTheMonotonicClock(t *testing.T) {
	if !Enabled() {
		t.Skip("the time-stamp counter is not used on this machine")
	}
	for range 3 {
		t0, m0 := Now(), time.Now()
		for time.Since(m0) < 5*time.Millisecond {
		}
		d, m := Duration(t0, Now()), time.Since(m0)
		// The two reads are not simultaneous (a preemption between them widens the gap): the
		// agreement asserted is 1 % or 20 µs, whichever is larger.
		assert.InDelta(t, float64(m), float64(d), max(0.01*float64(m), 20e3), "counter %v, monotonic %v", d, m)
	}
	assert.Zero(t, Duration(10, 5), "a reversed pair is no time")
	assert.Zero(t, Duration(7, 7))
}
