// Package instrument holds stormwatch's resilience primitives (in its subpackages breaker,
// retry, bulkhead, timeout, fallback, classify, httpx), the [Registry] that hands them out by
// name, and the pipeline that composes them.
//
// Nothing here imports Prometheus: primitives keep their counts in atomics, and the collector
// package turns a Registry into a prometheus.Collector that reads them at scrape time.
//
// # Names
//
// A primitive's name is the value of the `name` label of every series it exports, so one bad
// name would break the whole exposition (Prometheus refuses a scrape holding a label value that
// is not UTF-8). Every name a [Registry] hands out therefore is:
//
//   - not empty;
//   - at most [MaxNameLen] bytes;
//   - valid UTF-8;
//   - printable characters only, catalog's policy for every name and id (catalog.NameRune):
//     no control characters (newlines, tabs, NUL…), no format characters (the bidi override
//     U+202E, zero-width joiners), no separators but the ASCII space;
//   - not catalog.OverflowName ("_overflow"), the name of the instance refused names share.
//
// Names you choose (Registry.Breaker, Retry, Bulkhead, Timeout, Fallback, Pipeline) are checked
// and refused with a [*catalog.ConfigError] naming the value: they are configuration, and a silently
// renamed series would be a surprise. Names derived from traffic — a request's host, a key
// function's result, an RPC's method — must not fail the call: pass them through [SanitizeName],
// which maps any string to an acceptable name (invalid bytes and control characters become
// U+FFFD, the result is cut to MaxNameLen bytes). Keyed middleware (httpx's WithKey, gRPC keys)
// does this for you. Whatever the path, a name reaches the series only through the registry's
// get-or-create, which checks it, so no call can put an invalid label value into the exposition.
package instrument

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
)

// DefaultMaxNames is the default cardinality guard: the number of distinct names a registry
// hands out per primitive kind before new names share the overflow instance.
const DefaultMaxNames = 1000

// Registry hands out named primitives: one instance per (kind, name), created on first use and
// shared afterwards, so that one dependency is one set of series. A cardinality guard caps the
// distinct names per primitive kind (catalog.Primitives); beyond it, new names share one instance
// called catalog.OverflowName and the refusal is counted.
//
// The zero value is not usable; call [NewRegistry]. A Registry is safe for concurrent use.
type Registry struct {
	maxNames int
	hub      *events.Hub
	families sync.Map // catalog.Primitive → *family[T]
	idle     idlePolicy
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry) error

// WithMaxNames sets the cardinality guard: at most n distinct names per primitive kind (n ≥ 1).
func WithMaxNames(n int) RegistryOption {
	return func(r *Registry) error {
		if n < 1 {
			return &catalog.ConfigError{Primitive: string(catalog.Registry), Field: "MaxNames", Value: n, Reason: "must be at least 1"}
		}
		r.maxNames = n
		return nil
	}
}

// WithEvents makes the registry's primitives emit their events to hub instead of a hub of the
// registry's own.
func WithEvents(hub *events.Hub) RegistryOption {
	return func(r *Registry) error {
		if hub == nil {
			return &catalog.ConfigError{Primitive: string(catalog.Registry), Field: "Events", Reason: "the hub must not be nil"}
		}
		r.hub = hub
		return nil
	}
}

