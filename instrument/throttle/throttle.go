// Package throttle sheds load on the client when a dependency keeps refusing it: the adaptive
// client-side throttling of Google's SRE book ("Handling Overload").
//
// A [Throttle] counts, over a sliding window (2 minutes by default), the requests the client
// wanted to send and the ones the dependency accepted, and rejects a new request locally with
// probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// K = 2 by default: nothing is shed while the dependency accepts at least half of what is sent;
// beyond that the client stops spending the dependency's (and its own) resources on requests
// that would be refused anyway. Requests rejected locally count as requests, so the probability
// keeps rising while the dependency refuses, and falls as soon as it accepts again. A smaller K
// sheds earlier; a larger K lets more doomed requests through.
//
// A sent request counts as refused when its error says the dependency is overloaded or
// unavailable (HTTP 429 and 5xx, timeouts, connection refused, gRPC UNAVAILABLE,
// RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED); any other outcome, including ordinary errors and the
// caller's cancellation, counts as accepted. Config.Refused replaces that rule.
//
// A local rejection fails with an error for which errors.Is(err, [ErrThrottled]) holds (a
// [*ThrottledError]); it is stormwatch's own refusal, never retried by the pipeline and never a
// breaker failure. The counters are atomic and the window rotates without locks; a decision
// costs a handful of atomic loads and one random draw.
package throttle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// ErrThrottled is the sentinel of local rejections: errors.Is(err, ErrThrottled).
var ErrThrottled = errors.New("throttled: the dependency refuses most requests")

// Defaults of a zero Config.
const (
	DefaultWindow = 2 * time.Minute
	DefaultK      = 2.0
	// Buckets is the number of slots of the sliding window.
	Buckets = 12
)

// Config configures a [Throttle]. The zero Config is a working default.
type Config struct {
	// K is the multiplier of accepts (default 2; at least 1): the throttle starts shedding when
	// the dependency accepts less than 1/K of the requests.
	K float64
	// Window is the sliding window over which requests and accepts are counted (default 2m; at
	// least 1s). It moves in steps of Window/12.
	Window time.Duration
	// Refused reports whether a sent request's error means the dependency refused it. nil means
	// the default rule (see the package documentation).
	Refused func(error) bool
	// Clock places requests in the window. nil means the wall clock.
	Clock clock.Clock
	// Rand draws the rejection decisions. nil means math/rand/v2.
	Rand clock.Rand
	// Events receives a Rejection event (Primitive catalog.Throttle) for every local rejection.
	Events *events.Hub
}

// ThrottledError is the error of a request rejected locally. It satisfies
// errors.Is(err, ErrThrottled) and reports Rejected() == true. Treat it as read-only.
type ThrottledError struct {
	Name        string  // the throttle's name
	Probability float64 // the rejection probability when it was refused
	// RetryAfter is a hint: one step of the sliding window, the soonest the probability can fall
	// by more than what new accepts bring.
	RetryAfter time.Duration
}

// Error describes the rejection.
func (e *ThrottledError) Error() string {
	return fmt.Sprintf("throttle %q: request shed locally (rejection probability %.2f): the dependency refuses most requests", e.Name, e.Probability)
}

// Is reports whether target is [ErrThrottled].
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// Rejected reports true: the request was refused by stormwatch itself, without being sent.
func (e *ThrottledError) Rejected() bool { return true }

// RetryAfterHint returns RetryAfter.
func (e *ThrottledError) RetryAfterHint() time.Duration { return e.RetryAfter }

type bucket struct {
	epoch    atomic.Int64 // the window step this bucket counts; older counts are stale
	requests atomic.Uint64
	accepts  atomic.Uint64
}

// Throttle is a named client-side throttle. Create it with [New]; it is safe for concurrent use.
type Throttle struct {
	name    string
	cfg     Config
	step    time.Duration
	refused func(error) bool
	buckets [Buckets]bucket
	calls   [catalog.NumThrottleKinds]atomic.Uint64
}

