// Package limit protects a dependency from more concurrent calls than it can serve, without
// anyone having to guess that number: an adaptive concurrency limiter whose limit follows the
// measured latency against a no-load baseline, and a client-side throttle that sheds load locally
// when the dependency keeps refusing it.
//
// # Limiter
//
// A [Limiter] admits at most Limit() calls at a time, like a bulkhead whose size moves. Every
// admitted call reports how long it took (or that it was dropped: timed out, or refused by the
// dependency); at the end of each window — about one round trip, max(MinSamples, limit) samples —
// the limiter compares the window's average latency with its baseline and moves the limit:
//
//   - Vegas (the default): the calls queued at the dependency are estimated as
//     limit × (1 − baseline/sample). Fewer than α = 2.5·log10(limit) queued: the limit grows (by
//     3·log10(limit) while at most log10(limit) queue, else by log10(limit)); more than
//     β = 5·log10(limit) queued: it shrinks by log10(limit); in between it holds. The
//     dependency's queue therefore stays at a few calls, and its latency close to the baseline,
//     whatever the offered load.
//   - AIMD: the limit grows by one per window while the sample stays below Tolerance × baseline,
//     and is multiplied by Backoff when it does not.
//
// Under both, a window with dropped calls multiplies the limit by Backoff, and the limit stays
// within [MinLimit, MaxLimit].
//
// Two guards keep the limit honest during long incidents:
//
//   - The baseline moves down at once to a lower window sample, but up only slowly (⅛ of the
//     difference per window) and only from windows where the limiter's own concurrency cannot
//     explain the latency: the peak in-flight stayed below half the limit. While callers press
//     against the limit — an incident, however long — the baseline does not move, so the limiter
//     never learns that slow is normal; once load is light again, a dependency that really became
//     slower is followed. (A dependency that is permanently slower under full load keeps the
//     limit low: the limiter cannot tell that from an incident, and says so through its metrics —
//     the limit pinned low, the sample far above the baseline.)
//   - The limit moves only in windows that used it: when the peak in-flight stayed below half
//     the limit, the caller, not the dependency, set the pace, and a larger limit would be a
//     promise nobody tested. Under moderate overload the sample rises above the baseline and the
//     queue estimate stops the growth, so the limit does not creep up.
//
// When the limit is reached, a call is rejected at once, or, with MaxWait > 0, waits in a short
// FIFO queue (at most MaxQueue callers; 0 means as many as the current limit) for up to MaxWait,
// no longer than its context allows. Rejections fail with an error for which
// errors.Is(err, [ErrLimited]) holds (a [*LimitedError] with the reason and a retry hint); they
// are stormwatch's own refusals: never retried by the pipeline and never counted as failures by a
// circuit breaker.
//
// Three ways to use it, as for the bulkhead:
//
//	err := l.Do(ctx, func(ctx context.Context) error { ... })
//	v, err := limit.Call(ctx, l, func(ctx context.Context) (T, error) { ... })
//	p, err := l.Acquire(ctx); if err == nil { err = call(ctx); p.Done(err) } // two-step
//
// The path below the limit is a few atomic operations; it allocates nothing. Only a fraction of
// the calls is timed — one in 2^k, 2^k the largest power of two (at most 64) that still leaves
// MinSamples/2 timed calls per window, one in four at the default limit of 20 — and their
// average latency is the window's sample; the wall clock is read through its monotonic part
// alone. A mutex is taken only by callers that queue and once per window to move the limit.
//
// # Throttle
//
// A [Throttle] implements the client-side adaptive throttling of Google's SRE book: over a
// sliding window (2 minutes by default) it counts the requests the client wanted to send and the
// ones the dependency accepted, and rejects a new request locally with probability
// max(0, (requests − K·accepts) / (requests + 1)), K = 2 by default. While the dependency accepts
// at least 1/K of the requests nothing is throttled; beyond that the client stops sending what
// would be refused anyway.
package limit

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// ErrLimited is the sentinel of limiter and throttle rejections: errors.Is(err, ErrLimited).
var ErrLimited = errors.New("concurrency limit reached")

// Algorithm selects how the limit follows latency.
type Algorithm uint8

// The algorithms.
const (
	// Vegas estimates the calls queued at the dependency from the latency against the baseline and
	// keeps that queue short. The default.
	Vegas Algorithm = iota
	// AIMD adds one per window while latency stays within Tolerance × baseline and multiplies by
	// Backoff otherwise: simpler, slower, lets latency rise up to the tolerance.
	AIMD
)

