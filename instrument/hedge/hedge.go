// Package hedge sends hedged requests: when a call's first attempt has not answered after a
// delay, it starts another attempt of the same call; the first acceptable result wins and the
// other attempts are cancelled. Hedging cuts the tail latency that a few slow servers, GC pauses
// or lost packets add, for a few percent more requests.
//
// The delay is either fixed (Config.Delay) or, by default, a quantile (Config.Quantile, p95) of
// the recent latencies of first attempts, never below Config.MinDelay — so only the slowest few
// percent of calls are hedged, whatever the dependency's normal latency is. Until
// Config.Window/2 latencies have been seen, an adaptive hedge does not hedge.
//
// Only calls that may run more than once are hedged: Config.Idempotent for every call, or a call
// whose context says so ([WithIdempotent]; instrument/httpx and instrument/grpcx set it from their
// idempotency rules). Other calls run once, as if there were no hedge.
//
// Every hedge spends a token of a budget (Config.Budget): in a pipeline, the dependency's retry
// budget, so retries and hedges of one dependency draw on one budget and neither can add the load
// the other has spent; standalone, a budget of the hedge's own that lets at most MaxExtraRatio
// (10%) of calls start a hedge. A refused hedge is counted (outcome budget_denied) and the call
// goes on with the attempts it has.
//
// Every call is counted once, and every hedge it starts once, by its outcome
// (catalog.HedgeOutcome): won, lost (it failed), cancelled (another attempt won while it ran) or
// budget_denied. [Hedge.Snapshot] reads them and the delay in use; the extra load hedging adds is
// (won + lost + cancelled) / calls.
//
// Two ways to use it:
//
//	err := h.Do(ctx, func(ctx context.Context) error { ... })                   // closure
//	v, err := hedge.Call(ctx, h, func(ctx context.Context) (T, error) { ... }) // generic
//
// The function must return promptly once its context is cancelled: that is how losing attempts
// stop. The first attempt runs on the caller's goroutine; hedges run on goroutines of their own
// and end when their function returns. The calls of a hedge share one timer: they wait for
// their hedge in a queue in the order they are due, and the timer fires for the head. A call
// that ends before the delay costs one small allocation (its first attempt's context,
// cancelable on demand), one clock read (three with an adaptive delay), joining and leaving the
// queue under its lock, and a few atomic adds: no goroutine, no channel, no timer of its own.
package hedge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Defaults of a zero Config.
const (
	DefaultQuantile      = 0.95
	DefaultMinDelay      = time.Millisecond
	DefaultWindow        = 200
	DefaultMaxHedges     = 1
	DefaultMaxExtraRatio = 0.1
)

// Limits of a Config.
const (
	maxHedges = 10
	minWindow = 20
	maxWindow = 1 << 16
)

// Config configures a [Hedge]. The zero Config is a working default: one hedge after the p95 of
// the last 200 first-attempt latencies (at least 1 ms), for calls whose context says they are
// idempotent, within a budget of 10% extra calls. Negative or impossible values make [New] return
// a [*ConfigError] naming the field and its value.
type Config struct {
	// Delay is a fixed hedge delay. 0 (the default) makes the delay adaptive: the Quantile of
	// recent first-attempt latencies, never below MinDelay.
	Delay time.Duration
	// Quantile of the recent first-attempt latencies used as the adaptive delay, in (0, 1)
	// (default 0.95: about 5% of calls are hedged).
	Quantile float64
	// MinDelay is the floor of the adaptive delay (default 1 ms).
	MinDelay time.Duration
	// Window is how many recent first-attempt latencies the adaptive delay follows (default 200,
	// in [20, 65536]).
	Window int
	// MaxHedges is how many hedges one call may start, one Delay apart (default 1, at most 10).
	MaxHedges int
	// Idempotent says every call may run more than once safely. Without it, a call is hedged
	// only when its context says so ([WithIdempotent]).
	Idempotent bool
	// Budget is spent by every hedge. nil gives the hedge a budget of its own that lets at most
	// MaxExtraRatio of calls start a hedge. A registry pipeline passes the dependency's retry.
	Budget Budget
	// MaxExtraRatio is the share of calls the hedge's own budget lets start a hedge (default
	// 0.1, in (0, 1]); it applies only without Budget.
	MaxExtraRatio float64
	// Accept reports whether an attempt's error ends the call: nil means the default, which
	// accepts success and every error that is not a failure of the dependency (business errors
	// marked with classify.Business, and answers a classify.VerdictError calls not failed).
	Accept func(error) bool
	// Clock times the delay and the latencies. nil means the wall clock.
	Clock clock.Clock
}

