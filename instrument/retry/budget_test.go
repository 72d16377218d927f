package retry

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestBudgetIntegerAccounting(t *testing.T) {
	fc := clock.NewFake(t0)
	b := newBudget(BudgetConfig{DisableFloor: true}, fc)
	assert.Zero(t, b.available(), "a new budget holds no tokens")
	for range 100 {
		b.deposit()
	}
	assert.Equal(t, 10, b.available())
	granted := 0
	for range 20 {
		if b.tryRetry() {
			granted++
		}
	}
	assert.Equal(t, 10, granted, "100 first attempts fund exactly 10 retries")
	assert.Equal(t, uint64(10), b.refused())
	assert.Zero(t, b.available())

	// Ratio 0.3 rounds to one token per 3 first attempts.
	b3 := newBudget(BudgetConfig{Ratio: 0.3, DisableFloor: true}, fc)
	for range 10 {
		b3.deposit()
	}
	assert.Equal(t, 3, b3.available())
}

func TestBudgetCapacity(t *testing.T) {
	fc := clock.NewFake(t0)
	b := newBudget(BudgetConfig{Ratio: 1, Capacity: 5, DisableFloor: true, DisableDecay: true}, fc)
	for range 50 {
		b.deposit()
	}
	assert.Equal(t, 5, b.available())
}

func TestBudgetDecay(t *testing.T) {
	fc := clock.NewFake(t0)
	b := newBudget(BudgetConfig{DisableFloor: true, DecayWindow: 10 * time.Second}, fc)
	for range 50 { // 5 tokens at t0
		b.deposit()
	}
	fc.Advance(5 * time.Second)
	for range 30 { // 3 tokens at t0+5s
		b.deposit()
	}
	assert.Equal(t, 8, b.available())
	fc.Advance(5*time.Second - time.Nanosecond)
	assert.Equal(t, 8, b.available(), "still inside the window")
	fc.Advance(time.Nanosecond)
	assert.Equal(t, 3, b.available(), "the healthy-period savings expired")
	assert.True(t, b.tryRetry())
	fc.Advance(5 * time.Second)
	assert.Zero(t, b.available())
	assert.False(t, b.tryRetry())

	// A full bucket with decay refreshes its oldest token instead of dropping the new one.
	full := newBudget(BudgetConfig{Ratio: 1, Capacity: 2, DisableFloor: true, DecayWindow: 10 * time.Second}, fc)
	full.deposit()
	full.deposit()
	fc.Advance(6 * time.Second)
	full.deposit()
	fc.Advance(5 * time.Second)
	assert.Equal(t, 1, full.available(), "the token deposited at +6s is still live")
}

func TestBudgetFloorAtZeroTraffic(t *testing.T) {
	fc := clock.NewFake(t0)
	b := newBudget(BudgetConfig{MinRetriesPerSecond: 2}, fc)
	assert.True(t, b.tryRetry())
	assert.True(t, b.tryRetry())
	assert.False(t, b.tryRetry(), "floor spent for this second")
	fc.Advance(time.Second)
	assert.True(t, b.tryRetry(), "a new second, a new floor")
	assert.Equal(t, uint64(1), b.refused())

	// The default floor (1/s) comes on top of the tokens.
	d := newBudget(BudgetConfig{}, fc)
	for range 100 {
		d.deposit()
	}
	granted := 0
	for range 20 {
		if d.tryRetry() {
			granted++
		}
	}
	assert.Equal(t, 11, granted)
}

func TestBudgetExactUnderConcurrency(t *testing.T) {
	fc := clock.NewFake(t0)
	b := newBudget(BudgetConfig{Capacity: 10_000, DisableFloor: true, DisableDecay: true}, fc)
	const goroutines, perG = 32, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				b.deposit()
			}
		})
	}
	wg.Wait()
	require.Equal(t, goroutines*perG/10, b.available())

	var granted atomic.Int64
	for range goroutines {
		wg.Go(func() {
			for range 200 {
				if b.tryRetry() {
					granted.Add(1)
				}
				b.deposit()
			}
		})
	}
	wg.Wait()
	// 3,200 saved tokens plus 640 more from 6,400 interleaved first attempts; every one spent once.
	assert.Equal(t, int64(goroutines*200)-int64(b.refused()), granted.Load())
	assert.Equal(t, 3200+640, int(granted.Load())+b.available())
}

func TestBudgetValidation(t *testing.T) {
	bad := []struct {
		c     BudgetConfig
		field string
		value any
	}{
		{BudgetConfig{Ratio: 1.5}, "Budget.Ratio", 1.5},
		{BudgetConfig{Ratio: -0.1}, "Budget.Ratio", -0.1},
		{BudgetConfig{Capacity: -1}, "Budget.Capacity", -1},
		{BudgetConfig{MinRetriesPerSecond: -1}, "Budget.MinRetriesPerSecond", -1},
		{BudgetConfig{DecayWindow: -time.Second}, "Budget.DecayWindow", -time.Second},
	}
	for _, c := range bad {
		cfg := Config{}
		cfg.Budget = c.c
		_, err := New("x", cfg)
		requireConfigError(t, err, "x", c.field, c.value)
	}
	cfg := Config{DisableBudget: true}
	cfg.Budget = BudgetConfig{Ratio: 7}
	r, err := New("x", cfg)
	require.NoError(t, err, "a disabled budget is not validated")
	assert.Nil(t, r.budget)
	assert.Zero(t, r.Snapshot().BudgetTokens)
}
