package instrument

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Order says where a [Pipeline]'s circuit breaker sits relative to its retry. The other layers
// never move: the fallback is outermost, and the bulkhead and the timeout wrap each attempt.
type Order int

const (
	// BreakerPerAttempt is the default order, outermost first:
	//
	//	Fallback → Retry → CircuitBreaker → Bulkhead → Timeout → call
	//
	// The breaker sees every real attempt, first and retries alike (the default of resilience4j
	// and Polly too): against a dead dependency it trips after as many failed attempts as its
	// window needs (a threshold of 5 consecutive failures → 5 requests), and once open it stops
	// a retry loop at its next attempt, because the retry never retries the breaker's rejection.
	// The price is the sampling unit: the attempts of one logical call observe the same fault,
	// so the failure rate counts correlated samples and runs higher than the users' failure
	// rate. Each attempt takes its own bulkhead permit, only while it runs.
	BreakerPerAttempt Order = iota
	// BreakerPerCall is the "logical call" order, outermost first:
	//
	//	Fallback → CircuitBreaker → Retry → Bulkhead → Timeout → call
	//
	// The breaker records one outcome per logical call — a call that succeeds on its third
	// attempt is one success — so its failure rate is the users' failure rate, statistically
	// sound for thresholds, dashboards and alerts. The price is speed: it needs threshold ×
	// MaxAttempts requests to trip (5 consecutive failures × 3 attempts = 15 requests), and a
	// retry loop that began while the breaker was closed runs to its end even if the breaker
	// opens meanwhile; a half-open probe is a whole retry loop.
	BreakerPerCall
)

