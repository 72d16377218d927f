package hedge

import (
	"sync"
	"sync/atomic"
)

// ownBudget is the budget of a hedge without Config.Budget: every call deposits ratio of a token
// (in thousandths), every hedge takes one whole token; the balance is capped at ownBudgetCap
// tokens, so a quiet hour cannot fund a burst of hedges. A new budget holds one token.
//
// The deposits are counted by the hedge's call counter and credited when a hedge asks for a
// token — the same balance as crediting each call as it comes (the cap applies the same way to a
// sum of deposits as to each in turn), without a write per call.
type ownBudget struct {
	perCall int64          // thousandths of a token per call
	calls   *atomic.Uint64 // the calls made: each deposits perCall

	mu      sync.Mutex
	seen    uint64 // calls credited so far
	balance int64  // thousandths of a token
}

const (
	milli        = 1000
	ownBudgetCap = 10 * milli
)

func newOwnBudget(ratio float64, calls *atomic.Uint64) *ownBudget {
	return &ownBudget{perCall: max(int64(ratio*milli+0.5), 1), calls: calls, seen: calls.Load(), balance: milli}
}

// SpendToken credits the calls made since the last time and takes one token if the balance
// holds one.
func (b *ownBudget) SpendToken() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.calls.Load()
	b.balance = min(b.balance+int64(n-b.seen)*b.perCall, ownBudgetCap)
	b.seen = n
	if b.balance < milli {
		return false
	}
	b.balance -= milli
	return true
}
