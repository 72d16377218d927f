// Package httpx applies stormwatch's pipeline to outbound HTTP: an [http.RoundTripper] that
// sends every request through the retry, circuit breaker, bulkhead, timeout and fallback of its
// dependency, and a server-side middleware that tells upstream callers not to retry when this
// service has already retried (the do-not-retry signal).
//
//	reg, _ := instrument.NewRegistry()
//	tr, err := httpx.NewTransport(http.DefaultTransport, httpx.WithRegistry(reg),
//		httpx.WithPipeline(instrument.PipelineConfig{
//			Retry:   &retryCfg,
//			Breaker: &breaker.Config{},
//			Timeout: &timeout.Config{Timeout: 2 * time.Second},
//		}))
//	client := &http.Client{Transport: tr}
//
// # Per dependency
//
// Requests are keyed by a function of the request — by default its host (host:port, lower
// case) — and each key is one [instrument.Pipeline] from the registry, so every host is one set
// of series with its own breaker, bulkhead and retry budget. The registry's cardinality guard
// bounds the keys: past it, new keys share the [catalog.OverflowName] primitives and the
// overflow is counted. Keys never include userinfo or query strings.
//
// # What the transport does for each request
//
//   - Classification is package classify's: 5xx, 408, 429, timeouts and connection failures are
//     failures; 4xx are not, and never trip a breaker. A failed response is still returned as a
//     response (with a nil error) once the pipeline is done with it.
//   - Non-idempotent requests (POST, PATCH without an Idempotency-Key header) are retried only
//     when the request certainly never left (connection refused, DNS failure, dial error).
//     [WithIdempotencyKeys] adds a key to such requests — the same key on every attempt — which
//     makes them retryable.
//   - Request bodies are rewound for each attempt with Request.GetBody; a request whose body
//     cannot be rewound is not retried.
//   - The responses of discarded attempts are drained (up to 64 KiB) and closed. The returned
//     response's body stays readable under the attempt's deadline until it is closed.
//   - Retry-After on 429 and 503 sets the delay (clamped to the retry's RetryAfter bounds); a
//     response with "Retry-Disabled: true" is not retried.
//   - X-Request-Timeout-Ms carries the time left before the attempt's deadline; a request whose
//     deadline has passed is not sent ([ErrDeadlineExpired]).
//   - Retry log events go to the registry's hub (attach package retrylog to it); the endpoint is
//     the method, host and path — never the query string or userinfo ([Endpoint]).
//
// # Retrying HTTP without the Transport
//
// The Transport is package retry's HTTP adapter; its parts serve code that calls retry.CallWith
// (or a pipeline) itself. [Result] turns an attempt's response and error into an [*Error], which
// carries what the retry needs to know — the status, Retry-After, the request's idempotency, the
// do-not-retry signal — and [RetryHooks] gives retry.CallWith the hooks that drain dropped
// responses and keep the returned body readable.
//
// # The do-not-retry signal (server side)
//
// A service that retries its dependency should not have its own callers retry it too: with
// three layers retrying three times, the bottom dependency receives 27 requests.
// [Middleware] wraps a server's handler and puts a flag in each request's context. A Transport
// that sends a downstream request with that context (or one derived from it) raises the flag
// when its retries of the call were exhausted, when the retry budget refused a retry, or when
// the downstream response itself carried the signal. If the handler then answers with a status
// ≥ 400, the middleware adds "Retry-Disabled: true", and the caller's Transport does not retry
// that response. Code that retries something other than HTTP reports its errors with
// [NoteError] (or calls [MarkRetryDisabled]).
//
// The flag is one for both protocols: package grpcx (module instrument/grpcx) raises the same
// one. A gRPC call made through grpcx's client interceptors with the request's context raises
// it as a Transport does, and grpcx.NoteError and grpcx.MarkRetryDisabled are the same as this
// package's; likewise a handler behind grpcx's server interceptors that calls HTTP through a
// Transport, or this package's NoteError or MarkRetryDisabled, gets gRPC's trailer.
package httpx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// Header names used by the transport.
const (
	// TimeoutHeader carries the milliseconds left before the attempt's deadline.
	TimeoutHeader = "X-Request-Timeout-Ms"
	// IdempotencyKeyHeader makes a POST or PATCH idempotent, and so retryable.
	IdempotencyKeyHeader = "Idempotency-Key"
	// FallbackHeader marks a response produced by the fallback function; its value is the cause.
	FallbackHeader = "X-Stormwatch-Fallback"
	// RetryDisabledHeader is the do-not-retry signal: a response carrying
	// "Retry-Disabled: true" is not retried, and [Middleware] sets it.
	RetryDisabledHeader = "Retry-Disabled"
)

