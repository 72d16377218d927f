package grpcx

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
)

// Metadata keys the interceptors read and write (gRPC metadata keys are lower case).
const (
	// PushbackKey is gRPC's trailer for the delay a server asks for before the next attempt, in
	// milliseconds: a non-negative 32-bit decimal integer. A negative value, a value that is not
	// such an integer, or more than one value asks the client not to retry at all.
	PushbackKey = "grpc-retry-pushback-ms"
	// RetryDisabledKey is the do-not-retry signal: a failed call whose trailer carries
	// "retry-disabled: true" is not retried. The server interceptors set it (see
	// [UnaryServerInterceptor]); it is the gRPC form of httpx's Retry-Disabled header.
	RetryDisabledKey = "retry-disabled"
)

// Classify classifies a gRPC status code for an operation that is, or is not, idempotent. OK
// succeeds (zero Verdict).
//
//	UNAVAILABLE                  retryable                  breaker failure  grpc_unavailable
//	RESOURCE_EXHAUSTED           retryable (pushback)       breaker failure  grpc_resource_exhausted
//	DEADLINE_EXCEEDED            retryable if idempotent    breaker failure  grpc_deadline
//	UNKNOWN, INTERNAL            retryable if idempotent    breaker failure  error
//	DATA_LOSS                    never retried              breaker failure  error
//	INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED, UNAUTHENTICATED,
//	FAILED_PRECONDITION, OUT_OF_RANGE, UNIMPLEMENTED, ABORTED
//	                             never retried              not a failure    grpc_permanent
//	CANCELED (from the server)   never retried              breaker failure  error
//	codes outside gRPC's set     as UNKNOWN
//
// A CANCELED the caller caused — its own context was cancelled — is not the server's answer:
// [Error.Verdict] gives it class canceled, never retried and never a breaker failure. Classify
// sees only the code, so it classifies a CANCELED as the server's: a server (or a proxy) that
// answers CANCELED is failing the call, and an untrusted server must not be able to make itself
// invisible to the breaker by answering it.
//
// UNKNOWN and INTERNAL report a failure inside the server (a handler that returned a plain error
// or panicked, a stream reset by a proxy): the request may have been processed, so only an
// idempotent operation is repeated, as for a timeout after the request was sent. DATA_LOSS is
// unrecoverable: repeating cannot help, but the dependency is broken. ABORTED is a conflict
// (a transaction or sequencer check), resolved by retrying at a higher level — a new
// read-modify-write — never by repeating the request. The permanent codes are answers: the
// dependency works, so a circuit breaker counts them as successes.
func Classify(code codes.Code, idempotent bool) classify.Verdict {
	switch code {
	case codes.OK:
		return classify.Verdict{}
	case codes.Unavailable:
		return classify.Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassGRPCUnavailable}
	case codes.ResourceExhausted:
		return classify.Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassGRPCResourceExhausted}
	case codes.DeadlineExceeded:
		return classify.Verdict{Retryable: idempotent, BreakerFailure: true, Class: catalog.ClassGRPCDeadline}
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.Unauthenticated, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented, codes.Aborted:
		return classify.Verdict{Class: catalog.ClassGRPCPermanent}
	case codes.Canceled, codes.DataLoss:
		return classify.Verdict{BreakerFailure: true, Class: catalog.ClassError}
	default: // UNKNOWN, INTERNAL, and codes gRPC does not define
		return classify.Verdict{Retryable: idempotent, BreakerFailure: true, Class: catalog.ClassError}
	}
}

// Error reports a failed gRPC attempt to the retry and the other layers of a pipeline: the
// attempt's status and what its trailer said. The interceptors build it; an application
// receives it (often inside a *retry.Error), and status.Code, status.FromError and errors.Is
// with a status error see through it. It tells the layers (see package retry, "Protocol
// adapters"):
//   - Verdict: the classification of its code ([Classify]) — a classify.VerdictError, so the
//     retry, the circuit breaker and the fallback agree on it without options;
//   - RetryAfter: the delay of a valid grpc-retry-pushback-ms trailer ([PushbackKey]);
//   - DoNotRetry: a negative or malformed pushback, the do-not-retry signal
//     ([RetryDisabledKey]: true), or the channel's own gRPC retry policy already retried this
//     code (see [RetryPolicyGuard]);
//   - Idempotent: whether the method was declared idempotent.
//
// When the caller cancelled the call (CANCELED because the caller's context was cancelled),
// errors.Is(err, context.Canceled) holds too, so every layer treats it as the caller's
// cancellation: not retried, not counted by the breaker, no fallback. A CANCELED the caller did
// not cause is the server's answer: a breaker failure, not retried (see [Classify]).
type Error struct {
	// Method is the full method name, "/package.Service/Method".
	Method string

	err        error // what gRPC returned: a status error
	st         *status.Status
	caller     error // context.Canceled when the caller's cancellation ended the attempt
	idempotent bool
	pushback   time.Duration
	hasPush    bool // a valid, non-negative pushback
	refused    bool // a negative or malformed pushback: the server asks not to retry
	signalled  bool // the trailer carried the do-not-retry signal
	policy     bool // the channel's gRPC retry policy already retried this code
}

var (
	_ classify.RetryAfterHint                  = (*Error)(nil)
	_ classify.DoNotRetryHint                  = (*Error)(nil)
	_ classify.IdempotentHint                  = (*Error)(nil)
	_ classify.VerdictError                    = (*Error)(nil)
	_ fallback.Causer                          = (*Error)(nil)
	_ interface{ GRPCStatus() *status.Status } = (*Error)(nil)
)

