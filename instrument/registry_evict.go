package instrument

import (
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/internal/activity"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Idle eviction. A registry with an idle TTL (WithIdleTTL) forgets primitives nobody used for
// that long, so that keyed primitives (one per host, per endpoint, per tenant) do not pile up.
// There is no background goroutine: sweeps run lazily, at most once per TTL/SweepDivisor of the
// registry's clock, when a name is created and when the registry's primitives are listed (a
// scrape), and on demand with Registry.EvictIdle.
//
// A sweep cannot see when a primitive was last used, only whether its counters moved: it
// compares each primitive's activity (the sum of its counters, plus any registry lookup of its
// name since the previous sweep) with the previous sweep's reading. A primitive whose activity
// has not moved for at least the TTL — measured from the sweep that last saw it move, or from
// its creation — is evicted, unless it holds state that a fresh instance would lose:
//
//   - a circuit breaker that is not closed (open, half_open, forced_open, disabled,
//     metrics_only), or whose window holds a failure or a slow call: evicting it would let the
//     next call start on a fresh, closed breaker — the reset a failing dependency must not get;
//   - a bulkhead with calls in flight or waiting.
//
// A retry's budget only holds tokens earned by traffic (a fresh retry starts with none), so
// evicting a retry can only make retries scarcer, never lift a refusal; timeouts and fallbacks
// hold counters only. The shared overflow instance is never evicted.

// SweepDivisor sets how often an idle-evicting registry sweeps: at most once per TTL/SweepDivisor.
// A primitive last used at t is therefore gone by t + TTL + 2·TTL/SweepDivisor at the latest
// (provided names are created or listed that often), and never before t + TTL.
const SweepDivisor = 4

// idlePolicy is a registry's idle eviction setting; ttl 0 is off.
type idlePolicy struct {
	ttl   int64 // ns
	clk   clock.Clock
	total *atomic.Uint64 // evictions of every kind (Registry.Evictions)
}

// WithIdleTTL makes the registry evict primitives idle for at least ttl (ttl > 0), reading time
// from clk (nil: the wall clock). Off by default: without it a registry keeps every name it
// handed out, up to the cardinality guard. A primitive holding state that a fresh one would lose
// (a breaker that is not closed or whose window holds failures, a bulkhead with calls in flight)
// is never evicted. An evicted name's series disappear from the next scrape; using the name
// again creates a fresh primitive, with counters from 0.
//
// With eviction on, get primitives from the registry (or a Pipeline, or the httpx transport,
// which checks its cache against evictions) rather than holding them for longer than the TTL:
// a primitive held and used after its eviction counts into an instance no scrape reads.
func WithIdleTTL(ttl time.Duration, clk clock.Clock) RegistryOption {
	return func(r *Registry) error {
		if ttl <= 0 {
			return &catalog.ConfigError{Primitive: string(catalog.Registry), Field: "IdleTTL", Value: ttl, Reason: "must be positive"}
		}
		r.idle = idlePolicy{ttl: int64(ttl), clk: clock.Or(clk), total: new(atomic.Uint64)}
		return nil
	}
}

// IdleTTL returns the idle eviction TTL; 0 means eviction is off.
func (r *Registry) IdleTTL() time.Duration { return time.Duration(r.idle.ttl) }

// Evicted returns how many primitives of kind (one of catalog.Primitives) idle eviction removed.
func (r *Registry) Evicted(kind catalog.Primitive) uint64 {
	f, ok := r.families.Load(kind)
	if !ok {
		return 0
	}
	return f.(sweeper).evictedCount()
}

// Evictions returns how many primitives of every kind idle eviction removed: a number that
// changes whenever a primitive is evicted, for caches of primitives to check (one atomic load).
func (r *Registry) Evictions() uint64 {
	if r.idle.total == nil {
		return 0
	}
	return r.idle.total.Load()
}

// EvictIdle sweeps every primitive kind now, whether a sweep is due or not, and returns how
// many primitives it evicted. Without an idle TTL it does nothing and returns 0.
func (r *Registry) EvictIdle() int {
	if r.idle.ttl == 0 {
		return 0
	}
	n := 0
	r.families.Range(func(_, f any) bool {
		n += f.(sweeper).sweepNow()
		return true
	})
	return n
}

type sweeper interface {
	evictedCount() uint64
	sweepNow() int
}

// mark is what sweeps remember of a named primitive.
type mark struct {
	touched atomic.Bool // looked up since the last sweep
	act     uint64      // activity at the last sweep
	seen    int64       // when activity last moved (clock ns)
}

func (p idlePolicy) now() int64 { return p.clk.Now().UnixNano() }

// touch records a lookup of name. Called with mu held (read or write).
func (f *family[T]) touch(name string) {
	if m := f.marks[name]; m != nil && !m.touched.Load() {
		m.touched.Store(true)
	}
}

// marked starts tracking a new named entry. Called with mu held.
func (f *family[T]) marked(name string) {
	if f.idle.ttl == 0 {
		return
	}
	if f.marks == nil {
		f.marks = map[string]*mark{}
	}
	f.marks[name] = &mark{seen: f.idle.now()}
}

func (f *family[T]) evictedCount() uint64 { return f.evicted.Load() }

func (f *family[T]) sweepNow() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sweep(f.idle.now())
}

