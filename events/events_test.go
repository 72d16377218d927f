package events

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

func TestListenersAddEmitRemove(t *testing.T) {
	var l Listeners[Transition]
	assert.False(t, l.Active())
	l.Emit(Transition{Name: "x"}) // no listeners: nothing happens

	var got []string
	removeA := l.Add(func(e Transition) { got = append(got, "a:"+e.To.String()) })
	removeB := l.Add(func(e Transition) { got = append(got, "b:"+e.To.String()) })
	assert.True(t, l.Active())
	l.Emit(Transition{To: catalog.StateOpen})
	assert.Equal(t, []string{"a:open", "b:open"}, got, "called in order of registration")

	removeA()
	removeA() // twice is harmless
	l.Emit(Transition{To: catalog.StateClosed})
	assert.Equal(t, []string{"a:open", "b:open", "b:closed"}, got)

	removeB()
	assert.False(t, l.Active())
	l.Emit(Transition{To: catalog.StateHalfOpen})
	assert.Len(t, got, 3)

	noop := l.Add(nil)
	noop()
	assert.False(t, l.Active())
}

func TestTripAndHasDelaySayWhichFieldsMean(t *testing.T) {
	assert.True(t, Transition{From: catalog.StateClosed, To: catalog.StateOpen}.Trip())
	assert.True(t, Transition{From: catalog.StateClosed, To: catalog.StateForcedOpen}.Trip())
	assert.False(t, Transition{From: catalog.StateOpen, To: catalog.StateHalfOpen}.Trip())
	assert.False(t, Transition{From: catalog.StateHalfOpen, To: catalog.StateClosed}.Trip())
	assert.True(t, Retry{Outcome: catalog.OutcomeRetrying}.HasDelay())
	for _, o := range []catalog.Outcome{catalog.OutcomeSucceeded, catalog.OutcomeGaveUp, catalog.OutcomeAborted, catalog.OutcomeBudgetExhausted} {
		assert.False(t, Retry{Outcome: o}.HasDelay(), o)
	}
}

func TestNilHubAndListenersAreSafe(t *testing.T) {
	var h *Hub
	assert.NotPanics(t, func() {
		var l *Listeners[Retry]
		assert.False(t, l.Active())
		l.Emit(Retry{})
	})
	assert.Nil(t, h)
}

func TestEmitIsSafeUnderConcurrentAdd(t *testing.T) {
	var l Listeners[Fallback]
	var mu sync.Mutex
	count := 0 // written under mu by listeners; the race detector checks Emit against Add/remove
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			remove := l.Add(func(Fallback) { mu.Lock(); count++; mu.Unlock() })
			defer remove()
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				l.Emit(Fallback{})
			}
		}()
	}
	wg.Wait()
	require.False(t, l.Active(), "every listener removed")
	mu.Lock()
	_ = count
	mu.Unlock()
}

func BenchmarkEmitNoListener(b *testing.B) {
	var h Hub
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if h.Transitions.Active() {
			h.Transitions.Emit(Transition{Name: "x"})
		}
	}
}