// Budget is what hedges spend: one token per hedge. *retry.Retry implements it with its retry
// budget (SpendToken), so retries and hedges of one dependency share one budget.
type Budget interface {
	// SpendToken takes a token and reports whether it got one.
	SpendToken() bool
}

// ConfigError is the error of an invalid configuration: catalog.ConfigError with Primitive
// "hedge", the hedge's name, the field and the rejected value. Inspect it with errors.As.
type ConfigError = catalog.ConfigError

func (c Config) validate(name string) error {
	bad := func(field string, v any, reason string) error {
		return &ConfigError{Primitive: string(catalog.Hedge), Name: name, Field: field, Value: v, Reason: reason}
	}
	switch {
	case c.Delay < 0:
		return bad("Delay", c.Delay, "must not be negative (0 makes the delay adaptive)")
	case math.IsNaN(c.Quantile) || c.Quantile < 0 || c.Quantile >= 1:
		return bad("Quantile", c.Quantile, "must be in (0, 1), such as 0.95")
	case c.MinDelay < 0:
		return bad("MinDelay", c.MinDelay, "must not be negative")
	case c.Window != 0 && (c.Window < minWindow || c.Window > maxWindow):
		return bad("Window", c.Window, fmt.Sprintf("must be in [%d, %d]", minWindow, maxWindow))
	case c.MaxHedges < 0 || c.MaxHedges > maxHedges:
		return bad("MaxHedges", c.MaxHedges, fmt.Sprintf("must be in [1, %d] (0 takes the default, 1)", maxHedges))
	case math.IsNaN(c.MaxExtraRatio) || c.MaxExtraRatio < 0 || c.MaxExtraRatio > 1:
		return bad("MaxExtraRatio", c.MaxExtraRatio, "must be in (0, 1]")
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Quantile = cmp.Or(c.Quantile, DefaultQuantile)
	c.MinDelay = cmp.Or(c.MinDelay, DefaultMinDelay)
	c.Window = cmp.Or(c.Window, DefaultWindow)
	c.MaxHedges = cmp.Or(c.MaxHedges, DefaultMaxHedges)
	c.MaxExtraRatio = cmp.Or(c.MaxExtraRatio, DefaultMaxExtraRatio)
	return c
}

// Hedge hedges the calls of one dependency. Create it with [New]; it is safe for concurrent use.
type Hedge struct {
	name       string
	cfg        Config // with defaults
	clk        clock.Clock
	accept     func(error) bool
	budget     Budget
	delay      *estimator // nil for a fixed delay
	calls      atomic.Uint64
	outcomes   [catalog.NumHedgeOutcomes]atomic.Uint64
	sched      scheduler
	base       time.Time // the origin of mono
	idempotent bool
	realClock  bool // the wall clock: mono reads only its monotonic part
}

// New returns a hedge called name (usually the dependency) configured by cfg.
func New(name string, cfg Config) (*Hedge, error) {
	if err := cfg.validate(name); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	h := &Hedge{
		name:       name,
		cfg:        cfg,
		clk:        clock.Or(cfg.Clock),
		accept:     cfg.Accept,
		budget:     cfg.Budget,
		idempotent: cfg.Idempotent,
	}
	_, h.realClock = h.clk.(clock.Real)
	h.base = h.clk.Now()
	h.sched.h = h
	if cfg.Accept == nil {
		h.accept = Acceptable
	}
	if h.budget == nil {
		h.budget = newOwnBudget(cfg.MaxExtraRatio, &h.calls)
	}
	if cfg.Delay == 0 {
		h.delay = newEstimator(cfg.Quantile, cfg.MinDelay, cfg.Window)
	}
	return h, nil
}

// Name returns the hedge's name.
func (h *Hedge) Name() string { return h.name }

// Acceptable is the default Config.Accept: success, a business error (classify.IsBusiness) and
// an error whose classify.VerdictError verdict is not a failure end a call; any other error is a
// failed attempt that a hedge may still beat. (The caller's own cancellation always ends it.)
func Acceptable(err error) bool {
	if err == nil || classify.IsBusiness(err) {
		return true
	}
	var v classify.VerdictError
	if errors.As(err, &v) {
		return !v.Verdict(true).Failed()
	}
	return false
}

// idempotentKey is the context key of WithIdempotent.
type idempotentKey struct{}

// WithIdempotent returns a context saying whether the call made with it may run more than once
// safely; a hedge hedges such a call even without Config.Idempotent, and never hedges one
// marked false.
func WithIdempotent(ctx context.Context, idempotent bool) context.Context {
	return context.WithValue(ctx, idempotentKey{}, idempotent)
}

func (h *Hedge) hedgeable(ctx context.Context) bool {
	if v, ok := ctx.Value(idempotentKey{}).(bool); ok {
		return v
	}
	return h.idempotent
}

// currentDelay returns the delay before a hedge, and false while an adaptive hedge is warming up.
func (h *Hedge) currentDelay() (time.Duration, bool) {
	if h.delay == nil {
		return h.cfg.Delay, true
	}
	return h.delay.current()
}

// Snapshot is a point-in-time read of a hedge's counts.
type Snapshot struct {
	// Calls is the number of calls made through the hedge.
	Calls uint64
	// Hedges counts the hedges by outcome (indexed by catalog.HedgeOutcome).
	Hedges [catalog.NumHedgeOutcomes]uint64
	// Delay is the hedge delay in use; 0 while an adaptive hedge is warming up.
	Delay time.Duration
}

// Ran returns the number of hedges that ran and ended: won, lost and cancelled (a hedge is
// counted when it ends).
func (s Snapshot) Ran() uint64 {
	return s.Hedges[catalog.HedgeWon] + s.Hedges[catalog.HedgeLost] + s.Hedges[catalog.HedgeCancelled]
}

// Snapshot reads the hedge's counts without blocking calls.
func (h *Hedge) Snapshot() Snapshot {
	var s Snapshot
	for i := range s.Hedges {
		s.Hedges[i] = h.outcomes[i].Load()
	}
	s.Calls = h.calls.Load()
	if d, ok := h.currentDelay(); ok {
		s.Delay = d
	}
	return s
}

// Do runs fn, hedged as the package documentation describes, and returns the accepted attempt's
// error (or the first attempt's, when no attempt was accepted).
func (h *Hedge) Do(ctx context.Context, fn func(context.Context) error) error {
	delay, ok := h.enter(ctx)
	if !ok {
		if h.delay == nil {
			return fn(ctx)
		}
		start := h.mono()
		err := fn(ctx)
		h.observe(start, false)
		return err
	}
	r, start := startRace[struct{}](h, ctx, delay, nil, fn, nil)
	_, err := r.run(start)
	return err
}

// Call runs fn, hedged as the package documentation describes, and returns the accepted
// attempt's result (or the first attempt's, when no attempt was accepted).
func Call[T any](ctx context.Context, h *Hedge, fn func(context.Context) (T, error)) (T, error) {
	return CallWith(ctx, h, fn, nil)
}

// CallWith is [Call] with a discard function, which receives the value of every attempt whose
// result the call does not return (an HTTP response to close); nil discards nothing.
func CallWith[T any](ctx context.Context, h *Hedge, fn func(context.Context) (T, error), discard func(T)) (T, error) {
	delay, ok := h.enter(ctx)
	if !ok {
		if h.delay == nil {
			return fn(ctx)
		}
		start := h.mono()
		v, err := fn(ctx)
		h.observe(start, false)
		return v, err
	}
	r, start := startRace(h, ctx, delay, fn, nil, discard)
	return r.run(start)
}

// enter counts a call and returns its hedge delay, and whether it is hedged: idempotent, with
// a delay known.
func (h *Hedge) enter(ctx context.Context) (time.Duration, bool) {
	h.calls.Add(1) // a deposit in the hedge's own budget, if it has one
	d, ok := h.currentDelay()
	return d, ok && h.hedgeable(ctx)
}

// mono returns the time on the hedge's clock since the hedge was made. On the wall clock it
// reads the monotonic clock only (half a time.Now).
func (h *Hedge) mono() time.Duration {
	if h.realClock {
		return time.Since(h.base)
	}
	return h.clk.Now().Sub(h.base)
}

// observe feeds the latency of a first attempt that started at start (on [Hedge.mono]) to the
// adaptive delay; cut says a hedge won and cancelled the attempt. Only for an adaptive delay.
func (h *Hedge) observe(start time.Duration, cut bool) {
	h.delay.observe(h.mono()-start, cut)
}

func (h *Hedge) count(o catalog.HedgeOutcome) { h.outcomes[o].Add(1) }
