package breaker

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// window counts outcomes for trip decisions in the closed (and metrics_only) state. A window
// belongs to one state epoch: a transition replaces it with an empty one, and late results
// recorded into a replaced window change nothing. Thresholds are not part of a window: they
// come in s, so that Reconfigure can keep a window and judge it by new thresholds.
//
// Adding a window kind is a local change:
//   - a WindowKind constant and its String name (config.go);
//   - its case in newSettings: which Config fields it uses, their defaults and validation,
//     the thresholds Snapshot exports for it and how many failed (or slow) half-open probes
//     reopen the breaker (failNeeded, slowNeeded);
//   - its case in settings.newWindow;
//   - a type implementing window (below). The breaker asks the window everything else —
//     whether it trips and why, what it holds, its rates — and never looks at the kind.
type window interface {
	// record adds the outcome of one call of kind k (never catalog.CallIgnored) at monotonic
	// time now (ns since the breaker's base; read only when needsTime) and reports whether the
	// window may trip under s. It runs on every call, concurrently, without a lock: the
	// breaker confirms a trip under its lock with trip.
	record(k catalog.CallKind, now int64, s *settings) (mayTrip bool)
	// needsTime reports whether record reads now.
	needsTime() bool
	// trip reports whether the window trips under s at now, with the cause and a
	// human-readable reason.
	trip(now int64, s *settings) (cause catalog.TripCause, reason string, ok bool)
	// counts returns the calls, failures and slow calls the window holds at now, without
	// changing anything.
	counts(now int64) (calls, fails, slow int64)
	// rates returns the exported failure and slow-call rates at now (NaN when the window
	// cannot judge yet), comparable with the thresholds Snapshot reports.
	rates(now int64, s *settings) (fail, slow float64)
}

// The rules of the rate windows (count and time based): at least MinCalls outcomes, then trip
// when the failure rate reaches its threshold or, with slow-call detection on, the slow-call
// rate reaches its.

// rateTripCondition reports whether counts held by a rate window trip the breaker, without
// building a reason: record's check on every call.
func rateTripCondition(calls, fails, slow int64, s *settings) bool {
	if calls < s.minCalls || calls <= 0 {
		return false
	}
	c := float64(calls)
	if float64(fails) >= s.failThr*c {
		return true
	}
	return s.slowNs > 0 && float64(slow) >= s.slowThr*c
}

// rateTrip is trip for a rate window holding these counts.
func rateTrip(calls, fails, slow int64, s *settings) (catalog.TripCause, string, bool) {
	if !rateTripCondition(calls, fails, slow, s) {
		return noTrip, "", false
	}
	fr, sr := float64(fails)/float64(calls), float64(slow)/float64(calls)
	if fr >= s.failThr {
		return catalog.TripFailureRate, fmt.Sprintf("failure rate %.2f >= %.2f over %d calls", fr, s.failThr, calls), true
	}
	return catalog.TripSlowCallRate, fmt.Sprintf("slow-call rate %.2f >= %.2f over %d calls", sr, s.slowThr, calls), true
}