// newError returns the Error of an attempt of method that failed with err (a status error from
// gRPC), with the attempt's trailer; ctx is the caller's context.
func newError(ctx context.Context, method string, err error, trailer metadata.MD, idempotent bool) *Error {
	st, _ := status.FromError(err)
	e := &Error{Method: method, err: err, st: st, idempotent: idempotent}
	if st.Code() == codes.Canceled && errors.Is(ctx.Err(), context.Canceled) {
		e.caller = context.Canceled
	}
	if len(trailer) > 0 {
		e.pushback, e.hasPush, e.refused = parsePushback(trailer.Get(PushbackKey))
		e.signalled = signalled(trailer.Get(RetryDisabledKey))
	}
	return e
}

// Error returns gRPC's description of the status ("rpc error: code = … desc = …").
func (e *Error) Error() string { return e.err.Error() }

// Unwrap returns the status error gRPC returned and, when the caller cancelled the call,
// context.Canceled.
func (e *Error) Unwrap() []error {
	if e.caller != nil {
		return []error{e.err, e.caller}
	}
	return []error{e.err}
}

// GRPCStatus returns the attempt's status, so that status.FromError and status.Code read it
// through any wrapping.
func (e *Error) GRPCStatus() *status.Status { return e.st }

// Code returns the attempt's status code.
func (e *Error) Code() codes.Code { return e.st.Code() }

// Verdict classifies the attempt's code ([Classify]); it makes Error a classify.VerdictError.
// The caller's own cancellation is class canceled: not retried, not a breaker failure.
func (e *Error) Verdict(idempotent bool) classify.Verdict {
	if e.caller != nil {
		return classify.Verdict{Class: catalog.ClassCanceled}
	}
	return Classify(e.st.Code(), idempotent)
}

// Idempotent reports whether the method was declared idempotent (see [WithIdempotent]).
func (e *Error) Idempotent() bool { return e.idempotent }

// RetryAfter returns the delay of a valid grpc-retry-pushback-ms trailer, for any status code,
// as gRPC's own retry honours it.
func (e *Error) RetryAfter(time.Time) (time.Duration, bool) { return e.pushback, e.hasPush }

// DoNotRetry reports whether the attempt must not be retried: the server sent a negative or
// malformed pushback, or the do-not-retry signal, or the channel's gRPC retry policy already
// retried this code.
func (e *Error) DoNotRetry() bool { return e.refused || e.signalled || e.policy }

// FallbackCause returns catalog.CauseTimeout for DEADLINE_EXCEEDED; other codes let a fallback
// look further (and settle on catalog.CauseError).
func (e *Error) FallbackCause() (catalog.Cause, bool) {
	if e.st.Code() == codes.DeadlineExceeded {
		return catalog.CauseTimeout, true
	}
	return 0, false
}

// maxPushback bounds the pushback in milliseconds: a signed 32-bit integer, as gRPC defines it.
const maxPushback = 1<<31 - 1

// parsePushback reads the values of the pushback trailer: a delay (ok) for exactly one value
// that is a non-negative decimal integer of at most 2^31-1 milliseconds — digits only, an
// optional leading '-' for the negative values that refuse; refuse for a negative value, a
// malformed one ("", "1.5", "+3", "1e3", a number beyond 32 bits) or several values, as gRPC's
// own retry does. No values: neither.
func parsePushback(vals []string) (d time.Duration, ok, refuse bool) {
	switch len(vals) {
	case 0:
		return 0, false, false
	case 1:
	default:
		return 0, false, true
	}
	s := vals[0]
	if strings.HasPrefix(s, "-") {
		return 0, false, true // negative, or malformed: either way, do not retry
	}
	if s == "" || len(s) > 10 {
		return 0, false, true
	}
	var ms int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false, true
		}
		ms = ms*10 + int64(s[i]-'0')
	}
	if ms > maxPushback {
		return 0, false, true
	}
	return time.Duration(ms) * time.Millisecond, true, false
}

// signalled reports whether the values of the do-not-retry key say "true".
func signalled(vals []string) bool {
	for _, v := range vals {
		if strings.EqualFold(strings.TrimSpace(v), "true") {
			return true
		}
	}
	return false
}

// statusError gives the errors with which a pipeline ends a call without a gRPC status of its
// own — an open breaker, a full bulkhead, a deadline — the status an application expects from
// a gRPC call, and keeps them visible to errors.Is and errors.As.
type statusError struct {
	err  error
	code codes.Code
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// GRPCStatus returns the status of the error's code, described by the error.
func (e *statusError) GRPCStatus() *status.Status { return status.New(e.code, e.err.Error()) }

// withStatus returns err if a status is found in its chain, else err with the status that fits:
// UNAVAILABLE for an open breaker, RESOURCE_EXHAUSTED for a full bulkhead, CANCELED and
// DEADLINE_EXCEEDED for the context's errors, UNKNOWN for the rest.
func withStatus(err error) error {
	if err == nil {
		return nil
	}
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		return err
	}
	code := codes.Unknown
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, breaker.ErrOpen):
		code = codes.Unavailable
	case errors.Is(err, bulkhead.ErrFull):
		code = codes.ResourceExhausted
	case errors.Is(err, ErrRetryPolicy):
		code = codes.FailedPrecondition
	}
	return &statusError{err: err, code: code}
}
