// Package instrument holds stormwatch's resilience primitives (in its subpackages breaker,
// retry, bulkhead, timeout, fallback, classify, httpx), the [Registry] that hands them out by
// name, and the pipeline that composes them.
//
// Nothing here imports Prometheus: primitives keep their counts in atomics, and the collector
// package turns a Registry into a prometheus.Collector that reads them at scrape time.
package instrument

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
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
}

// ConfigError is the error of an invalid registry option or pipeline configuration:
// catalog.ConfigError, stormwatch's one configuration error. The primitives' own packages
// report theirs with the same type. Inspect it with errors.As.
type ConfigError = catalog.ConfigError

// RegistryOption configures a Registry.
type RegistryOption func(*Registry) error

// WithMaxNames sets the cardinality guard: at most n distinct names per primitive kind (n ≥ 1).
func WithMaxNames(n int) RegistryOption {
	return func(r *Registry) error {
		if n < 1 {
			return &ConfigError{Primitive: string(catalog.Registry), Field: "MaxNames", Value: n, Reason: "must be at least 1"}
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
			return &ConfigError{Primitive: string(catalog.Registry), Field: "Events", Reason: "the hub must not be nil"}
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

// Overflowed returns how many get-or-create calls for kind (one of catalog.Primitives) were
// refused a name of their own by the cardinality guard.
func (r *Registry) Overflowed(kind catalog.Primitive) uint64 {
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
	f, _ := r.families.LoadOrStore(kind, &family[T]{kind: kind, limit: r.maxNames, byName: map[string]T{}})
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

	overflow atomic.Uint64
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
	f.mu.RUnlock()
	if ok {
		return v, nil
	}
	if name == "" {
		var zero T
		return zero, &ConfigError{Primitive: string(f.kind), Field: "name", Value: "", Reason: "must not be empty"}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.byName[name]; ok {
		return v, nil
	}
	key := name
	if f.named >= f.limit || name == catalog.OverflowName {
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
	}
	f.publish(key, v)
	return v, nil
}

// publish inserts (name, v) into a copy of the sorted snapshot that all() hands out, so readers
// never lock and never see a partial update. Called with mu held.
func (f *family[T]) publish(name string, v T) {
	var cur []Named[T]
	if s := f.snapshot.Load(); s != nil {
		cur = *s
	}
	i := sort.Search(len(cur), func(i int) bool { return cur[i].Name >= name })
	next := make([]Named[T], 0, len(cur)+1)
	next = append(next, cur[:i]...)
	next = append(next, Named[T]{Name: name, Value: v})
	next = append(next, cur[i:]...)
	f.snapshot.Store(&next)
}

// all returns the family's primitives sorted by name, without locking. The slice must not be
// modified.
func (f *family[T]) all() []Named[T] {
	if s := f.snapshot.Load(); s != nil {
		return *s
	}
	return nil
}

func (f *family[T]) overflowed() uint64 { return f.overflow.Load() }

// lookup returns the primitive called name if it exists.
func (f *family[T]) lookup(name string) (T, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.byName[name]
	return v, ok
}
