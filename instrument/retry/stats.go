package retry

import (
	"sync/atomic"
	"time"
)

// backoffBuckets are the upper bounds, in seconds, of the backoff histogram: 10 ms to 60 s (the
// Retry-After cap). They equal the catalog's BackoffBuckets (checked by a collector test).
var backoffBuckets = [...]float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// BackoffBuckets returns the upper bounds, in seconds, of the delay histogram.
func BackoffBuckets() []float64 { return append([]float64(nil), backoffBuckets[:]...) }

// histogram counts observed delays per bucket; the sum is kept in integer nanoseconds.
type histogram struct {
	counts [len(backoffBuckets) + 1]atomic.Uint64 // last: above every bound
	count  atomic.Uint64
	sum    atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(backoffBuckets) && s > backoffBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
	h.count.Add(1)
}

// HistogramSnapshot is a histogram read at one moment.
type HistogramSnapshot struct {
	Count   uint64
	Sum     float64  // seconds
	Buckets []uint64 // cumulative counts, one per [BackoffBuckets] bound
}

func (h *histogram) snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Buckets: make([]uint64, len(backoffBuckets))}
	var cum uint64
	for i := range backoffBuckets {
		cum += h.counts[i].Load()
		s.Buckets[i] = cum
	}
	s.Count = cum + h.counts[len(backoffBuckets)].Load()
	s.Sum = time.Duration(h.sum.Load()).Seconds()
	return s
}

// Snapshot is a Retry's counts read at one moment, for the collector. Counters only grow.
type Snapshot struct {
	// Calls counts logical calls by final outcome, indexed like [CallKinds].
	Calls []uint64
	// Retries counts attempts after the first.
	Retries uint64
	// Errors counts failed attempts by class, indexed like classify.Classes.
	Errors []uint64
	// Backoff holds the delays actually waited, indexed like [DelaySources].
	Backoff []HistogramSnapshot
	// BudgetTokens is the number of budget tokens available; 0 without a budget.
	BudgetTokens int
	// BudgetDenied counts retries the budget refused.
	BudgetDenied uint64
}

// Snapshot reads the retry's counts.
func (r *Retry) Snapshot() Snapshot {
	s := Snapshot{
		Calls:   make([]uint64, len(r.calls)),
		Retries: r.attempts.Load(),
		Errors:  make([]uint64, len(r.errs)),
		Backoff: []HistogramSnapshot{r.backoff[0].snapshot(), r.backoff[1].snapshot()},
	}
	for i := range r.calls {
		s.Calls[i] = r.calls[i].Load()
	}
	for i := range r.errs {
		s.Errors[i] = r.errs[i].Load()
	}
	if r.budget != nil {
		s.BudgetTokens = r.budget.Tokens()
		s.BudgetDenied = r.budget.Denied()
	}
	return s
}