// ErrDeadlineExpired is returned (wrapped; it also matches context.DeadlineExceeded) when a
// request's deadline has passed before it could be sent.
var ErrDeadlineExpired = errors.New("httpx: deadline expired before the request was sent")

type expiredError struct{ endpoint string }

func (e *expiredError) Error() string {
	return ErrDeadlineExpired.Error() + ": " + e.endpoint
}
func (e *expiredError) Is(target error) bool {
	return target == ErrDeadlineExpired || target == context.DeadlineExceeded
}
func (e *expiredError) Timeout() bool { return true }

// DefaultPipeline is the pipeline configuration of a Transport without [WithPipeline]: the
// default retry (3 attempts, full-jitter backoff, Retry-After, budget) and the default circuit
// breaker (count window of 100, 20 calls minimum, 50% failures, 30 s open). It has no timeout:
// set one — every remote call needs a timeout.
func DefaultPipeline() instrument.PipelineConfig {
	return instrument.PipelineConfig{Retry: &retry.Config{}, Breaker: &breaker.Config{}}
}

// Option configures a [Transport].
type Option func(*Transport) error

// optionError is the error of an invalid option: a *catalog.ConfigError naming it and its value.
func optionError(option string, value any, reason string) error {
	return &catalog.ConfigError{Primitive: "httpx", Field: option, Value: value, Reason: reason}
}

// WithRegistry sets the registry the transport takes its primitives from (default: a registry
// of its own, see [Transport.Registry]).
func WithRegistry(reg *instrument.Registry) Option {
	return func(t *Transport) error {
		if reg == nil {
			return optionError("WithRegistry", nil, "registry must not be nil")
		}
		t.reg = reg
		return nil
	}
}

// WithPipeline sets the configuration of every key's pipeline (default [DefaultPipeline]). The
// returned response's body stays readable under every deadline of the pipeline (the Timeout
// layer's, the retry's MaxDuration) until it is closed.
func WithPipeline(cfg instrument.PipelineConfig) Option {
	return func(t *Transport) error {
		t.cfg = cfg
		return nil
	}
}

// WithKey sets the function that names a request's dependency (default: the host). The name is
// the primitives' `name` label: keep it low-cardinality and free of secrets.
func WithKey(key func(*http.Request) string) Option {
	return func(t *Transport) error {
		if key == nil {
			return optionError("WithKey", nil, "key function must not be nil")
		}
		t.key = key
		return nil
	}
}

// WithEndpoint sets the function that names a request in retry events and logs (default:
// method, host and path). Its result is sanitised: query strings, fragments and userinfo are
// removed.
func WithEndpoint(endpoint func(*http.Request) string) Option {
	return func(t *Transport) error {
		if endpoint == nil {
			return optionError("WithEndpoint", nil, "endpoint function must not be nil")
		}
		t.endpoint = func(r *http.Request) string { return SanitizeEndpoint(endpoint(r)) }
		return nil
	}
}

// WithIdempotencyKeys adds an Idempotency-Key header to POST and PATCH requests that have none,
// generated by gen (nil: a random UUID) once per request and sent on every attempt, so that they
// can be retried safely (the server must honour the key: it returns the first result for a
// repeated key).
func WithIdempotencyKeys(gen func() string) Option {
	return func(t *Transport) error {
		if gen == nil {
			gen = events.NewCorrelationID
		}
		t.genKey = gen
		return nil
	}
}

// WithTimeoutHeader sets the header that carries the time left before the attempt's deadline
// (default [TimeoutHeader]); "" stops sending it. A request whose deadline has passed is never
// sent, whatever the header. The time left is measured on the wall clock (a Timeout layer on a
// fake clock has deadlines in the fake clock's frame).
func WithTimeoutHeader(name string) Option {
	return func(t *Transport) error {
		if name != "" && !validHeaderName(name) {
			return optionError("WithTimeoutHeader", name, "not a valid header name")
		}
		t.timeoutHeader = http.CanonicalHeaderKey(name)
		return nil
	}
}

