package retry

// SpendToken takes one token of the retry's budget for an extra attempt that is not a retry —
// a hedged request (package instrument/hedge) — by the same rule as a retry: a token, else a
// slot of the per-second floor. It reports false when the budget refuses; such a refusal is the
// caller's to count and is not a retry denial (budget_denied_total counts retries only). Retries
// and hedges of one dependency draw on this one budget, so neither can add load the other has
// already spent. A retry without a budget (Budget.Disabled) always grants.
func (r *Retry) SpendToken() bool {
	return r.budget == nil || r.budget.take()
}