// rateRates is rates for a rate window holding these counts: NaN below MinCalls.
func rateRates(calls, fails, slow int64, s *settings) (float64, float64) {
	if calls < s.minCalls || calls <= 0 {
		return math.NaN(), math.NaN()
	}
	c := float64(calls)
	return clamp01(float64(fails) / c), clamp01(float64(slow) / c)
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

type pad [64]byte

// countWindow is a ring of the last n outcomes, lock-free: each record swaps its slot and
// adjusts the totals by the difference, so a steady stream of equal outcomes costs one atomic
// add and one atomic swap.
type countWindow struct {
	n                  uint64
	_                  pad
	idx                atomic.Uint64
	_                  pad
	calls, fails, slow atomic.Int64
	_                  pad
	slots              []atomic.Uint32 // 0 empty; bit 0 present, bit 1 failed, bit 2 slow
}

func newCountWindow(n int) *countWindow {
	return &countWindow{n: uint64(n), slots: make([]atomic.Uint32, n)}
}

func (w *countWindow) needsTime() bool { return false }

func (w *countWindow) record(k catalog.CallKind, _ int64, s *settings) bool {
	fail, slow := isFailed(k), isSlow(k)
	v := uint32(1)
	if fail {
		v |= 2
	}
	if slow {
		v |= 4
	}
	slot := &w.slots[(w.idx.Add(1)-1)%w.n]
	if slot.Load() == v {
		// Steady state: the outcome equals the one it replaces, so the totals stand. (Had a
		// concurrent writer changed the slot since, its own accounting matches what it wrote.)
		return false
	}
	old := slot.Swap(v)
	if old == v {
		return false
	}
	grew := old == 0
	if grew {
		w.calls.Add(1)
	}
	if d := int64(v>>1&1) - int64(old>>1&1); d != 0 {
		w.fails.Add(d)
	}
	if d := int64(v>>2&1) - int64(old>>2&1); d != 0 {
		w.slow.Add(d)
	}
	if !grew && !fail && !slow {
		return false // a good outcome replaced a bad one: rates only fell
	}
	return rateTripCondition(w.calls.Load(), w.fails.Load(), w.slow.Load(), s)
}

func (w *countWindow) counts(int64) (calls, fails, slow int64) {
	return max(w.calls.Load(), 0), max(w.fails.Load(), 0), max(w.slow.Load(), 0)
}

func (w *countWindow) trip(now int64, s *settings) (catalog.TripCause, string, bool) {
	calls, fails, slow := w.counts(now)
	return rateTrip(calls, fails, slow, s)
}

func (w *countWindow) rates(now int64, s *settings) (float64, float64) {
	calls, fails, slow := w.counts(now)
	return rateRates(calls, fails, slow, s)
}

// consecutiveWindow counts the current run of failures (and of slow calls). It trips when a run
// reaches WindowSize; its rates are the runs relative to WindowSize (so its thresholds are 1).
type consecutiveWindow struct {
	n     int64
	_     pad
	fails atomic.Int64
	_     pad
	slow  atomic.Int64
}

func newConsecutiveWindow(n int) *consecutiveWindow { return &consecutiveWindow{n: int64(n)} }

func (w *consecutiveWindow) needsTime() bool { return false }

func (w *consecutiveWindow) record(k catalog.CallKind, _ int64, s *settings) bool {
	trip := false
	if isFailed(k) {
		trip = w.fails.Add(1) >= w.n
	} else if w.fails.Load() != 0 {
		w.fails.Store(0)
	}
	if s.slowNs > 0 {
		if isSlow(k) {
			trip = w.slow.Add(1) >= w.n || trip
		} else if w.slow.Load() != 0 {
			w.slow.Store(0)
		}
	}
	return trip
}

// counts returns the current failure and slow runs, with calls equal to the longer run.
func (w *consecutiveWindow) counts(int64) (calls, fails, slow int64) {
	f, s := w.fails.Load(), w.slow.Load()
	return max(f, s), f, s
}

func (w *consecutiveWindow) trip(_ int64, s *settings) (catalog.TripCause, string, bool) {
	f, sl := w.fails.Load(), w.slow.Load()
	switch {
	case f >= w.n:
		return catalog.TripConsecutiveFailures, fmt.Sprintf("%d consecutive failures", f), true
	case s.slowNs > 0 && sl >= w.n:
		return catalog.TripSlowCallRate, fmt.Sprintf("%d consecutive slow calls", sl), true
	}
	return noTrip, "", false
}

func (w *consecutiveWindow) rates(int64, *settings) (float64, float64) {
	n := float64(w.n)
	return math.Min(float64(max(w.fails.Load(), 0))/n, 1), math.Min(float64(max(w.slow.Load(), 0))/n, 1)
}

// timeWindow holds the outcomes of the last n buckets of d ns. Each bucket remembers which
// bucket number (now/d) it holds; the first record of a new bucket number takes the mutex and
// expires every bucket that fell out of the window, so the running totals always cover exactly
// the live buckets. The ring has a power-of-two size (at least n), and the number of the bucket
// last recorded into is kept as a hint, so that a record into the current bucket divides
// nothing.
type timeWindow struct {
	d, n int64
	mask int64        // ring size - 1
	hint atomic.Int64 // a recent bucket number; checked against now before use

	mu     sync.Mutex
	latest int64 // highest bucket number rolled in; guarded by mu

	_                  pad
	calls, fails, slow atomic.Int64
	_                  pad
	buckets            []timeBucket
}

type timeBucket struct {
	num                atomic.Int64 // bucket number held; -1 = empty
	calls, fails, slow atomic.Int64
	_                  [32]byte
}

func newTimeWindow(d int64, n int) *timeWindow {
	size := 1 << bits.Len(uint(n-1)) // the power of two ≥ n
	w := &timeWindow{d: d, n: int64(n), mask: int64(size - 1), latest: -1, buckets: make([]timeBucket, size)}
	for i := range w.buckets {
		w.buckets[i].num.Store(-1)
	}
	return w
}

func (w *timeWindow) needsTime() bool { return true }

func (w *timeWindow) record(kind catalog.CallKind, now int64, s *settings) bool {
	now = max(now, 0)
	k := w.hint.Load()
	if start := k * w.d; now < start || now-start >= w.d {
		k = now / w.d
		w.hint.Store(k)
	}
	b := &w.buckets[k&w.mask]
	if b.num.Load() != k && !w.roll(k) {
		return false // older than the whole window: a very late result
	}
	b.calls.Add(1)
	w.calls.Add(1)
	if isFailed(kind) {
		b.fails.Add(1)
		w.fails.Add(1)
	}
	if isSlow(kind) {
		b.slow.Add(1)
		w.slow.Add(1)
	}
	return rateTripCondition(w.calls.Load(), w.fails.Load(), w.slow.Load(), s)
}

// roll makes bucket number k current, expiring buckets that left the window. It reports false
// when k itself is already outside the window.
func (w *timeWindow) roll(k int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latest = max(w.latest, k)
	oldest := w.latest - w.n + 1
	if k < oldest {
		return false
	}
	for i := range w.buckets {
		b := &w.buckets[i]
		if num := b.num.Load(); num >= 0 && num < oldest {
			w.calls.Add(-b.calls.Swap(0))
			w.fails.Add(-b.fails.Swap(0))
			w.slow.Add(-b.slow.Swap(0))
			b.num.Store(-1)
		}
	}
	b := &w.buckets[k&w.mask]
	if b.num.Load() == -1 {
		b.num.Store(k)
	}
	return b.num.Load() == k
}

func (w *timeWindow) counts(now int64) (calls, fails, slow int64) {
	k := max(now, 0) / w.d
	for i := range w.buckets {
		b := &w.buckets[i]
		if num := b.num.Load(); num >= 0 && num > k-w.n && num <= k {
			calls += b.calls.Load()
			fails += b.fails.Load()
			slow += b.slow.Load()
		}
	}
	return calls, fails, slow
}

func (w *timeWindow) trip(now int64, s *settings) (catalog.TripCause, string, bool) {
	calls, fails, slow := w.counts(now)
	return rateTrip(calls, fails, slow, s)
}

func (w *timeWindow) rates(now int64, s *settings) (float64, float64) {
	calls, fails, slow := w.counts(now)
	return rateRates(calls, fails, slow, s)
}