// WithRetryDisabledHeader sets the response header of the do-not-retry signal (default
// [RetryDisabledHeader]). Use the same name as the servers' [MiddlewareWithHeader].
func WithRetryDisabledHeader(name string) Option {
	return func(t *Transport) error {
		if !validHeaderName(name) {
			return optionError("WithRetryDisabledHeader", name, "not a valid header name")
		}
		t.rdHeader = http.CanonicalHeaderKey(name)
		return nil
	}
}

// FallbackFunc answers a request that failed for a cause the pipeline's fallback handles (see
// [WithFallback]).
type FallbackFunc func(req *http.Request, cause catalog.Cause, err error) (*http.Response, error)

// WithFallback answers failed requests with fb's response — degraded data, a cached copy — when
// the failure's cause is one the pipeline's fallback handles (all causes unless
// PipelineConfig.Fallback says otherwise). The response carries [FallbackHeader] with the cause;
// [FromFallback] reads it.
func WithFallback(fb FallbackFunc) Option {
	return func(t *Transport) error {
		if fb == nil {
			return optionError("WithFallback", nil, "fallback function must not be nil")
		}
		t.fallback = fb
		return nil
	}
}

// Transport is an http.RoundTripper that sends each request through its dependency's pipeline.
// Create it with [NewTransport]; it is safe for concurrent use.
type Transport struct {
	base          http.RoundTripper
	reg           *instrument.Registry
	cfg           instrument.PipelineConfig
	key           func(*http.Request) string
	endpoint      func(*http.Request) string
	genKey        func() string
	timeoutHeader string
	rdHeader      string
	fallback      FallbackFunc
	limit         *limit.Config    // WithLimit
	throttle      *throttle.Config // WithThrottle
	hedge         *hedge.Config    // WithHedge

	pipelines sync.Map // key → cachedPipeline, only keys with primitives of their own
	cached    atomic.Int64
	evictions atomic.Uint64            // the registry's eviction count the cache was last emptied at
	lastMs    atomic.Pointer[msHeader] // the timeout header's last value (see msValue)
}

// cachedPipeline is a cached pipeline and the registry's eviction count when it was checked:
// once the registry has evicted anything since, the pipeline is taken from the registry again
// (its primitives may be gone, and a fresh set must count the key's calls).
type cachedPipeline struct {
	p         *instrument.Pipeline
	evictions uint64
}

// NewTransport returns a Transport that sends requests through base (nil: http.DefaultTransport)
// after applying the options. An invalid option or pipeline configuration is a
// *catalog.ConfigError naming the option (or the pipeline field) and its value.
func NewTransport(base http.RoundTripper, opts ...Option) (*Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base:          base,
		cfg:           DefaultPipeline(),
		key:           hostKey,
		endpoint:      Endpoint,
		timeoutHeader: TimeoutHeader,
		rdHeader:      RetryDisabledHeader,
	}
	for i, o := range opts {
		if o == nil {
			return nil, &catalog.ConfigError{Primitive: "httpx", Field: fmt.Sprintf("option %d", i), Reason: "is nil"}
		}
		if err := o(t); err != nil {
			return nil, err
		}
	}
	if t.reg == nil {
		reg, err := instrument.NewRegistry()
		if err != nil {
			return nil, err
		}
		t.reg = reg
	}
	if t.fallback != nil && t.cfg.Fallback == nil {
		t.cfg.Fallback = &fallback.Config{}
	}
	if t.limit != nil {
		t.cfg.Limit = t.limit
	}
	if t.throttle != nil {
		t.cfg.Throttle = t.throttle
	}
	if t.hedge != nil {
		t.cfg.Hedge = t.hedge
	}
	if err := t.cfg.Validate(); err != nil {
		return nil, err // a *catalog.ConfigError naming the pipeline field
	}
	return t, nil
}

// Registry returns the registry the transport's primitives come from; give it to
// collector.New to export their metrics, and attach retrylog to its Events.
func (t *Transport) Registry() *instrument.Registry { return t.reg }

