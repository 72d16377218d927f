package hedge

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheOwnBudgetLetsATenthOfCallsHedge(t *testing.T) {
	var calls atomic.Uint64
	b := newOwnBudget(0.1, &calls)
	granted := 0
	for range 100 { // every call deposits, then tries to hedge
		calls.Add(1)
		if b.SpendToken() {
			granted++
		}
	}
	assert.Equal(t, 1+100/10, granted, "one token to start with, then one per 10 calls")
	calls.Add(1000) // a quiet period saves at most 10 tokens
	granted = 0
	for b.SpendToken() {
		granted++
	}
	assert.Equal(t, 10, granted)
}

func TestTheOwnBudgetIsExactUnderConcurrency(t *testing.T) {
	var calls atomic.Uint64
	b := newOwnBudget(0.5, &calls)
	b.balance = 0
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for range 1000 {
				calls.Add(1)
				if b.SpendToken() {
					n++
				}
			}
			mu.Lock()
			granted += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	for b.SpendToken() {
		granted++
	}
	assert.Equal(t, 8*1000/2, granted, "every half token deposited is spent exactly once")
}
