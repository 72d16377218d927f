package retry

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

// Snapshot is a Retry's counts read at one moment. Counters only grow; they are arrays indexed by
// the catalog's values (Calls[catalog.RetryFailedWithRetry], Errors[catalog.ClassHTTP5xx],
// Backoff[catalog.SourceRetryAfter]). Taking one allocates nothing.
type Snapshot struct {
	// Calls counts logical calls by final outcome.
	Calls [catalog.NumRetryKinds]uint64
	// Retries counts attempts after the first.
	Retries uint64
	// Errors counts failed attempts by class; Errors[catalog.ClassNone] is always 0.
	Errors [catalog.NumClasses]uint64
	// Backoff holds the delays actually waited, by what set them.
	Backoff [catalog.NumDelaySources]histogram.Snapshot
	// BudgetTokens is the number of budget tokens available; 0 without a budget.
	BudgetTokens int
	// BudgetDenied counts retries the budget refused.
	BudgetDenied uint64
}

// Snapshot reads the retry's counts.
func (r *Retry) Snapshot() Snapshot {
	s := Snapshot{Retries: r.attempts.Load()}
	for i := range r.calls {
		s.Calls[i] = r.calls[i].Load()
	}
	for i := range r.errs {
		s.Errors[i] = r.errs[i].Load()
	}
	for i := range r.backoff {
		s.Backoff[i] = r.backoff[i].Snapshot()
	}
	if r.budget != nil {
		s.BudgetTokens = r.budget.available()
		s.BudgetDenied = r.budget.refused()
	}
	return s
}