// Pipeline returns the pipeline of the dependency called key, creating its primitives on first
// use.
func (t *Transport) Pipeline(key string) (*instrument.Pipeline, error) {
	evictions := t.reg.Evictions()
	if c, ok := t.pipelines.Load(key); ok && c.(cachedPipeline).evictions == evictions {
		return c.(cachedPipeline).p, nil
	}
	if seen := t.evictions.Load(); seen != evictions && t.evictions.CompareAndSwap(seen, evictions) {
		t.forgetCached(evictions)
	}
	// Keys come from traffic (host names, user key functions): sanitise them into valid names
	// rather than fail the request; the cache stays keyed by the raw key.
	p, err := t.reg.Pipeline(instrument.SanitizeName(key), t.cfg)
	if err != nil {
		return nil, err
	}
	// Cache only keys with primitives of their own — at most MaxNames of them. Overflowing keys
	// go to the registry on every request, so that each refusal is counted.
	if !p.Overflowed() && t.cached.Load() < int64(t.reg.MaxNames()) {
		if actual, loaded := t.pipelines.LoadOrStore(key, cachedPipeline{p, evictions}); !loaded {
			t.cached.Add(1)
		} else if actual.(cachedPipeline).evictions == evictions {
			return actual.(cachedPipeline).p, nil
		} else {
			t.pipelines.Store(key, cachedPipeline{p, evictions})
		}
	}
	return p, nil
}

// forgetCached empties the cache of the pipelines checked before the registry's latest
// evictions: their primitives may be gone, and the keys still in use are cached again by
// their next request.
func (t *Transport) forgetCached(evictions uint64) {
	t.pipelines.Range(func(k, v any) bool {
		if v.(cachedPipeline).evictions != evictions && t.pipelines.CompareAndDelete(k, v) {
			t.cached.Add(-1)
		}
		return true
	})
}

// CloseIdleConnections closes the idle connections of the base transport, if it has any.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// hostKey is the default key: the request's host (host:port), lower case.
func hostKey(req *http.Request) string {
	host := req.Host
	if req.URL != nil && req.URL.Host != "" {
		host = req.URL.Host
	}
	return strings.ToLower(host)
}

// RoundTrip sends req through its dependency's pipeline. It returns the last response even when
// it is a failure (a 503 after the last retry); an error means no response: a transport error,
// a rejection by the breaker (errors.Is(err, breaker.ErrOpen)) or the bulkhead
// (errors.Is(err, bulkhead.ErrFull)), or an expired deadline. It never modifies req.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := t.key(req)
	if key == "" {
		closeBody(req)
		return nil, fmt.Errorf("httpx: the key function returned an empty name for %s", Endpoint(req))
	}
	p, err := t.Pipeline(key)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	s := getCall(t, req)
	// A hedged pipeline may still run an attempt after the call returned: its state is not
	// recycled then.
	defer s.end(p.Hedge() == nil)
	s.idempotent = IsIdempotent(req)
	if !s.idempotent && t.genKey != nil && (req.Method == http.MethodPost || req.Method == http.MethodPatch) {
		s.req = req.Clone(req.Context()) // never modify the caller's request
		s.req.Header.Set(IdempotencyKeyHeader, t.genKey())
		s.idempotent = true
	}
	s.rewindable = req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	h := retry.Hooks[*http.Response]{
		Check:   s.checkFn,
		Discard: DiscardResponse,
		Status:  responseStatus,
		Retain:  retain,
	}
	if t.reg.Events().Retries.Active() { // the endpoint only appears in retry events
		h.Endpoint = t.endpoint(s.req)
	}
	var fb fallback.Func[*http.Response]
	if t.fallback != nil {
		fb = s.fallbackFn
	}
	ctx := s.hedgeContext(req.Context(), p)
	resp, fromFallback, err := instrument.CallWith(ctx, p, s.attemptFn, h, fb)
	if fromFallback {
		if err != nil {
			return nil, err
		}
		return s.fallbackResponse(resp), nil
	}
	s.signal(ctx, err)
	if resp != nil {
		return resp, nil
	}
	if err == nil {
		return nil, fmt.Errorf("httpx: %s: the transport returned neither a response nor an error", Endpoint(req))
	}
	if s.bodyBlocked.Load() {
		return nil, fmt.Errorf("%w (not retried: the request body cannot be rewound; set Request.GetBody)", err)
	}
	return nil, err
}

// call is the state of one RoundTrip. It is recycled (callPool) with its method values bound
// once, so that a request costs none of these allocations.
type call struct {
	t          *Transport
	orig       *http.Request // the caller's request
	req        *http.Request // orig, or its clone carrying a generated idempotency key
	idempotent bool
	rewindable bool
	// Hedged attempts run concurrently: what they share is atomic.
	attempts atomic.Int32
	bodySent atomic.Bool // the original body was handed to the base transport, which closes it

	bodyBlocked        atomic.Bool // a retryable failure was not retried because the body cannot be rewound
	downstreamDisabled atomic.Bool // a response carried the do-not-retry signal

	// s.attempt, s.check and s.fallback, bound when the call was made.
	attemptFn  func(context.Context) (*http.Response, error)
	checkFn    func(*http.Response, error) error
	fallbackFn fallback.Func[*http.Response]
}

