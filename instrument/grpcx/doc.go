// Package grpcx applies stormwatch's pipeline to gRPC: client interceptors that send every call
// through the retry, circuit breaker, bulkhead, timeout and fallback of its dependency, and
// server interceptors that tell upstream callers not to retry when this service has already
// retried (the do-not-retry signal). It is a Go module of its own, so that users of stormwatch
// who do not use gRPC never download it.
//
//	reg, _ := instrument.NewRegistry()
//	ic, err := grpcx.NewInterceptor(grpcx.WithRegistry(reg),
//		grpcx.WithPipeline(instrument.PipelineConfig{
//			Retry:   &retry.Config{},
//			Breaker: &breaker.Config{},
//			Timeout: &timeout.Config{Timeout: 2 * time.Second},
//		}),
//		grpcx.WithIdempotent("/inventory.v1.Stock/Get"))
//	conn, err := grpc.NewClient(target, append(ic.DialOptions(), creds)...)
//
// # Per dependency
//
// Calls are keyed by a function of the connection and the method — by default the method
// ([MethodKey]: "package.Service/Method"), or the connection's target ([TargetKey]) — and each
// key is one instrument.Pipeline from the registry, with the same metrics, retry log, rules and
// dashboards as HTTP dependencies. Keys pass through instrument.SanitizeName, and the registry's
// cardinality guard bounds them. Retry events name the call by its full method,
// "/package.Service/Method".
//
// # Classification
//
// Every failed attempt is an [*Error] that carries its own verdict ([Classify], a
// classify.VerdictError), so the retry, the breaker and the fallback agree on it:
//
//	code                  retried              breaker        class
//	UNAVAILABLE           yes                  failure        grpc_unavailable
//	RESOURCE_EXHAUSTED    yes, after pushback  failure        grpc_resource_exhausted
//	DEADLINE_EXCEEDED     if idempotent        failure        grpc_deadline
//	UNKNOWN, INTERNAL     if idempotent        failure        error
//	DATA_LOSS             no                   failure        error
//	INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED, UNAUTHENTICATED,
//	FAILED_PRECONDITION, OUT_OF_RANGE, UNIMPLEMENTED, ABORTED
//	                      no                   success        grpc_permanent
//	CANCELED by the caller no                  not counted    canceled
//	CANCELED by the server no                  failure        error
//
// The permanent codes are answers: the dependency works, so the breaker counts them as
// successes, as it counts HTTP 4xx. The caller's own cancellation (its context was cancelled)
// is never a failure, never retried and never a fallback cause (the error matches
// context.Canceled). A CANCELED the caller did not cause — the server, a proxy or the
// connection ended the call — is not retried either, but it counts as a breaker failure: only
// the caller's cancellation is ignored, so an untrusted server cannot stay invisible to the
// breaker by answering CANCELED.
//
// Pushback: a valid grpc-retry-pushback-ms trailer ([PushbackKey]: a non-negative 32-bit
// decimal integer) sets the delay before the next attempt, for any retryable code (delay source
// retry_after, clamped and jittered by the retry's RetryAfter configuration). A negative value,
// a malformed one or several values mean "do not retry", as in gRPC's own retry design and
// implementation: the server asked for something the client does not understand, and waiting
// the backoff instead could hammer a server that asked for a pause.
//
// Idempotency: [WithIdempotent] declares methods ("/package.Service/Method") or whole services
// ("/package.Service/*"); a method whose descriptor, registered in protoregistry.GlobalFiles by
// its generated code (or in the files of [WithDescriptors]), has the option idempotency_level =
// IDEMPOTENT or NO_SIDE_EFFECTS is idempotent without being declared; a pipeline whose
// Retry.Idempotent is true declares every method. Descriptors that are not registered (code
// generated without protoreflect, a proxy's raw methods) leave a method non-idempotent unless
// declared.
//
// # Deadlines
//
// gRPC propagates deadlines itself: each attempt's deadline — the caller's, or the Timeout
// layer's when earlier — travels to the server as grpc-timeout. The retry never retries past the
// caller's deadline: it gives up (outcome gave_up) when the time left is less than the next
// delay plus the least useful attempt time (the Timeout layer's limit, else a tenth of the time
// left), and a pushback longer than the time left ends the call at once.
//
// # Streams
//
// Retries happen only while a stream opens, before any response message has reached the caller:
//
//   - Server-streaming calls (one request, a stream of responses) are opened at the first
//     RecvMsg. Each attempt establishes a new stream, sends the request message again, and waits
//     for the first response message (or the stream's clean end); a failure before it is
//     classified and retried like a unary call's. Once the first message has arrived, the stream
//     is committed: later errors are returned as gRPC reports them, never retried (the caller
//     has already seen messages; repeating would send them twice). Calling Header before the
//     first RecvMsg opens the stream without waiting for a message, which commits it there.
//   - Client-streaming and bidirectional calls retry their establishment only (grpc NewStream:
//     no connection, an open breaker, a full bulkhead). The messages the caller sends are not
//     kept for a replay, so once established the stream is committed.
//
// The pipeline's layers apply to the opening: the breaker records the opening's outcome, the
// bulkhead permit is held while the stream opens (not for its lifetime), the Timeout layer
// bounds the time to open (to the first message, for server-streaming calls). An open stream
// lives on the caller's context. Errors after the opening are the caller's to handle: the
// breaker does not see them. Streams have no fallback.
//
// # The do-not-retry signal (server side)
//
// [UnaryServerInterceptor] and [StreamServerInterceptor] (or [ServerOptions]) put a flag in each
// request's context. A client interceptor whose call was made with that context (or one derived
// from it) raises the flag when its retries were exhausted, when the retry budget refused a
// retry, or when its own dependency sent the signal; so does a handler error that holds a
// *retry.Error with those outcomes. When the handler fails, the server interceptor adds
// "retry-disabled: true" ([RetryDisabledKey]) to the trailer, and the caller's client
// interceptor does not retry the call ([Error.DoNotRetry]). Code that retries something else
// reports its errors with [NoteError] (or calls [MarkRetryDisabled]).
//
// The flag is one for both protocols: package httpx raises the same one. An HTTP request sent
// through an httpx.Transport with the handler's context raises it as a client interceptor does,
// and httpx.NoteError and httpx.MarkRetryDisabled are the same as this package's; likewise an
// HTTP handler behind httpx.Middleware whose downstream calls go through these client
// interceptors, or which calls this package's NoteError or MarkRetryDisabled, gets the
// Retry-Disabled header.
//
// # gRPC's own retries
//
// grpc-go retries calls itself when the channel's service config (grpc.WithDefaultServiceConfig,
// or one the name resolver provides) has a retryPolicy. With stormwatch's retry on top, attempts
// would multiply: 3 × 3 = 9 requests per call. [Interceptor.DialOptions] prevents it: next to the
// interceptors, it turns gRPC's retry policies off (grpc.WithDisableRetry; transparent retries of
// requests that never reached the server application remain). Interceptors installed another
// way ([Interceptor.Unary], [Interceptor.Stream]) cannot see grpc.WithDisableRetry, so they
// look at the channel's policy for the method after a failure: a failure whose code the policy
// retries is not retried again, since gRPC already did ([YieldToRetryPolicy], the default) —
// attempts never multiply, whatever the channel. With [RefuseRetryPolicy] they also refuse,
// before sending, the calls of a method that has a retry policy (once the channel knows its
// service config: after its first call has resolved the target).
package grpcx
