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
	b, err := NewBudget(BudgetConfig{NoFloor: true}, fc)
	require.NoError(t, err)
	assert.Zero(t, b.Tokens(), "a new budget holds no tokens")
	for range 100 {
		b.Deposit()
	}
	assert.Equal(t, 10, b.Tokens())
	granted := 0
	for range 20 {
		if b.TryRetry() {
			granted++
		}
	}
	assert.Equal(t, 10, granted, "100 first attempts fund exactly 10 retries (BU-03)")
	assert.Equal(t, uint64(10), b.Denied())
	assert.Zero(t, b.Tokens())

	// Ratio 0.3 rounds to one token per 3 first attempts.
	b3, err := NewBudget(BudgetConfig{Ratio: 0.3, NoFloor: true}, fc)
	require.NoError(t, err)
	for range 10 {
		b3.Deposit()
	}
	assert.Equal(t, 3, b3.Tokens())
}

func TestBudgetCapacity(t *testing.T) {
	fc := clock.NewFake(t0)
	b, err := NewBudget(BudgetConfig{Ratio: 1, Capacity: 5, NoFloor: true, NoDecay: true}, fc)
	require.NoError(t, err)
	for range 50 {
		b.Deposit()
	}
	assert.Equal(t, 5, b.Tokens())
}

func TestBudgetDecay(t *testing.T) {
	fc := clock.NewFake(t0)
	b, err := NewBudget(BudgetConfig{NoFloor: true, DecayWindow: 10 * time.Second}, fc)
	require.NoError(t, err)
	for range 50 { // 5 tokens at t0
		b.Deposit()
	}
	fc.Advance(5 * time.Second)
	for range 30 { // 3 tokens at t0+5s
		b.Deposit()
	}
	assert.Equal(t, 8, b.Tokens())
	fc.Advance(5*time.Second - time.Nanosecond)
	assert.Equal(t, 8, b.Tokens(), "still inside the window")
	fc.Advance(time.Nanosecond)
	assert.Equal(t, 3, b.Tokens(), "the healthy-period savings expired")
	assert.True(t, b.TryRetry())
	fc.Advance(5 * time.Second)
	assert.Zero(t, b.Tokens())
	assert.False(t, b.TryRetry())

	// A full bucket with decay refreshes its oldest token instead of dropping the new one.
	full, err := NewBudget(BudgetConfig{Ratio: 1, Capacity: 2, NoFloor: true, DecayWindow: 10 * time.Second}, fc)
	require.NoError(t, err)
	full.Deposit()
	full.Deposit()
	fc.Advance(6 * time.Second)
	full.Deposit()
	fc.Advance(5 * time.Second)
	assert.Equal(t, 1, full.Tokens(), "the token deposited at +6s is still live")
}

func TestBudgetFloorAtZeroTraffic(t *testing.T) {
	fc := clock.NewFake(t0)
	b, err := NewBudget(BudgetConfig{MinRetriesPerSecond: 2}, fc)
	require.NoError(t, err)
	assert.True(t, b.TryRetry())
	assert.True(t, b.TryRetry())
	assert.False(t, b.TryRetry(), "floor spent for this second")
	fc.Advance(time.Second)
	assert.True(t, b.TryRetry(), "a new second, a new floor")
	assert.Equal(t, uint64(1), b.Denied())

	// The default floor (1/s) comes on top of the tokens.
	d, err := NewBudget(BudgetConfig{}, fc)
	require.NoError(t, err)
	for range 100 {
		d.Deposit()
	}
	granted := 0
	for range 20 {
		if d.TryRetry() {
			granted++
		}
	}
	assert.Equal(t, 11, granted)
}

func TestBudgetExactUnderConcurrency(t *testing.T) {
	fc := clock.NewFake(t0)
	b, err := NewBudget(BudgetConfig{Capacity: 10_000, NoFloor: true, NoDecay: true}, fc)
	require.NoError(t, err)
	const goroutines, perG = 32, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				b.Deposit()
			}
		})
	}
	wg.Wait()
	require.Equal(t, goroutines*perG/10, b.Tokens())

	var granted atomic.Int64
	for range goroutines {
		wg.Go(func() {
			for range 200 {
				if b.TryRetry() {
					granted.Add(1)
				}
				b.Deposit()
			}
		})
	}
	wg.Wait()
	// 3,200 saved tokens plus 640 more from 6,400 interleaved first attempts; every one spent once.
	assert.Equal(t, int64(goroutines*200)-int64(b.Denied()), granted.Load())
	assert.Equal(t, 3200+640, int(granted.Load())+b.Tokens())
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
		_, err = NewBudget(c.c, nil)
		requireConfigError(t, err, "", c.field, c.value)
	}
	cfg := Config{}
	cfg.Budget = BudgetConfig{Disabled: true, Ratio: 7}
	r, err := New("x", cfg)
	require.NoError(t, err, "a disabled budget is not validated")
	assert.Nil(t, r.Budget())
}