var callPool = sync.Pool{New: func() any {
	s := new(call)
	s.attemptFn, s.checkFn, s.fallbackFn = s.attempt, s.check, s.fallback
	return s
}}

// getCall returns the fresh state of a RoundTrip of req.
func getCall(t *Transport, req *http.Request) *call {
	s := callPool.Get().(*call)
	s.t, s.orig, s.req = t, req, req
	return s
}

// end finishes the call: it closes a request body the base transport never received and,
// when recycle is set, returns the state to the pool.
func (s *call) end(recycle bool) {
	s.closeUnsentBody()
	if recycle {
		*s = call{attemptFn: s.attemptFn, checkFn: s.checkFn, fallbackFn: s.fallbackFn}
		callPool.Put(s)
	}
}

// attempt sends one attempt under the attempt context.
func (s *call) attempt(actx context.Context) (*http.Response, error) {
	n := int(s.attempts.Add(1))
	if n > 1 { // the first attempt's context stays as it is: no allocation
		actx = context.WithValue(actx, resendKey{}, n-1)
	}
	dl, hasDeadline := actx.Deadline()
	var ms int64
	if hasDeadline {
		if ms = time.Until(dl).Milliseconds(); ms <= 0 { // (before a body is rewound for it)
			return nil, &expiredError{endpoint: Endpoint(s.req)}
		}
	}
	ar := s.req
	setHeader := hasDeadline && s.t.timeoutHeader != ""
	if !sameContext(actx, s.req.Context()) || setHeader || (n > 1 && s.req.Body != nil && s.req.Body != http.NoBody) {
		ar = s.req.WithContext(actx) // a shallow copy: the caller's request is never modified
	}
	if n > 1 && s.req.Body != nil && s.req.Body != http.NoBody {
		if s.req.GetBody == nil { // not reached: check stops retries of such requests
			return nil, classify.Permanent(errors.New("httpx: the request body cannot be rewound"))
		}
		body, err := s.req.GetBody()
		if err != nil {
			return nil, classify.Permanent(fmt.Errorf("httpx: rewinding the request body: %w", err))
		}
		ar.Body = body
	}
	if setHeader {
		// A new map per attempt: an earlier attempt's request may still be being written.
		ar.Header = withHeader(s.req.Header, s.t.timeoutHeader, s.t.msValue(ms))
	}
	if n == 1 {
		s.bodySent.Store(true)
	}
	return s.t.base.RoundTrip(ar)
}

// sameContext reports whether a and b are certainly the same context, without the run-time
// panic of comparing two values of a type that is not comparable: pointers are compared, values
// of a zero-size type (context.Background) are equal, and other values are never the same.
func sameContext(a, b context.Context) bool {
	ta := reflect.TypeOf(a)
	if ta == nil || ta != reflect.TypeOf(b) {
		return false
	}
	switch {
	case ta.Kind() == reflect.Pointer:
		return a == b
	case ta.Size() == 0:
		return true
	}
	return false
}

// withHeader returns a copy of h (its values copied, as by Header.Clone) in which name holds
// value; name is canonical. The copy's values and the map are two allocations.
func withHeader(h http.Header, name string, value []string) http.Header {
	nv := 0
	for _, vv := range h {
		nv += len(vv)
	}
	var sv []string
	if nv > 0 {
		sv = make([]string, nv)
	}
	h2 := make(http.Header, len(h)+1)
	for k, vv := range h {
		if vv == nil {
			h2[k] = nil // preserve nil, as Header.Clone does
			continue
		}
		n := copy(sv, vv)
		h2[k] = sv[:n:n]
		sv = sv[n:]
	}
	h2[name] = value
	return h2
}

// msValue returns the header value for ms milliseconds, as a one-element slice that is never
// modified: the value of the last request is kept and shared while ms stays the same (the
// first attempt's time left is nearly always the same), so that it costs no allocation.
func (t *Transport) msValue(ms int64) []string {
	if c := t.lastMs.Load(); c != nil && c.ms == ms {
		return c.v[:]
	}
	c := &msHeader{ms: ms}
	c.v[0] = strconv.FormatInt(ms, 10)
	t.lastMs.Store(c)
	return c.v[:]
}