// trySweep sweeps when a sweep is due and nobody else holds the lock (a lister must not wait
// for a sweep).
func (f *family[T]) trySweep() {
	if f.idle.ttl == 0 || f.idle.now() < atomic.LoadInt64(&f.nextSweep) {
		return
	}
	if f.mu.TryLock() {
		f.sweepIfDue()
		f.mu.Unlock()
	}
}

// sweepIfDue sweeps when a sweep is due. Called with mu held.
func (f *family[T]) sweepIfDue() {
	if f.idle.ttl == 0 {
		return
	}
	if now := f.idle.now(); now >= atomic.LoadInt64(&f.nextSweep) {
		f.sweep(now)
	}
}

// sweep evicts the idle entries and returns how many. Called with mu held.
func (f *family[T]) sweep(now int64) int {
	atomic.StoreInt64(&f.nextSweep, now+f.idle.ttl/SweepDivisor)
	gone := 0
	for name, m := range f.marks {
		act, keep := probe(f.byName[name])
		if keep || act != m.act || m.touched.Load() {
			m.act, m.seen = act, now
			m.touched.Store(false)
			continue
		}
		if now-m.seen < f.idle.ttl {
			continue
		}
		gone++
		delete(f.marks, name)
		delete(f.byName, name)
		f.named--
	}
	if gone > 0 {
		f.evicted.Add(uint64(gone))
		f.idle.total.Add(uint64(gone))
		f.dirty.Store(true)
	}
	return gone
}

// all0 is all without a sweep.
func (f *family[T]) all0() []Named[T] {
	if s := f.snapshot.Load(); s != nil {
		return *s
	}
	return nil
}

// probe returns a primitive's activity (a number that moves whenever it is used) and whether
// it must be kept whatever its activity.
func probe(v any) (activity uint64, keep bool) {
	switch p := v.(type) {
	case *breaker.Breaker:
		return breakerProbe(p)
	case *bulkhead.Bulkhead:
		sn := p.Snapshot()
		return sum(sn.Calls[:]), sn.InFlight > 0 || sn.Waiting > 0
	case *retry.Retry:
		sn := p.Snapshot()
		return sum(sn.Calls[:]) + sn.Retries + sn.BudgetDenied, false
	case *timeout.Timeout:
		sn := p.Snapshot()
		return sum(sn.Calls[:]), false
	case *fallback.Fallback:
		sn := p.Snapshot()
		return sum(sn.Calls[:]), false
	}
	return 0, true // a kind this file does not know: never evicted
}

func breakerProbe(b *breaker.Breaker) (uint64, bool) {
	act, settled := activity.Breaker(b)
	return act, !settled
}

func sum(xs []uint64) uint64 {
	var n uint64
	for _, x := range xs {
		n += x
	}
	return n
}
