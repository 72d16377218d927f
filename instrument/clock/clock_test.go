package clock

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeAdvanceFiresDueTimersInOrder(t *testing.T) {
	f := NewFake(t0)
	a := f.NewTimer(2 * time.Second)
	b := f.NewTimer(time.Second)
	c := f.NewTimer(5 * time.Second)
	assert.Equal(t, 3, f.Timers())

	f.Advance(1500 * time.Millisecond)
	assert.Equal(t, t0.Add(1500*time.Millisecond), f.Now())
	select {
	case at := <-b.C():
		assert.Equal(t, t0.Add(time.Second), at)
	default:
		t.Fatal("b is due")
	}
	select {
	case <-a.C():
		t.Fatal("a is not due")
	default:
	}

	assert.True(t, c.Stop())
	assert.False(t, c.Stop(), "second stop reports false")
	assert.False(t, b.Stop(), "fired timers cannot be stopped")
	f.Advance(10 * time.Second)
	<-a.C()
	select {
	case <-c.C():
		t.Fatal("stopped timer fired")
	default:
	}
	assert.Equal(t, 0, f.Timers())
}

func TestFakeZeroDurationFiresAtOnce(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(0)
	assert.Equal(t, t0, <-tm.C())
	assert.Equal(t, 0, f.Timers())
}

func TestWaitForTimers(t *testing.T) {
	f := NewFake(t0)
	done := make(chan struct{})
	got := make(chan time.Time)
	go func() {
		tm := f.NewTimer(time.Minute)
		got <- <-tm.C()
	}()
	require.True(t, f.WaitForTimers(1, done))
	f.Advance(time.Minute)
	assert.Equal(t, t0.Add(time.Minute), <-got)

	close(done)
	assert.False(t, f.WaitForTimers(5, done), "returns when done closes")
}

func TestWaitForTimersAtMost(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Minute)
	done := make(chan struct{})
	assert.True(t, f.WaitForTimersAtMost(1, done), "one pending is at most one")
	stopped := make(chan struct{})
	go func() { defer close(stopped); tm.Stop() }()
	require.True(t, f.WaitForTimersAtMost(0, done), "returns once the other goroutine stopped it")
	<-stopped
	assert.Equal(t, 0, f.Timers())

	f.NewTimer(time.Minute)
	close(done)
	assert.False(t, f.WaitForTimersAtMost(0, done), "returns when done closes")
}

func TestSetAndReal(t *testing.T) {
	f := NewFake(t0)
	f.Set(t0.Add(-time.Hour))
	assert.Equal(t, t0, f.Now(), "never backwards")
	f.Set(t0.Add(time.Hour))
	assert.Equal(t, t0.Add(time.Hour), f.Now())

	assert.IsType(t, Real{}, Or(nil))
	assert.Same(t, f, Or(f))
	r := Real{}.NewTimer(time.Hour)
	assert.True(t, r.Stop())
	assert.WithinDuration(t, time.Now(), Real{}.Now(), time.Second)
}

func TestRandOrAndLocked(t *testing.T) {
	if _, ok := RandOr(nil).(Global); !ok {
		t.Fatalf("RandOr(nil) = %T, want Global", RandOr(nil))
	}
	src := rand.New(rand.NewPCG(1, 2))
	want := rand.New(rand.NewPCG(1, 2)).Float64()
	r := Locked(src)
	if got := r.Float64(); got != want {
		t.Fatalf("Locked(r).Float64() = %v, want the wrapped source's %v", got, want)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if v := r.Float64(); v < 0 || v >= 1 {
					t.Errorf("draw %v outside [0, 1)", v)
				}
			}
		}()
	}
	wg.Wait()
	if v := (Global{}).Float64(); v < 0 || v >= 1 {
		t.Fatalf("Global draw %v outside [0, 1)", v)
	}
}
