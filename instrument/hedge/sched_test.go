package hedge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// TestEachCallIsHedgedAtItsOwnDelay: calls that overlap share the hedge's one scheduler timer,
// and each is hedged exactly its delay after it started — not when another call was due — and a
// call that answered in time never is.
func TestEachCallIsHedgedAtItsOwnDelay(t *testing.T) {
	h, clk := newHedge(t, hedge10ms())
	gate := make(chan struct{})
	a := newScript(blockUntilCancelled, answer("a2")) // starts at 0 ms, straggles
	b := newScript(gated(gate, "b", nil))             // starts at 3 ms, answers at 7 ms
	c := newScript(blockUntilCancelled, answer("c2")) // starts at 6 ms, straggles
	resA := callAsync(context.Background(), h, a)
	<-a.started
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(3 * time.Millisecond)
	resB := callAsync(context.Background(), h, b)
	<-b.started
	clk.Advance(3 * time.Millisecond)
	resC := callAsync(context.Background(), h, c)
	<-c.started
	assert.Equal(t, 1, clk.Timers(), "one timer for the three calls")
	clk.Advance(time.Millisecond)
	close(gate)
	assert.Equal(t, "b", (<-resB).v)

	clk.Advance(3*time.Millisecond - time.Nanosecond) // 10 ms - 1 ns: nothing due yet
	assert.Len(t, a.started, 0)
	clk.Advance(time.Nanosecond) // 10 ms: a's hedge, only
	require.Equal(t, 1, <-a.started)
	assert.Equal(t, "a2", (<-resA).v)
	assert.Len(t, c.started, 0, "c is due at 16 ms")
	require.True(t, clk.WaitForTimers(1, nil), "the timer is re-armed for c")
	clk.Advance(6*time.Millisecond - time.Nanosecond)
	assert.Len(t, c.started, 0)
	clk.Advance(time.Nanosecond) // 16 ms
	require.Equal(t, 1, <-c.started)
	assert.Equal(t, "c2", (<-resC).v)
	assert.Equal(t, int32(1), b.n.Load(), "the call that answered in time was not hedged")
	assert.Equal(t, map[string]uint64{"calls": 3, "won": 2}, outcomes(h))
	assert.Equal(t, 0, clk.Timers(), "no call waits: the timer is not re-armed")
}

// TestCallsThatEndInTimeArmNoTimer: a thousand calls that answer before the delay arm the
// scheduler's timer once, and it fires once, finding nothing due — a call's cost does not
// include a timer of its own.
func TestCallsThatEndInTimeArmNoTimer(t *testing.T) {
	h, clk := newHedge(t, hedge10ms())
	for i := range 1000 {
		_, err := hedge.Call(context.Background(), h, func(context.Context) (int, error) { return i, nil })
		require.NoError(t, err)
		if i%100 == 0 {
			clk.Advance(time.Millisecond / 2) // the calls spread over 5 ms, within the delay
		}
	}
	assert.Equal(t, 1, clk.Timers())
	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, 0, clk.Timers(), "it fired, found nothing due and was not re-armed")
	assert.Equal(t, map[string]uint64{"calls": 1000}, outcomes(h))
}

func hedge10ms() hedge.Config {
	return hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true, Budget: grantAll{}}
}

// TestACallMadeAfterTheDelayShrankWaitsBehindOlderCalls: the queue is in the order the calls
// joined; a call that joins with a shorter delay than an older call waiting (the adaptive delay
// just moved down) is hedged with that older call — late by at most the difference of the two
// delays, and never early.
func TestACallMadeAfterTheDelayShrankWaitsBehindOlderCalls(t *testing.T) {
	h, clk := newHedge(t, hedge.Config{Idempotent: true, Window: 40, MinDelay: time.Millisecond, Budget: grantAll{}})
	warm(t, h, clk, repeat(40*time.Millisecond, 20))
	long := h.Snapshot().Delay
	require.GreaterOrEqual(t, long, 40*time.Millisecond)
	a := newScript(blockUntilCancelled, answer("a2"))
	resA := callAsync(context.Background(), h, a)
	<-a.started

	warm(t, h, clk, repeat(100*time.Microsecond, 40)) // 4 ms later, the delay is down to the floor
	require.Equal(t, time.Millisecond, h.Snapshot().Delay)
	b := newScript(blockUntilCancelled, answer("b2"))
	resB := callAsync(context.Background(), h, b)
	<-b.started
	clk.Advance(time.Millisecond) // b's own delay
	assert.Len(t, b.started, 0, "b waits behind a, queued with the longer delay")
	clk.Advance(long - 5*time.Millisecond - time.Nanosecond)
	assert.Len(t, a.started, 0)
	assert.Len(t, b.started, 0)
	clk.Advance(time.Nanosecond) // a is due: b, overdue, goes with it
	assert.Equal(t, "a2", (<-resA).v)
	assert.Equal(t, "b2", (<-resB).v)
	assert.Equal(t, map[string]uint64{"calls": 62, "won": 2}, outcomes(h))
}