// String returns the order's name.
func (o Order) String() string {
	switch o {
	case BreakerPerAttempt:
		return "breaker_per_attempt"
	case BreakerPerCall:
		return "breaker_per_call"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// PipelineConfig configures a [Pipeline]: one optional configuration per layer (nil = the layer
// is absent) and the breaker's place. The zero PipelineConfig is a pipeline without layers,
// which just calls the function.
type PipelineConfig struct {
	// Order places the circuit breaker inside (default) or outside the retry.
	Order Order
	// Retry configures the retry layer. Its MinAttemptTime defaults to the Timeout layer's limit.
	// Leave AttemptTimeout zero when the Timeout layer is present (it bounds each attempt).
	Retry *retry.Config
	// Breaker configures the circuit breaker. A nil Classify gets breaker.DefaultClassify, which
	// counts failures as package classify does: 4xx responses are not failures. Business errors,
	// stormwatch's rejections and the caller's cancellation are ignored whatever Classify says,
	// as by every breaker. (A breaker that already exists under the name keeps its own
	// classifier.)
	Breaker *breaker.Config
	// Bulkhead configures the concurrency limit of attempts.
	Bulkhead *bulkhead.Config
	// Timeout configures the per-attempt time limit.
	Timeout *timeout.Config
	// Hedge hedges each attempt of an idempotent call (package hedge): after the hedge delay
	// another attempt starts, and the first accepted result wins. It sits between the retry and
	// the breaker, so the breaker, the bulkhead and the timeout see every hedged attempt like any
	// other (a hedge takes a bulkhead permit) and the retry sees one result per attempt; hedges
	// spend the retry's budget, so retries and hedges of the dependency share one budget.
	Hedge *hedge.Config
	// Fallback configures which causes the fallback answers. The fallback function itself is
	// given per call ([CallWithFallback], [Pipeline.DoWithFallback]); calls that give none
	// skip the layer.
	Fallback *fallback.Config
	// Limit configures the adaptive concurrency limit of attempts, and Throttle the client-side
	// throttle; both sit between the breaker and the bulkhead (see pipeline_limit.go's order).
	Limit    *limit.Config
	Throttle *throttle.Config
}

// Validate checks the configuration as [Registry.Pipeline] does, without creating anything: the
// order, the combinations of fields a pipeline refuses, and each layer's own configuration. The
// error is a [*catalog.ConfigError] naming the field and its value.
//
// Validation looks at the structure only and never calls the functions in the configuration
// (RetryIf, Classify…): what they would decide cannot make a pipeline unsafe, because the
// guarantees hold at run time whatever they return — the retry never retries an open breaker, a
// full bulkhead or the caller's cancellation, and the pipeline's breaker never counts those, nor
// a business error, as failures.
func (c PipelineConfig) Validate() error {
	if err := c.validate("pipeline"); err != nil {
		return err
	}
	return c.validateLayers("pipeline")
}

// pipelinePrimitive is the Primitive of a pipeline's configuration errors.
const pipelinePrimitive = "pipeline"

func (c PipelineConfig) validate(name string) error {
	bad := func(field string, value any, reason string) error {
		return &catalog.ConfigError{Primitive: pipelinePrimitive, Name: name, Field: field, Value: value, Reason: reason}
	}
	if err := checkName(pipelinePrimitive, name); err != nil {
		return err
	}
	switch c.Order {
	case BreakerPerAttempt, BreakerPerCall:
	default:
		return bad("Order", int(c.Order), "unknown order (want BreakerPerAttempt or BreakerPerCall)")
	}
	if c.Retry != nil {
		rc := c.Retry
		if rc.AttemptTimeout > 0 && c.Timeout != nil {
			return bad("Retry.AttemptTimeout", rc.AttemptTimeout,
				"the Timeout layer already bounds each attempt; set the per-attempt limit in Timeout only")
		}
	}
	return nil
}

// validateLayers validates each layer's own configuration by building (and dropping) the
// primitive, so that an invalid layer is refused before any layer is registered. A layer's
// *catalog.ConfigError is reported as the pipeline's, its field prefixed by the layer ("Retry.MaxAttempts").
func (c PipelineConfig) validateLayers(name string) error {
	layer := func(field string, err error) error {
		var ce *catalog.ConfigError
		if errors.As(err, &ce) {
			return &catalog.ConfigError{Primitive: pipelinePrimitive, Name: name, Field: field + "." + ce.Field, Value: ce.Value, Reason: ce.Reason}
		}
		return fmt.Errorf("pipeline %q: %s: %w", name, field, err)
	}
	if c.Retry != nil {
		if _, err := retry.New(name, *c.Retry); err != nil {
			return layer("Retry", err)
		}
	}
	if c.Breaker != nil {
		if _, err := breaker.New(name, *c.Breaker); err != nil {
			return layer("Breaker", err)
		}
	}
	if c.Bulkhead != nil {
		if _, err := bulkhead.New(name, *c.Bulkhead); err != nil {
			return layer("Bulkhead", err)
		}
	}
	if c.Timeout != nil {
		if _, err := timeout.New(name, *c.Timeout); err != nil {
			return layer("Timeout", err)
		}
	}
	if c.Fallback != nil {
		if _, err := fallback.New(name, *c.Fallback); err != nil {
			return layer("Fallback", err)
		}
	}
	if c.Limit != nil {
		if _, err := limit.New(name, *c.Limit); err != nil {
			return layer("Limit", err)
		}
	}
	if c.Throttle != nil {
		if _, err := throttle.New(name, *c.Throttle); err != nil {
			return layer("Throttle", err)
		}
	}
	if c.Hedge != nil {
		if _, err := hedge.New(name, *c.Hedge); err != nil {
			return layer("Hedge", err)
		}
	}
	return nil
}

// Pipeline composes a retry, a hedge, a circuit breaker, an adaptive limiter, a throttle, a
// bulkhead, a timeout and a fallback — each optional — around calls to one dependency, in a fixed
// order (see [Order]):
//
//	Fallback → Retry → Hedge → CircuitBreaker → Limiter → Throttle → Bulkhead → Timeout → call   (default)
//	Fallback → CircuitBreaker → Retry → Hedge → Limiter → Throttle → Bulkhead → Timeout → call   (BreakerPerCall)
//
// Guarantees, whatever the configuration (RetryIf, Classify and the other functions in it
// included):
//   - the retry never retries stormwatch's own rejections (an open breaker, a full bulkhead:
//     class "rejected") nor the caller's cancellation;
//   - a business error (classify.Business) means the same in every order: never retried by the
//     retry whatever its RetryIf or Classify says, ignored by the breaker, never a fallback
//     cause — the caller receives it;
//   - the breaker never counts a rejection, the caller's cancellation or a business error as a
//     failure: a saturated bulkhead never trips it;
//   - a bulkhead permit is held only while an attempt runs, never during a backoff wait;
//   - the total deadline — the context's, and the retry's MaxDuration — bounds every layer: the
//     bulkhead stops waiting, the timeout's deadline is the earlier of its own and the caller's,
//     the retry gives up when too little time is left;
//   - the fallback, when the call supplies one, receives the call's context, the cause
//     (circuit_open, bulkhead_full, timeout, retries_exhausted, error) and the error, and the
//     result says whether the value came from it.
//
// Get one from [Registry.Pipeline]; its primitives are the registry's, by the pipeline's name,
// so one dependency is one set of series. A Pipeline is safe for concurrent use; build it once
// per dependency and keep it.
type Pipeline struct {
	name     string
	order    Order
	retry    *retry.Retry
	breaker  *breaker.Breaker
	bulkhead *bulkhead.Bulkhead
	timeout  *timeout.Timeout
	fallback *fallback.Fallback
	limiter  *limit.Limiter
	throttle *throttle.Throttle
	hedge    *hedge.Hedge
	overflow bool
}

// Pipeline returns a pipeline called name whose layers are the registry's primitives called
// name, each created with its part of cfg on first use (get-or-create: a primitive that already
// exists keeps its configuration). cfg is validated first (see [PipelineConfig.Validate]);
// nothing is created when it is invalid (the error is a [*catalog.ConfigError]). Past the cardinality
// guard, the pipeline's layers are the shared catalog.OverflowName primitives (see
// [Pipeline.Overflowed]).
func (r *Registry) Pipeline(name string, cfg PipelineConfig) (*Pipeline, error) {
	if err := cfg.validate(name); err != nil {
		return nil, err
	}
	if cfg.createsAny(r, name) {
		if err := cfg.validateLayers(name); err != nil {
			return nil, err
		}
	}
	p := &Pipeline{name: name, order: cfg.Order}
	var err error
	if cfg.Retry != nil {
		rc := *cfg.Retry
		if rc.MinAttemptTime == 0 && cfg.Timeout != nil {
			rc.MinAttemptTime = cmp.Or(cfg.Timeout.Timeout, timeout.DefaultTimeout)
		}
		if p.retry, err = r.Retry(name, rc); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.retry.Name() != name
	}
	if cfg.Breaker != nil {
		if p.breaker, err = r.Breaker(name, *cfg.Breaker); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.breaker.Name() != name
	}
	if cfg.Bulkhead != nil {
		if p.bulkhead, err = r.Bulkhead(name, *cfg.Bulkhead); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.bulkhead.Name() != name
	}
	if cfg.Timeout != nil {
		if p.timeout, err = r.Timeout(name, *cfg.Timeout); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.timeout.Name() != name
	}
	if cfg.Fallback != nil {
		if p.fallback, err = r.Fallback(name, *cfg.Fallback); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.fallback.Name() != name
	}
	if cfg.Limit != nil {
		if p.limiter, err = r.Limiter(name, *cfg.Limit); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.limiter.Name() != name
	}
	if cfg.Throttle != nil {
		if p.throttle, err = r.Throttle(name, *cfg.Throttle); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.throttle.Name() != name
	}
	if cfg.Hedge != nil { // after the retry: the hedge spends its budget
		if p.hedge, err = r.Hedge(name, *cfg.Hedge); err != nil {
			return nil, err
		}
		p.overflow = p.overflow || p.hedge.Name() != name
	}
	return p, nil
}

// createsAny reports whether getting the pipeline's layers would create a primitive. When none
// would (the names exist, or the guard maps them to an existing overflow instance), the layer
// configurations are ignored and need no validation — which keeps the overflow path cheap.
func (c PipelineConfig) createsAny(r *Registry, name string) bool {
	return (c.Retry != nil && wouldCreate(familyOf[*retry.Retry](r, catalog.Retry), name)) ||
		(c.Breaker != nil && wouldCreate(familyOf[*breaker.Breaker](r, catalog.CircuitBreaker), name)) ||
		(c.Bulkhead != nil && wouldCreate(familyOf[*bulkhead.Bulkhead](r, catalog.Bulkhead), name)) ||
		(c.Timeout != nil && wouldCreate(familyOf[*timeout.Timeout](r, catalog.Timeout), name)) ||
		(c.Fallback != nil && wouldCreate(familyOf[*fallback.Fallback](r, catalog.Fallback), name)) ||
		(c.Limit != nil && wouldCreate(familyOf[*limit.Limiter](r, catalog.Limiter), name)) ||
		(c.Throttle != nil && wouldCreate(familyOf[*throttle.Throttle](r, catalog.Throttle), name)) ||
		(c.Hedge != nil && wouldCreate(familyOf[*hedge.Hedge](r, catalog.Hedge), name))
}

// wouldCreate reports whether f.get(name, …) would call its create function.
func wouldCreate[T any](f *family[T], name string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if _, ok := f.byName[name]; ok {
		return false
	}
	if f.named >= f.limit { // (OverflowName itself is refused by checkName)
		_, ok := f.byName[catalog.OverflowName]
		return !ok
	}
	return true
}

// Name returns the pipeline's name, which is the name of each of its primitives unless the
// cardinality guard refused it.
func (p *Pipeline) Name() string { return p.name }

// Order returns the breaker's place.
func (p *Pipeline) Order() Order { return p.order }

// Overflowed reports whether the registry's cardinality guard refused the pipeline's name for
// at least one layer, which then is the shared catalog.OverflowName primitive.
func (p *Pipeline) Overflowed() bool { return p.overflow }

// Retry returns the retry layer, or nil.
func (p *Pipeline) Retry() *retry.Retry { return p.retry }

// Breaker returns the circuit breaker layer, or nil.
func (p *Pipeline) Breaker() *breaker.Breaker { return p.breaker }

// Bulkhead returns the bulkhead layer, or nil.
func (p *Pipeline) Bulkhead() *bulkhead.Bulkhead { return p.bulkhead }

// Timeout returns the timeout layer, or nil.
func (p *Pipeline) Timeout() *timeout.Timeout { return p.timeout }

// Fallback returns the fallback layer, or nil.
func (p *Pipeline) Fallback() *fallback.Fallback { return p.fallback }

// Hedge returns the hedge layer, or nil.
func (p *Pipeline) Hedge() *hedge.Hedge { return p.hedge }

// Do runs fn through the pipeline and returns its error, or the error with which a layer ended
// the call. The fallback layer, if configured, is skipped: use [Pipeline.DoWithFallback].
func (p *Pipeline) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	_, _, err := execute(ctx, p, errFunc(fn), retry.Hooks[struct{}]{}, nil)
	return err
}

// DoWithFallback is [Pipeline.Do] with a fallback: when the call fails for a cause the
// pipeline's fallback answers, fb runs with the cause and the error, and fromFallback is true
// (err is then fb's). Without a fallback layer fb never runs.
func (p *Pipeline) DoWithFallback(ctx context.Context, fn func(ctx context.Context) error,
	fb func(ctx context.Context, cause catalog.Cause, err error) error) (fromFallback bool, err error) {
	var ff fallback.Func[struct{}]
	if fb != nil {
		ff = func(ctx context.Context, cause catalog.Cause, err error) (struct{}, error) {
			return struct{}{}, fb(ctx, cause, err)
		}
	}
	_, fromFallback, err = execute(ctx, p, errFunc(fn), retry.Hooks[struct{}]{}, ff)
	return fromFallback, err
}

// Call runs fn through p and returns its value, or the error with which a layer ended the
// call. The fallback layer, if configured, is skipped: use [CallWithFallback].
func Call[T any](ctx context.Context, p *Pipeline, fn func(ctx context.Context) (T, error)) (T, error) {
	v, _, err := execute(ctx, p, valueFunc[T](fn), retry.Hooks[T]{}, nil)
	return v, err
}

// CallWithFallback is [Call] with a fallback: when the call fails for a cause the
// pipeline's fallback answers, fb runs and its result is returned with fromFallback == true, so a
// degraded value is never mistaken for real data.
func CallWithFallback[T any](ctx context.Context, p *Pipeline, fn func(ctx context.Context) (T, error),
	fb fallback.Func[T]) (v T, fromFallback bool, err error) {
	return execute(ctx, p, valueFunc[T](fn), retry.Hooks[T]{}, fb)
}

// CallWith is the general form: [CallWithFallback] with hooks, the retry's (retry.Hooks: one
// Hooks type for every layer). fb may be nil. Check maps each attempt's value and error to the
// error every layer sees; Discard also releases the last value when the fallback replaces it;
// Retain lets the value outlive the contexts created for it — the Timeout layer's attempt
// context and the retry's AttemptTimeout and MaxDuration contexts — and may be called twice
// for one value (once per layer that created contexts). CallWith returns the last attempt's
// value even when the call failed (as retry.CallWith does), unless the fallback replaced it.
func CallWith[T any](ctx context.Context, p *Pipeline, fn func(ctx context.Context) (T, error), h retry.Hooks[T],
	fb fallback.Func[T]) (v T, fromFallback bool, err error) {
	return execute(ctx, p, valueFunc[T](fn), h, fb)
}

// errPanicked ends a timeout attempt whose function panicked.
var errPanicked = errors.New("the attempt panicked")

// caller lets Do and Call share the pipeline without wrapping one function in another (which
// would cost an allocation per call).
type caller[T any] interface {
	call(ctx context.Context) (T, error)
}

type valueFunc[T any] func(context.Context) (T, error)

func (f valueFunc[T]) call(ctx context.Context) (T, error) { return f(ctx) }

type errFunc func(context.Context) error

func (f errFunc) call(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) }