// New returns a throttle called name, configured by cfg (the zero Config is a working default).
// An invalid field is a [*catalog.ConfigError] naming it and its value.
func New(name string, cfg Config) (*Throttle, error) {
	bad := func(field string, value any, reason string) error {
		return &catalog.ConfigError{Primitive: string(catalog.Throttle), Name: name, Field: field, Value: value, Reason: reason}
	}
	switch {
	case name == "":
		return nil, bad("name", "", "must not be empty")
	case cfg.K != 0 && !(cfg.K >= 1) || math.IsInf(cfg.K, 0):
		return nil, bad("K", cfg.K, "must be a finite number of at least 1 (0 means the default, 2)")
	case cfg.Window != 0 && cfg.Window < time.Second:
		return nil, bad("Window", cfg.Window, "must be at least 1s (0 means the default, 2m)")
	}
	if cfg.K == 0 {
		cfg.K = DefaultK
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	cfg.Clock, cfg.Rand = clock.Or(cfg.Clock), clock.RandOr(cfg.Rand)
	t := &Throttle{name: name, cfg: cfg, step: cfg.Window / Buckets, refused: cfg.Refused}
	if t.refused == nil {
		t.refused = Refused
	}
	return t, nil
}

// Refused is the default rule: the error says the dependency is overloaded or unavailable.
func Refused(err error) bool {
	if err == nil {
		return false
	}
	switch classify.ClassifyError(err, true).Class {
	case catalog.ClassHTTP429, catalog.ClassHTTP5xx, catalog.ClassTimeout, catalog.ClassConnRefused,
		catalog.ClassGRPCUnavailable, catalog.ClassGRPCResourceExhausted, catalog.ClassGRPCDeadline:
		return true
	}
	return false
}

// Name returns the throttle's name.
func (t *Throttle) Name() string { return t.name }

// Config returns the throttle's configuration with defaults applied.
func (t *Throttle) Config() Config { return t.cfg }

// slot returns the bucket of the current window step, reset if it held an older step.
func (t *Throttle) slot() *bucket {
	epoch := t.cfg.Clock.Now().UnixNano() / int64(t.step)
	b := &t.buckets[epoch%Buckets]
	if old := b.epoch.Load(); old != epoch && b.epoch.CompareAndSwap(old, epoch) {
		b.requests.Store(0) // counts added by a racing caller in between are lost: a rounding
		b.accepts.Store(0)
	}
	return b
}

// counts sums the window's requests and accepts.
func (t *Throttle) counts() (requests, accepts float64) {
	epoch := t.cfg.Clock.Now().UnixNano() / int64(t.step)
	for i := range t.buckets {
		b := &t.buckets[i]
		if e := b.epoch.Load(); e > epoch-Buckets && e <= epoch {
			requests += float64(b.requests.Load())
			accepts += float64(b.accepts.Load())
		}
	}
	return requests, accepts
}

// Probability returns the current rejection probability, max(0, (requests − K·accepts) /
// (requests + 1)) over the window.
func (t *Throttle) Probability() float64 {
	r, a := t.counts()
	return max(0, (r-t.cfg.K*a)/(r+1))
}

// Allow decides whether a request may be sent and counts it as a request. When it returns nil,
// report the outcome with [Throttle.Record]; otherwise the error is a [*ThrottledError].
func (t *Throttle) Allow(ctx context.Context) error {
	p := t.Probability()
	t.slot().requests.Add(1)
	if p > 0 && t.cfg.Rand.Float64() < p {
		t.calls[catalog.ThrottleThrottled].Add(1)
		if h := t.cfg.Events; h != nil && h.Rejections.Active() {
			h.Rejections.Emit(events.Rejection{Primitive: catalog.Throttle, Name: t.name, At: t.cfg.Clock.Now(), Context: ctx})
		}
		return &ThrottledError{Name: t.name, Probability: p, RetryAfter: t.step}
	}
	return nil
}

// Record reports the outcome of a request that Allow let through: err is its error (nil for a
// success), judged by Config.Refused.
func (t *Throttle) Record(err error) {
	if t.refused(err) {
		t.calls[catalog.ThrottleRefused].Add(1)
		return
	}
	t.calls[catalog.ThrottleAccepted].Add(1)
	t.slot().accepts.Add(1)
}

// Do sends fn unless the throttle sheds it, and records its outcome.
func (t *Throttle) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := t.Allow(ctx); err != nil {
		return err
	}
	err := fn(ctx)
	t.Record(err)
	return err
}

// Call is Do for a function with a result.
func Call[T any](ctx context.Context, t *Throttle, fn func(context.Context) (T, error)) (T, error) {
	if err := t.Allow(ctx); err != nil {
		var zero T
		return zero, err
	}
	v, err := fn(ctx)
	t.Record(err)
	return v, err
}

// Snapshot is a point-in-time reading of a throttle.
type Snapshot struct {
	Probability       float64 // the current rejection probability
	Requests, Accepts float64 // the window's counts, the formula's inputs
	// Calls counts decisions and outcomes, indexed by catalog.ThrottleKind: accepted and refused
	// (sent, by the dependency's answer) and throttled (shed locally).
	Calls [catalog.NumThrottleKinds]uint64
}

// Snapshot reads the throttle's state now.
func (t *Throttle) Snapshot() Snapshot {
	r, a := t.counts()
	sn := Snapshot{Probability: max(0, (r-t.cfg.K*a)/(r+1)), Requests: r, Accepts: a}
	for i := range t.calls {
		sn.Calls[i] = t.calls[i].Load()
	}
	return sn
}