// msHeader is the cached value of the timeout header.
type msHeader struct {
	ms int64
	v  [1]string
}

// closeBody closes the body of a request that is never sent (the RoundTripper contract).
func closeBody(req *http.Request) {
	if req.Body != nil && req.Body != http.NoBody {
		_ = req.Body.Close()
	}
}

// resendKey is the context key of the resend count of a Transport's retries.
type resendKey struct{}

// ResendCount returns how many times a [Transport] had already sent the request that carries
// ctx: 0 for the first attempt (and for a context the Transport did not make), 1 for the first
// retry, and so on — the OpenTelemetry attribute http.request.resend_count of the attempt's
// HTTP client span. The Transport sets it on the context of each retried attempt's request, so
// that the base RoundTripper (an instrumented transport creating a span per attempt, wrapped
// by module collector/otelx) can read it.
func ResendCount(ctx context.Context) int {
	n, _ := ctx.Value(resendKey{}).(int)
	return n
}

// check turns an attempt's response and error into the error the pipeline's layers see, and
// stops retries that would be unsafe.
func (s *call) check(resp *http.Response, err error) error {
	e := newError(s.req, resp, err, s.t.rdHeader)
	if e == nil {
		return nil
	}
	if e.signalled {
		s.downstreamDisabled.Store(true)
		return e
	}
	if !Classify(resp, err, e.idempotent).Retryable {
		return e
	}
	switch {
	case !s.idempotent && !notSent(err):
		// A POST without an idempotency key may have been processed: never repeat it.
		e.unsafe = true
	case !s.rewindable:
		e.unsafe = true
		s.bodyBlocked.Store(resp == nil)
	}
	return e
}

// notSent reports whether err proves the request never reached the server.
func notSent(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}

// fallback runs the transport's fallback function for the pipeline.
func (s *call) fallback(ctx context.Context, cause catalog.Cause, err error) (*http.Response, error) {
	s.signal(ctx, err)
	resp, ferr := s.t.fallback(s.orig, cause, err)
	if ferr == nil && resp != nil {
		if resp.Header == nil {
			resp.Header = make(http.Header)
		}
		resp.Header.Set(FallbackHeader, cause.String())
	}
	return resp, ferr
}

func (s *call) fallbackResponse(resp *http.Response) *http.Response {
	if resp == nil {
		resp = &http.Response{StatusCode: http.StatusOK, Header: http.Header{FallbackHeader: {catalog.CauseError.String()}}}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	if resp.Request == nil {
		resp.Request = s.orig
	}
	if resp.Status == "" {
		resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	if resp.Proto == "" {
		resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	}
	return resp
}

// closeUnsentBody honours the RoundTripper contract: the request body is closed even when it
// was never handed to the base transport (rejected, deadline expired).
func (s *call) closeUnsentBody() {
	if !s.bodySent.Load() && s.orig.Body != nil && s.orig.Body != http.NoBody {
		_ = s.orig.Body.Close()
	}
}

// signal passes the do-not-retry signal to the server handling the request that made this
// call (see [Middleware]): our retries of this call are exhausted or the budget denied one, or
// the dependency itself said not to retry.
func (s *call) signal(ctx context.Context, err error) {
	if s.downstreamDisabled.Load() {
		MarkRetryDisabled(ctx)
		return
	}
	if err != nil { // (NoteError of a nil error costs an allocation and says no)
		NoteError(ctx, err)
	}
}

// FromFallback reports whether resp was produced by the transport's fallback function, and why
// (an unknown cause in the header reads as catalog.CauseError).
func FromFallback(resp *http.Response) (catalog.Cause, bool) {
	if resp == nil {
		return 0, false
	}
	v := resp.Header.Get(FallbackHeader)
	for _, c := range catalog.Causes {
		if c.String() == v {
			return c, true
		}
	}
	return catalog.CauseError, v != ""
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if c > 127 || !(c == '-' || c == '!' || c == '#' || c == '$' || c == '%' || c == '&' || c == '\'' ||
			c == '*' || c == '+' || c == '.' || c == '^' || c == '_' || c == '`' || c == '|' || c == '~' ||
			('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')) {
			return false
		}
	}
	return true
}