func execute[T any, F caller[T]](ctx context.Context, p *Pipeline, f F, h retry.Hooks[T], fb fallback.Func[T]) (v T, fromFallback bool, err error) {
	v, err = run(ctx, p, f, h)
	if err == nil || fb == nil || p.fallback == nil {
		return v, false, err
	}
	cause, ok := p.fallback.Decide(ctx, err)
	if !ok {
		return v, false, err
	}
	if h.Discard != nil {
		h.Discard(v)
	}
	v, err = fb(ctx, cause, err)
	return v, true, err
}

// run applies every layer but the fallback.
func run[T any, F caller[T]](ctx context.Context, p *Pipeline, f F, h retry.Hooks[T]) (T, error) {
	switch {
	case p.retry == nil:
		return hedged(ctx, p, f, h, true)
	case p.order == BreakerPerCall && p.breaker != nil:
		return breakerAroundRetry(ctx, p, f, h)
	}
	return retry.CallWith(ctx, p.retry, func(ctx context.Context) (T, error) {
		return hedged(ctx, p, f, h, true)
	}, retryHooks(h))
}

// hedged runs one attempt, hedged by the hedge layer when there is one: every hedged attempt
// goes through the breaker (when withBreaker), the bulkhead and the timeout.
func hedged[T any, F caller[T]](ctx context.Context, p *Pipeline, f F, h retry.Hooks[T], withBreaker bool) (T, error) {
	if p.hedge == nil {
		return attempt(ctx, p, f, h, withBreaker)
	}
	return hedge.CallWith(ctx, p.hedge, func(ctx context.Context) (T, error) {
		return attempt(ctx, p, f, h, withBreaker)
	}, h.Discard)
}

