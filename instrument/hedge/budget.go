package hedge

import "sync/atomic"

// ownBudget is the budget of a hedge without Config.Budget: every call deposits ratio of a token
// (in thousandths), every hedge takes one whole token; the balance is capped at ownBudgetCap
// tokens, so a quiet hour cannot fund a burst of hedges. A new budget holds one token.
type ownBudget struct {
	perCall int64 // thousandths of a token per call
	balance atomic.Int64
}

const (
	milli        = 1000
	ownBudgetCap = 10 * milli
)

func newOwnBudget(ratio float64) *ownBudget {
	b := &ownBudget{perCall: max(int64(ratio*milli+0.5), 1)}
	b.balance.Store(milli)
	return b
}

// deposit credits one call.
func (b *ownBudget) deposit() {
	if b.balance.Add(b.perCall) > ownBudgetCap {
		for {
			cur := b.balance.Load()
			if cur <= ownBudgetCap || b.balance.CompareAndSwap(cur, ownBudgetCap) {
				return
			}
		}
	}
}

// SpendToken takes one token if the balance holds one.
func (b *ownBudget) SpendToken() bool {
	for {
		cur := b.balance.Load()
		if cur < milli {
			return false
		}
		if b.balance.CompareAndSwap(cur, cur-milli) {
			return true
		}
	}
}