// String returns the algorithm's name.
func (a Algorithm) String() string {
	switch a {
	case Vegas:
		return "vegas"
	case AIMD:
		return "aimd"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// Defaults of a zero Config.
const (
	DefaultInitialLimit = 20
	DefaultMinLimit     = 1
	DefaultMaxLimit     = 1000
	DefaultMinSamples   = 10
	DefaultBackoff      = 0.9
	DefaultTolerance    = 2.0
)

// Config configures a [Limiter]. The zero Config is a working default: Vegas, initial limit 20,
// bounds [1, 1000], no queue, the wall clock. Invalid values make [New] return a
// [*catalog.ConfigError] naming the field and its value.
type Config struct {
	// Algorithm is Vegas (the default) or AIMD.
	Algorithm Algorithm
	// InitialLimit is the limit before any measurement (default 20, clamped into the bounds is an
	// error: it must lie within [MinLimit, MaxLimit]).
	InitialLimit int
	// MinLimit and MaxLimit bound the limit (defaults 1 and 1000).
	MinLimit, MaxLimit int
	// MinSamples is the fewest samples a window holds before the limit moves (default 10); a
	// window also holds at least as many samples as the current limit (about one round trip).
	MinSamples int
	// Backoff multiplies the limit after a window with dropped calls, and after an AIMD window
	// above tolerance (default 0.9; in (0, 1)).
	Backoff float64
	// Tolerance is AIMD's latency threshold as a multiple of the baseline (default 2; > 1).
	Tolerance float64
	// MaxWait is how long a caller waits for a permit when the limit is reached. 0 (the default)
	// rejects at once; negative values are invalid.
	MaxWait time.Duration
	// MaxQueue caps the callers waiting (only with MaxWait > 0). 0 means the current limit.
	MaxQueue int
	// Clock measures latencies and runs the MaxWait timer. nil means the wall clock.
	Clock clock.Clock
	// Events receives a Rejection event (Primitive catalog.Limiter) for every rejected call.
	Events *events.Hub
}

func (c *Config) validate(name string) error {
	bad := func(field string, value any, reason string) error {
		return &catalog.ConfigError{Primitive: string(catalog.Limiter), Name: name, Field: field, Value: value, Reason: reason}
	}
	switch {
	case name == "":
		return bad("name", "", "must not be empty")
	case c.Algorithm > AIMD:
		return bad("Algorithm", c.Algorithm, "must be Vegas or AIMD")
	case c.InitialLimit < 0 || c.InitialLimit > math.MaxInt32:
		return bad("InitialLimit", c.InitialLimit, "must be positive (0 means the default, 20)")
	case c.MinLimit < 0 || c.MinLimit > math.MaxInt32:
		return bad("MinLimit", c.MinLimit, "must be positive (0 means the default, 1)")
	case c.MaxLimit < 0 || c.MaxLimit > math.MaxInt32:
		return bad("MaxLimit", c.MaxLimit, "must be positive (0 means the default, 1000)")
	case c.MinSamples < 0:
		return bad("MinSamples", c.MinSamples, "must not be negative (0 means the default, 10)")
	case c.Backoff < 0 || c.Backoff >= 1 || math.IsNaN(c.Backoff):
		return bad("Backoff", c.Backoff, "must lie in (0, 1) (0 means the default, 0.9)")
	case c.Tolerance != 0 && !(c.Tolerance > 1) || math.IsInf(c.Tolerance, 0):
		return bad("Tolerance", c.Tolerance, "must be a finite number above 1 (0 means the default, 2)")
	case c.MaxWait < 0:
		return bad("MaxWait", c.MaxWait, "must not be negative (0 rejects at once)")
	case c.MaxQueue < 0 || c.MaxQueue > math.MaxInt32:
		return bad("MaxQueue", c.MaxQueue, "must not be negative (0 means the current limit)")
	}
	if c.MinLimit == 0 {
		c.MinLimit = DefaultMinLimit
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = max(DefaultMaxLimit, c.MinLimit)
	}
	if c.MinLimit > c.MaxLimit {
		return bad("MinLimit", c.MinLimit, fmt.Sprintf("must not exceed MaxLimit (%d)", c.MaxLimit))
	}
	if c.InitialLimit == 0 {
		c.InitialLimit = min(max(DefaultInitialLimit, c.MinLimit), c.MaxLimit)
	}
	if c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit {
		return bad("InitialLimit", c.InitialLimit, fmt.Sprintf("must lie within [MinLimit, MaxLimit] = [%d, %d]", c.MinLimit, c.MaxLimit))
	}
	if c.MinSamples == 0 {
		c.MinSamples = DefaultMinSamples
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	c.Clock = clock.Or(c.Clock)
	return nil
}

// LimitedError is the error of a call refused by a [Limiter] or a [Throttle]. It satisfies
// errors.Is(err, ErrLimited) and reports Rejected() == true: stormwatch's own refusal, never
// retried by the pipeline, never a breaker failure. Treat it as read-only.
type LimitedError struct {
	Primitive catalog.Primitive   // catalog.Limiter or catalog.Throttle
	Name      string              // the limiter's or throttle's name
	Reason    catalog.LimitReason // why the limiter refused (not meaningful for the throttle)
	Limit     int                 // the limit when the call was refused (limiter only)
	// RetryAfter is a hint: about one baseline round trip for the limiter (a permit is likely to
	// be free by then), the throttle's window for the throttle.
	RetryAfter time.Duration
	Err        error // the caller's context error when its deadline ended the wait; else nil
}

// Error describes the rejection.
func (e *LimitedError) Error() string {
	if e.Primitive == catalog.Throttle {
		return fmt.Sprintf("throttle %q: request shed locally, the dependency refuses most requests", e.Name)
	}
	msg := fmt.Sprintf("limiter %q: concurrency limit %d reached (%s)", e.Name, e.Limit, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is [ErrLimited].
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }

// Unwrap returns the caller's context error when its deadline ended the wait, else nil.
func (e *LimitedError) Unwrap() error { return e.Err }

// Rejected reports true: the call was refused by stormwatch itself, without running.
func (e *LimitedError) Rejected() bool { return true }

// FallbackCause returns catalog.CauseBulkheadFull: a fallback that answers a full bulkhead
// answers a reached concurrency limit too (both refuse a call because too many run).
func (e *LimitedError) FallbackCause() (catalog.Cause, bool) { return catalog.CauseBulkheadFull, true }

// RetryAfterHint returns RetryAfter.
func (e *LimitedError) RetryAfterHint() time.Duration { return e.RetryAfter }
