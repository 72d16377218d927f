package grpcx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
	"github.com/stormwatch-go/stormwatch/internal/redact"
)

// DefaultPipeline is the pipeline configuration of an Interceptor without [WithPipeline]: the
// default retry (3 attempts, full-jitter backoff, pushback honoured, budget) and the default
// circuit breaker. It has no timeout: set one, or give every call a deadline.
func DefaultPipeline() instrument.PipelineConfig {
	return instrument.PipelineConfig{Retry: &retry.Config{}, Breaker: &breaker.Config{}}
}

// MethodKey is the default key: the method without its leading slash, "package.Service/Method".
// Every method is a dependency of its own, with its own breaker, bulkhead and retry budget.
func MethodKey(_ *grpc.ClientConn, method string) string {
	if len(method) > 1 && method[0] == '/' {
		return method[1:]
	}
	return method
}

// TargetKey keys calls by the channel's target (grpc.ClientConn.Target, without userinfo or a
// query string): every method of one channel shares one breaker, bulkhead and retry budget.
func TargetKey(cc *grpc.ClientConn, _ string) string {
	if cc == nil {
		return ""
	}
	return redact.Endpoint(cc.Target())
}

// RetryPolicyGuard says what an interceptor does when the channel's gRPC service config has a
// retry policy of its own for the method (see [WithRetryPolicyGuard]). Interceptors installed
// with [Interceptor.DialOptions] never meet one: those options turn gRPC's retries off.
type RetryPolicyGuard int

const (
	// YieldToRetryPolicy (the default): a failure whose code the channel's policy retries is not
	// retried again by the interceptor — gRPC already did, within its own policy — so the
	// attempts never multiply. The call still passes through the pipeline once (breaker,
	// bulkhead, timeout, fallback, the retry's counts), which sees the outcome of gRPC's last
	// attempt. Costs nothing on successful calls: the channel is consulted after a failure.
	YieldToRetryPolicy RetryPolicyGuard = iota
	// RefuseRetryPolicy fails the calls of a method that has a retry policy, before sending them,
	// with FAILED_PRECONDITION and an error matching [ErrRetryPolicy]: for teams that want one
	// retry layer and a loud failure when a service config brings a second. It consults the
	// channel's service config on every call. A channel knows its service config once it has
	// resolved its target, which a new channel (grpc.NewClient connects lazily) does during its
	// first call: the calls made before that are not refused, and the rule of
	// YieldToRetryPolicy keeps their attempts from multiplying.
	RefuseRetryPolicy
)

// ErrRetryPolicy matches (errors.Is) the error of a call refused by [RefuseRetryPolicy].
var ErrRetryPolicy = errors.New("grpcx: the channel's service config has a gRPC retry policy for this method; stormwatch's retry would multiply its attempts (dial with Interceptor.DialOptions, which disables gRPC's retries, or remove the retryPolicy)")

type retryPolicyError struct{ method string }

func (e *retryPolicyError) Error() string        { return ErrRetryPolicy.Error() + ": " + e.method }
func (e *retryPolicyError) Is(target error) bool { return target == ErrRetryPolicy }

// FallbackFunc answers a unary call on cc that failed for a cause the pipeline's fallback
// handles (see [WithFallback]): it fills in reply (the call's response message) and returns nil,
// or returns an error of its own, which the caller receives.
type FallbackFunc func(ctx context.Context, cc *grpc.ClientConn, method string, req, reply any, cause catalog.Cause, err error) error

// Option configures an [Interceptor].
type Option func(*Interceptor) error

// WithRegistry sets the registry the interceptor takes its primitives from (default: a registry
// of its own, see [Interceptor.Registry]). Share it with httpx and the collector so that gRPC
// dependencies are series like any other.
func WithRegistry(reg *instrument.Registry) Option {
	return func(ic *Interceptor) error {
		if reg == nil {
			return optionError("WithRegistry", nil, "registry must not be nil")
		}
		ic.reg = reg
		return nil
	}
}

// WithPipeline sets the configuration of every key's pipeline (default [DefaultPipeline]).
// Leave Retry.Classify nil: the default classifier already applies [Classify] to gRPC errors.
// Retry.Idempotent, when true, declares every method idempotent.
func WithPipeline(cfg instrument.PipelineConfig) Option {
	return func(ic *Interceptor) error {
		ic.cfg = cfg
		return nil
	}
}