// NewRegistry returns an empty registry.
func NewRegistry(opts ...RegistryOption) (*Registry, error) {
	r := &Registry{maxNames: DefaultMaxNames, hub: new(events.Hub)}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Events returns the hub every primitive of this registry emits to. Register listeners on it.
func (r *Registry) Events() *events.Hub { return r.hub }

// MaxNames returns the cardinality guard's limit per kind.
func (r *Registry) MaxNames() int { return r.maxNames }

// OverflowCount returns how many get-or-create calls for kind (one of catalog.Primitives) were
// refused a name of their own by the cardinality guard.
func (r *Registry) OverflowCount(kind catalog.Primitive) uint64 {
	f, ok := r.families.Load(kind)
	if !ok {
		return 0
	}
	return f.(interface{ overflowed() uint64 }).overflowed()
}

// familyOf returns the registry's family of primitives of type T for kind, creating it on first use.
func familyOf[T any](r *Registry, kind catalog.Primitive) *family[T] {
	if f, ok := r.families.Load(kind); ok {
		return f.(*family[T])
	}
	f, _ := r.families.LoadOrStore(kind, &family[T]{kind: kind, limit: r.maxNames, byName: map[string]T{}, idle: r.idle})
	return f.(*family[T])
}

// family is the set of primitives of one kind.
type family[T any] struct {
	kind  catalog.Primitive
	limit int

	mu       sync.RWMutex
	byName   map[string]T // includes the overflow instance once created
	named    int          // entries counted against limit
	snapshot atomic.Pointer[[]Named[T]]
	dirty    atomic.Bool // byName changed since snapshot was built

	overflow atomic.Uint64

	// Idle eviction (registry_evict.go); idle.ttl == 0: off, and marks stays nil.
	idle      idlePolicy
	marks     map[string]*mark // one per named entry (not the overflow instance)
	nextSweep int64            // clock ns of the next due sweep
	evicted   atomic.Uint64
}

// Named is a primitive with its registry name.
type Named[T any] struct {
	Name  string
	Value T
}

// get returns the primitive called name, creating it with create when absent. Once limit names
// exist, an absent name gets the shared overflow instance (created with
// create(catalog.OverflowName)).
func (f *family[T]) get(name string, create func(name string) (T, error)) (T, error) {
	f.mu.RLock()
	v, ok := f.byName[name]
	if ok && f.marks != nil {
		f.touch(name)
	}
	f.mu.RUnlock()
	if ok {
		return v, nil
	}
	if err := checkName(string(f.kind), name); err != nil {
		var zero T
		return zero, err
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.byName[name]; ok {
		f.touch(name)
		return v, nil
	}
	f.sweepIfDue()
	key := name
	if f.named >= f.limit { // (OverflowName itself is refused by checkName)
		f.overflow.Add(1)
		key = catalog.OverflowName
		if v, ok := f.byName[key]; ok {
			return v, nil
		}
	}
	v, err := create(key)
	if err != nil {
		var zero T
		return zero, err
	}
	f.byName[key] = v
	if key != catalog.OverflowName {
		f.named++
		f.marked(key)
	}
	f.publish(key, v)
	return v, nil
}

// publish makes (name, v) visible to all(). Called with mu held. The sorted snapshot that all()
// hands out is rebuilt by the next all(), once for any number of names created since: creating
// a name costs a map insert, not a copy of every name (which, under key churn, would make each
// new key cost O(names)).
func (f *family[T]) publish(string, T) { f.dirty.Store(true) }

// all returns the family's primitives sorted by name, without locking unless names were
// created or evicted since the last call. The slice must not be modified.
func (f *family[T]) all() []Named[T] {
	f.trySweep()
	if f.dirty.Load() {
		f.mu.Lock()
		f.rebuild()
		f.mu.Unlock()
	}
	return f.all0()
}

// rebuild replaces the snapshot by the sorted entries of byName when dirty. Called with mu
// held; readers of the old snapshot keep it.
func (f *family[T]) rebuild() {
	if !f.dirty.Load() {
		return
	}
	next := make([]Named[T], 0, len(f.byName))
	for name, v := range f.byName {
		next = append(next, Named[T]{Name: name, Value: v})
	}
	slices.SortFunc(next, func(a, b Named[T]) int { return strings.Compare(a.Name, b.Name) })
	f.snapshot.Store(&next)
	f.dirty.Store(false)
}

func (f *family[T]) overflowed() uint64 { return f.overflow.Load() }

// lookup returns the primitive called name if it exists.
func (f *family[T]) lookup(name string) (T, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.byName[name]
	return v, ok
}

// MaxNameLen is the longest name, in bytes, a registry accepts (catalog.MaxNameLen).
const MaxNameLen = catalog.MaxNameLen

// checkName returns nil for a name a registry accepts (see the package documentation, Names),
// else a *catalog.ConfigError for primitive naming the value.
func checkName(primitive, name string) error {
	reason := nameProblem(name)
	if reason == "" {
		return nil
	}
	// The name goes into Value only: the error message quotes and truncates it there.
	return &catalog.ConfigError{Primitive: primitive, Field: "name", Value: name, Reason: reason}
}

// nameProblem says what is wrong with name, or "": catalog's character policy, and the overflow
// instance's name is reserved.
func nameProblem(name string) string {
	if name == catalog.OverflowName {
		return "is reserved for the instance the cardinality guard maps refused names to"
	}
	if reason := catalog.NameProblem(name); reason != "" {
		return reason + " (use SanitizeName for names taken from traffic)"
	}
	return ""
}

// SanitizeName maps s, a name taken from traffic (a host, a key function's result), to a name a
// registry accepts: each byte that is not part of valid UTF-8 and each character the policy
// refuses (catalog.NameRune: control, format and separator characters) becomes U+FFFD (the
// replacement character), the reserved catalog.OverflowName becomes U+FFFD followed by its
// remaining characters, and the result is cut to at most [MaxNameLen] bytes, on a character
// boundary. An acceptable s is returned unchanged, without allocating; "" stays ""
// (which no registry accepts). Distinct inputs may map to one name — for instance two hosts that
// differ only after their first MaxNameLen bytes — and then share one set of primitives.
func SanitizeName(s string) string {
	if len(s) <= MaxNameLen && nameProblem(s) == "" {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), MaxNameLen))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if !catalog.NameRune(r) || (i == size && s == catalog.OverflowName) {
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > MaxNameLen {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
