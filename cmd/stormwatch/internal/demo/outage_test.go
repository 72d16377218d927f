package demo

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// TestWithOutageStretchesTheFaultWindow: --outage moves the recovery of each one-shot scenario
// to that long after the fault began, and changes nothing else.
func TestWithOutageStretchesTheFaultWindow(t *testing.T) {
	for _, name := range OutageScenarios {
		t.Run(name, func(t *testing.T) {
			orig, err := LookupScenario(name)
			require.NoError(t, err)
			require.Contains(t, orig.Summary, "for 60s")
			sc, err := orig.WithOutage(9 * time.Minute)
			require.NoError(t, err)
			require.NoError(t, sc.validate())
			require.Len(t, sc.Phases, 3)
			assert.Equal(t, orig.Phases[:2], sc.Phases[:2], "healthy, then the same fault at the same time")
			assert.Equal(t, "recovered", sc.Phases[2].Name)
			assert.Equal(t, faultStart+9*time.Minute, sc.Phases[2].At)
			assert.Equal(t, faultEnd, orig.Phases[2].At, "the scenario it came from is unchanged")
			assert.Contains(t, sc.Summary, "for 9m0s")
			assert.NotContains(t, sc.Summary, "60s")
		})
	}
	for _, name := range []string{ScenarioSteady, ScenarioFlapping} {
		sc, err := LookupScenario(name)
		require.NoError(t, err)
		_, err = sc.WithOutage(time.Minute)
		var ue *UsageError
		require.ErrorAs(t, err, &ue, name)
		assert.Contains(t, err.Error(), "applies to outage|slow|rate-limited")
	}
	sc, err := LookupScenario(ScenarioOutage)
	require.NoError(t, err)
	for _, d := range []time.Duration{0, -time.Second} {
		_, err = sc.WithOutage(d)
		assert.ErrorContains(t, err, "--outage "+d.String()+": must be positive")
	}
	got, err := LookupScenario(ScenarioOutage)
	require.NoError(t, err)
	assert.Equal(t, faultEnd, got.Phases[2].At, "the default scenarios keep their 60s")
}

// TestLongOutageHoldsUntilItsEnd runs the outage script with a 9-minute outage on a fake
// clock: the faults stay until 9m15s, then recover.
func TestLongOutageHoldsUntilItsEnd(t *testing.T) {
	clk := clock.NewFake(epoch)
	sc, err := LookupScenario(ScenarioOutage)
	require.NoError(t, err)
	sc, err = sc.WithOutage(9 * time.Minute)
	require.NoError(t, err)
	down := NewDownstream(clk, nil, 1, Dependencies...)
	out := newPrinted()
	b := &board{out: out}
	var phase atomic.Pointer[string]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); runScript(ctx, clk, sc, down, 1, epoch, &phase, b) }()

	require.True(t, clk.WaitForTimers(1, done))
	clk.Advance(faultStart)
	assert.Equal(t, "t=15s: payments down, inventory flaky, recommendations slow", out.next(t, "t="))
	require.True(t, clk.WaitForTimers(1, done))
	clk.Advance(9*time.Minute - time.Millisecond)
	require.True(t, clk.WaitForTimers(1, done))
	assert.Equal(t, sc.Phases[1].Faults[Payments], down.Fault(Payments), "still down 1ms before the end")
	clk.Advance(time.Millisecond)
	assert.Equal(t, "t=9m15s: recovered", out.next(t, "t="))
	assert.Equal(t, Steady, down.Fault(Payments))
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("the script did not end after its last phase")
	}
}

// TestRunAppliesTheOutageLength: Config.Outage reaches the script Run plays (its summary says so).
func TestRunAppliesTheOutageLength(t *testing.T) {
	var stdout syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	err := Run(ctx, Config{Listen: "127.0.0.1:0", Scenario: ScenarioOutage, Outage: 9 * time.Minute, Transport: hanging(),
		Clock: clock.NewFake(epoch), Stdout: &stdout, Ready: func(string) { cancel() }})
	require.NoError(t, err)
	assert.Contains(t, stdout.String(), "payments goes down (503s, resets, hangs) for 9m0s:")
}