// WithKey sets the function that names a call's dependency (default [MethodKey]; [TargetKey]
// keys by channel). The name is the primitives' `name` label: keep it low-cardinality and free of
// secrets. It is passed through instrument.SanitizeName.
func WithKey(key func(cc *grpc.ClientConn, method string) string) Option {
	return func(ic *Interceptor) error {
		if key == nil {
			return optionError("WithKey", nil, "key function must not be nil")
		}
		ic.key = key
		return nil
	}
}

// WithIdempotent declares methods idempotent — they may run twice safely, so a
// DEADLINE_EXCEEDED, UNKNOWN or INTERNAL failure of theirs is retried. Name a method as gRPC
// does, "/package.Service/Method", or every method of a service, "/package.Service/*". Methods
// whose descriptor (in protoregistry.GlobalFiles, see [WithDescriptors]) has the option
// idempotency_level = IDEMPOTENT or NO_SIDE_EFFECTS are idempotent without being named.
func WithIdempotent(methods ...string) Option {
	return func(ic *Interceptor) error {
		for _, m := range methods {
			if err := ic.idem.declare(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithDescriptors sets where the methods' descriptors are looked up for their idempotency_level
// option (default protoregistry.GlobalFiles, where generated code registers its files); nil
// turns the lookup off.
func WithDescriptors(files *protoregistry.Files) Option {
	return func(ic *Interceptor) error {
		ic.idem.files = files
		return nil
	}
}

// WithFallback answers failed unary calls with fb when the failure's cause is one the pipeline's
// fallback handles (all causes unless PipelineConfig.Fallback says otherwise). Streams have no
// fallback. [ReportFallback] tells a caller that its reply came from fb.
func WithFallback(fb FallbackFunc) Option {
	return func(ic *Interceptor) error {
		if fb == nil {
			return optionError("WithFallback", nil, "fallback function must not be nil")
		}
		ic.fallback = fb
		return nil
	}
}

// WithRetryPolicyGuard sets what the interceptors do on a channel whose service config has its
// own retry policy for a method (default [YieldToRetryPolicy]).
func WithRetryPolicyGuard(g RetryPolicyGuard) Option {
	return func(ic *Interceptor) error {
		if g != YieldToRetryPolicy && g != RefuseRetryPolicy {
			return optionError("WithRetryPolicyGuard", int(g), "unknown guard (want YieldToRetryPolicy or RefuseRetryPolicy)")
		}
		ic.guard = g
		return nil
	}
}

// FallbackInfo receives, through [ReportFallback], whether a unary call's reply came from the
// fallback function and why.
type FallbackInfo struct {
	Used  bool
	Cause catalog.Cause
}

type fallbackReport struct {
	grpc.EmptyCallOption
	info *FallbackInfo
}

// ReportFallback is a call option that fills in info when the call returns: whether its reply
// came from the fallback function ([WithFallback]) and for which cause, so a degraded reply is
// never mistaken for real data.
func ReportFallback(info *FallbackInfo) grpc.CallOption { return fallbackReport{info: info} }

// Interceptor applies stormwatch's pipeline to the calls of gRPC client connections. Create it
// with [NewInterceptor] and install it with [Interceptor.DialOptions]; it is safe for concurrent
// use and may serve any number of connections.
type Interceptor struct {
	reg      *instrument.Registry
	cfg      instrument.PipelineConfig
	key      func(*grpc.ClientConn, string) string
	fallback FallbackFunc
	guard    RetryPolicyGuard
	idem     idempotency
	limit    *limit.Config    // WithLimit
	throttle *throttle.Config // WithThrottle
	hedge    *hedge.Config    // WithHedge

	pipelines sync.Map // key → *instrument.Pipeline, only keys with primitives of their own
	cached    atomic.Int64
}

// NewInterceptor returns an Interceptor configured by opts. Invalid options or pipeline
// configurations are an error naming the field.
func NewInterceptor(opts ...Option) (*Interceptor, error) {
	ic := &Interceptor{
		cfg:  DefaultPipeline(),
		key:  MethodKey,
		idem: idempotency{methods: map[string]bool{}, services: map[string]bool{}, files: protoregistry.GlobalFiles},
	}
	for i, o := range opts {
		if o == nil {
			return nil, optionError(fmt.Sprintf("option %d", i), nil, "is nil")
		}
		if err := o(ic); err != nil {
			return nil, err
		}
	}
	if ic.reg == nil {
		reg, err := instrument.NewRegistry()
		if err != nil {
			return nil, err
		}
		ic.reg = reg
	}
	if ic.fallback != nil && ic.cfg.Fallback == nil {
		ic.cfg.Fallback = &fallback.Config{}
	}
	if ic.limit != nil {
		ic.cfg.Limit = ic.limit
	}
	if ic.throttle != nil {
		ic.cfg.Throttle = ic.throttle
	}
	if ic.hedge != nil {
		ic.cfg.Hedge = ic.hedge
	}
	if err := ic.cfg.Validate(); err != nil {
		return nil, err // a *catalog.ConfigError naming the pipeline field
	}
	ic.idem.all = ic.cfg.Retry != nil && ic.cfg.Retry.Idempotent
	return ic, nil
}

// Registry returns the registry the interceptor's primitives come from; give it to
// collector.New to export their metrics, and attach retrylog to its Events.
func (ic *Interceptor) Registry() *instrument.Registry { return ic.reg }

// Pipeline returns the pipeline of the dependency called key, creating its primitives on first
// use.
func (ic *Interceptor) Pipeline(key string) (*instrument.Pipeline, error) {
	if p, ok := ic.pipelines.Load(key); ok {
		return p.(*instrument.Pipeline), nil
	}
	// Keys come from traffic (method names, targets, user key functions): sanitise them into
	// valid names rather than fail the call; the cache stays keyed by the raw key.
	p, err := ic.reg.Pipeline(instrument.SanitizeName(key), ic.cfg)
	if err != nil {
		return nil, err
	}
	// Cache only keys with primitives of their own — at most MaxNames of them. Overflowing keys
	// go to the registry on every call, so that each refusal is counted.
	if !p.Overflowed() && ic.cached.Load() < int64(ic.reg.MaxNames()) {
		if actual, loaded := ic.pipelines.LoadOrStore(key, p); loaded {
			return actual.(*instrument.Pipeline), nil
		}
		ic.cached.Add(1)
	}
	return p, nil
}

// DialOptions returns the options that install the interceptor on a client connection: the
// unary and stream interceptors (appended to the connection's chains) and grpc.WithDisableRetry,
// which turns off the retry policies of gRPC's service config — stormwatch's retry, with its
// budget and its metrics, is the connection's one retry layer. gRPC's transparent retries of
// requests that never reached the server application stay on.
//
//	conn, err := grpc.NewClient(target, append(ic.DialOptions(), grpc.WithTransportCredentials(creds))...)
func (ic *Interceptor) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(ic.unaryInterceptor(true)),
		grpc.WithChainStreamInterceptor(ic.streamInterceptor(true)),
		grpc.WithDisableRetry(),
	}
}

// Unary returns the unary client interceptor, for connections that install interceptors
// themselves. Such a connection may have gRPC retry policies: see [RetryPolicyGuard].
func (ic *Interceptor) Unary() grpc.UnaryClientInterceptor { return ic.unaryInterceptor(false) }

// Stream returns the stream client interceptor, for connections that install interceptors
// themselves. Such a connection may have gRPC retry policies: see [RetryPolicyGuard].
func (ic *Interceptor) Stream() grpc.StreamClientInterceptor { return ic.streamInterceptor(false) }

// target is what one call needs to know about its dependency.
type target struct {
	p          *instrument.Pipeline
	idempotent bool
	guarded    bool // the channel may carry a gRPC retry policy: consult it after failures
}

// resolve finds the call's pipeline and applies the retry-policy guard. noPolicy says the
// connection was dialled with DialOptions (gRPC's retries are off).
func (ic *Interceptor) resolve(cc *grpc.ClientConn, method string, noPolicy bool) (target, error) {
	key := ic.key(cc, method)
	if key == "" {
		return target{}, &statusError{err: fmt.Errorf("grpcx: the key function returned an empty name for %s", method), code: codes.Internal}
	}
	p, err := ic.Pipeline(key)
	if err != nil {
		return target{}, &statusError{err: fmt.Errorf("grpcx: %s: %w", method, err), code: codes.Internal}
	}
	t := target{p: p, idempotent: ic.idem.of(method), guarded: !noPolicy && cc != nil && p.Retry() != nil}
	if t.guarded && ic.guard == RefuseRetryPolicy && cc.GetMethodConfig(method).RetryPolicy != nil {
		return target{}, withStatus(&retryPolicyError{method: method})
	}
	return t, nil
}

// policyRetried reports whether the channel's gRPC retry policy for method retries code — so
// gRPC has already retried the failure.
func policyRetried(cc *grpc.ClientConn, method string, code codes.Code) bool {
	rp := cc.GetMethodConfig(method).RetryPolicy
	return rp != nil && rp.RetryableStatusCodes[code]
}

func (ic *Interceptor) unaryInterceptor(noPolicy bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		t, err := ic.resolve(cc, method, noPolicy)
		if err != nil {
			return err
		}
		u := &unaryCall{ic: ic, t: t, ctx: ctx, method: method, req: req, reply: reply, cc: cc, invoker: invoker}
		u.opts = append(append(u.optBuf[:0], opts...), grpc.Trailer(&u.trailer)) // never the caller's array
		var report *FallbackInfo
		for _, o := range opts {
			if r, ok := o.(fallbackReport); ok && r.info != nil {
				report = r.info
				*report = FallbackInfo{}
			}
		}
		h := retry.Hooks[any]{}
		if ic.reg.Events().Retries.Active() { // the endpoint only appears in retry events
			h.Endpoint = method
		}
		var fb fallback.Func[any]
		if ic.fallback != nil {
			fb = func(fctx context.Context, cause catalog.Cause, err error) (any, error) {
				u.signal(err)
				if report != nil {
					*report = FallbackInfo{Used: true, Cause: cause}
				}
				return reply, ic.fallback(fctx, cc, method, req, reply, cause, err)
			}
		}
		got, fromFallback, err := instrument.CallWith(u.hedgeContext(), t.p, u.attempt, h, fb)
		if err == nil && !fromFallback {
			u.keep(got)
		}
		if fromFallback {
			return withStatus(err)
		}
		if err != nil {
			u.signal(err)
		}
		return withStatus(err)
	}
}

// unaryCall is the state of one unary call.
type unaryCall struct {
	ic      *Interceptor
	t       target
	ctx     context.Context // the caller's
	method  string
	req     any
	reply   any
	cc      *grpc.ClientConn
	invoker grpc.UnaryInvoker
	opts    []grpc.CallOption // the caller's, and the trailer's
	optBuf  [4]grpc.CallOption
	trailer metadata.MD // the first attempt's trailer

	// Hedged attempts run concurrently (see hedge.go): from the second attempt on, each has a
	// reply and a trailer of its own.
	hedged             bool
	n                  atomic.Int32
	downstreamDisabled atomic.Bool // an attempt's trailer carried the do-not-retry signal
}

// attempt makes one attempt under the attempt context, and returns the reply it filled.
func (u *unaryCall) attempt(actx context.Context) (any, error) {
	if u.n.Add(1) > 1 && u.hedged {
		return u.ownAttempt(actx)
	}
	u.trailer = nil
	err := u.invoker(actx, u.method, u.req, u.reply, u.cc, u.opts...)
	if err == nil {
		return u.reply, nil
	}
	return u.reply, u.failed(err, u.trailer)
}

// failed turns an attempt's error and trailer into the error every layer sees.
func (u *unaryCall) failed(err error, trailer metadata.MD) error {
	var disabled bool
	err = u.ic.check(u.ctx, u.cc, u.method, err, trailer, u.t, &disabled)
	if disabled {
		u.downstreamDisabled.Store(true)
	}
	return err
}

// check turns a failed attempt's error into the *Error every layer sees.
func (ic *Interceptor) check(ctx context.Context, cc *grpc.ClientConn, method string, err error, trailer metadata.MD, t target, disabled *bool) error {
	e := newError(ctx, method, err, trailer, t.idempotent)
	if e.signalled {
		*disabled = true
	}
	if t.guarded && !e.DoNotRetry() && e.Verdict(e.idempotent).Retryable {
		e.policy = policyRetried(cc, method, e.Code())
	}
	return e
}

// signal passes the do-not-retry signal to the server handling the request that made this call
// (see [UnaryServerInterceptor]): our retries of the call are exhausted or the budget denied one,
// or the dependency itself said not to retry.
func (u *unaryCall) signal(err error) {
	if u.downstreamDisabled.Load() {
		MarkRetryDisabled(u.ctx)
		return
	}
	NoteError(u.ctx, err)
}

// optionError is the error of an invalid option: a *catalog.ConfigError naming it and its value.
func optionError(option string, value any, reason string) error {
	return &catalog.ConfigError{Primitive: "grpcx", Field: option, Value: value, Reason: reason}
}