// retryHooks passes the hooks the retry layer uses; Check has already run inside the attempt.
func retryHooks[T any](h retry.Hooks[T]) retry.Hooks[T] {
	h.Check = nil
	return h
}

// breakerAroundRetry is the BreakerPerCall order: one breaker permit for the whole logical call.
func breakerAroundRetry[T any, F caller[T]](ctx context.Context, p *Pipeline, f F, h retry.Hooks[T]) (v T, err error) {
	permit, err := p.breaker.Acquire()
	if err != nil {
		return v, err
	}
	completed := false
	defer func() {
		if !completed { // a panic is propagating: return the permit without an outcome
			permit.Done(context.Canceled)
		}
	}()
	v, err = retry.CallWith(ctx, p.retry, func(ctx context.Context) (T, error) {
		return hedged(ctx, p, f, h, false)
	}, retryHooks(h))
	completed = true
	permit.Done(err)
	return v, err
}

// attempt runs one attempt through the breaker (when withBreaker), the bulkhead and the timeout.
// It allocates nothing itself; the timeout layer's attempt context is one small allocation.
func attempt[T any, F caller[T]](ctx context.Context, p *Pipeline, f F, h retry.Hooks[T], withBreaker bool) (v T, err error) {
	var (
		permit    breaker.Permit  // the zero Permit ignores Done
		lp        limit.Permit    // the zero Permit ignores Release/Drop/Ignore
		release   bulkhead.Permit // the zero Permit ignores Done
		ta        timeout.Attempt
		timed     bool
		completed bool
	)
	defer func() {
		if completed {
			return
		}
		// f or a hook panicked: give everything back; the panic propagates.
		if timed {
			ta.Done(errPanicked) // counted as failed (timed_out if its deadline had fired)
		}
		release.Done()
		lp.Done(context.Canceled)
		permit.Done(context.Canceled)
	}()
	if withBreaker && p.breaker != nil {
		if permit, err = p.breaker.Acquire(); err != nil {
			completed = true
			return v, err
		}
	}
	if p.limiter != nil || p.throttle != nil {
		if lp, err = p.acquireAdaptive(ctx); err != nil {
			completed = true
			permit.Done(err) // the call never ran: ignored by the breaker (rejected or cancelled)
			return v, err
		}
	}
	if p.bulkhead != nil {
		r, berr := p.bulkhead.Acquire(ctx)
		if berr != nil {
			completed = true
			lp.Done(berr)     // a refusal of our own, or the caller left: the limiter learns nothing
			permit.Done(berr) // the call never ran: ignored by the breaker (rejected or cancelled)
			return v, berr
		}
		release = r
	}
	actx := ctx
	if p.timeout != nil {
		actx, ta = p.timeout.Start(ctx)
		timed = true
	}
	v, err = f.call(actx)
	if h.Check != nil {
		err = h.Check(v, err)
	}
	if timed {
		if h.Retain != nil {
			err = ta.Record(err)
			timed = false
			v = h.Retain(v, ta.ReleaseFunc())
		} else {
			timed = false
			err = ta.Done(err)
		}
	}
	completed = true
	release.Done()
	if p.limiter != nil || p.throttle != nil {
		p.finishAdaptive(lp, err)
	}
	permit.Done(err)
	return v, err
}
