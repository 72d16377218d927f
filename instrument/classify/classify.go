// Package classify decides, for one finished outbound call, whether it failed, whether it may be
// retried and whether it counts as a failure for a circuit breaker.
//
// One classifier gives two separate verdicts (retryable, breaker failure) and a failure class from
// the closed set catalog.Classes. The class is a metric label value and a log field value:
//
//	v := classify.ClassifyError(err, idempotent)      // any call's error
//	v = classify.Status(resp.StatusCode, idempotent)  // an HTTP status
//	if v.Failed() && v.Retryable { … }
//
// It knows no protocol: it does not import net/http. Package httpx maps HTTP responses and
// requests onto it (httpx.Classify, httpx.IsIdempotent), as package grpcx maps gRPC's status
// codes; both carry their verdicts to every layer through the error ([VerdictError],
// [StatusError]) and the hints of hints.go.
//
// # Structure before text
//
// Transport errors are recognised by their types and values (errors.Is and errors.As: net.Error
// timeouts, context.DeadlineExceeded, syscall errors, *net.DNSError, x509 and crypto/tls error
// types), anywhere in a wrapped or joined error, and these structured checks always win over the
// error's text: the text is consulted only as a last resort, for the TLS failures that the
// standard library reports only as text ("tls: …"). Among the structured facts of one error, the
// most restrictive verdict wins: a certificate error (never retried), then a timeout after the
// request may have been sent (retried only when idempotent), then the failures that are always
// retryable. So errors.Join(errors.New("tls: x"), readTimeout) is a timeout, never retried for a
// non-idempotent call.
//
// # The caller's cancellation and stormwatch's rejections
//
// The caller's cancellation (context.Canceled anywhere in the error) is class canceled: never
// retried, never a breaker failure, never a fallback cause. stormwatch's own rejections (an open
// breaker, a full bulkhead) are recognised through the [Rejection] interface: class rejected,
// never retried, not a breaker failure.
//
// # Business errors
//
// A business outcome — insufficient funds, a failed validation, "not found" as an answer — is
// not a fault of the dependency. Mark it with [Business]; it is stormwatch's one marker for this,
// and it means the same thing in every primitive and every composition:
//
//   - the retry never retries it, whatever the error it wraps;
//   - a circuit breaker counts it as ignored: it enters no window and decides nothing;
//   - a fallback does not run for it: the caller receives the error itself;
//   - it is returned to the caller, and errors.Is and errors.As see through the mark.
//
// The call is still a failed one for the retry's metrics (class error), because the caller did
// receive an error. [IsBusiness] reports whether an error carries the mark.
//
// The package imports nothing of stormwatch but the metric catalog (where the classes are
// defined), and nothing of HTTP, so the breaker, the retry, the fallback and the protocol
// adapters can all use it.
package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// Verdict is the classification of one call. The zero Verdict (Class catalog.ClassNone) means the
// call succeeded.
type Verdict struct {
	// Retryable says the call may be repeated: the fault is likely transient and repeating it is
	// safe for the operation's idempotency.
	Retryable bool
	// BreakerFailure says the call counts as a failure for a circuit breaker: it is evidence that
	// the dependency is unhealthy (4xx and the caller's cancellation are not).
	BreakerFailure bool
	// Class is the failure class, one of catalog.Classes; catalog.ClassNone for a success.
	Class catalog.Class
}

// Failed reports whether the verdict is a failure (has a class).
func (v Verdict) Failed() bool { return v.Class != catalog.ClassNone }

// Rejection is implemented by the errors with which stormwatch's own primitives refuse a call
// without running it (an open circuit breaker, a full bulkhead). Rejected reports true. Such
// errors are classified [ClassRejected] and are never retried: the decision is deterministic for
// the whole open window, so retrying only burns budget and adds latency.
type Rejection interface {
	error
	Rejected() bool
}

// StatusError is implemented by errors that report a failed HTTP response (httpx.Error does),
// so that code which only sees errors — a circuit breaker, a pipeline — classifies them by status:
// [ClassifyError] gives such an error the verdict of [Status] for its code. HTTPStatus returns 0
// when there was no response.
type StatusError interface {
	error
	HTTPStatus() int
}

// VerdictError is implemented by errors that carry their own verdict: the error of a protocol
// adapter that knows what its failures mean (package grpcx's error for a gRPC status code).
// Verdict returns the classification of the failed call for an operation that is, or is not,
// idempotent. [ClassifyError] honours it — so the retry, a circuit breaker's default classifier
// and a pipeline give such an error one verdict without a Classify option per layer — after the
// rules that hold for every error (the caller's cancellation, [Business], stormwatch's
// rejections) and before every other rule; [Permanent] still stops it from being retried. A
// zero Verdict says the error is not a failure; a class outside the closed set catalog.Classes
// is reported as catalog.ClassError.
type VerdictError interface {
	error
	Verdict(idempotent bool) Verdict
}

// Status classifies an HTTP status code. Codes below 400 succeed (zero Verdict).
//
//	400 401 403 404 409 422, other 4xx   not retryable, not a breaker failure   http_4xx (401, 403: http_auth)
//	408                                  retryable, breaker failure             http_408
//	429                                  retryable, breaker failure             http_429
//	500 502 503, other 5xx               retryable, breaker failure             http_5xx
//	504                                  retryable only if idempotent, failure  http_5xx
//	501 505                              not retryable, not a breaker failure   http_5xx_permanent
func Status(code int, idempotent bool) Verdict {
	switch {
	case code < 400:
		return Verdict{}
	case code == 408:
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassHTTP408}
	case code == 429:
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassHTTP429}
	case code == 401 || code == 403:
		return Verdict{Class: catalog.ClassHTTPAuth}
	case code < 500:
		return Verdict{Class: catalog.ClassHTTP4xx}
	case code == 501 || code == 505:
		return Verdict{Class: catalog.ClassHTTP5xxPermanent}
	case code == 504:
		return Verdict{Retryable: idempotent, BreakerFailure: true, Class: catalog.ClassHTTP5xx}
	default:
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassHTTP5xx}
	}
}

// ClassifyError classifies a call's error, for HTTP transports and for any other outbound call
// (databases, RPC, plain functions). idempotent gates retrying a timeout that happened after the
// request may have been processed. A nil error succeeds (zero Verdict).
//
// In order of precedence:
//
//   - the caller's cancellation (context.Canceled): canceled, never retried, not a breaker failure;
//   - errors marked with [Business]: class error, not retried, not a breaker failure;
//   - stormwatch's own rejections ([Rejection]): rejected, never retried, not a breaker failure;
//   - errors that carry their own verdict ([VerdictError]): that verdict;
//   - errors that report an HTTP status ([StatusError]): as [Status];
//   - TLS certificate errors (x509 and tls.CertificateVerificationError): tls_cert, not retried;
//   - a timeout after the request may have been sent (context.DeadlineExceeded,
//     os.ErrDeadlineExceeded, a net.Error whose Timeout() is true): timeout, retried only when
//     idempotent;
//   - other TLS errors (tls.RecordHeaderError, tls.AlertError, an alert from the peer): tls;
//   - DNS errors (*net.DNSError, timeouts included: nothing was sent): dns;
//   - connection refused: conn_refused; connection reset, aborted or dropped (EOF): conn_reset;
//   - a timeout while connecting (inside a dial *net.OpError: nothing was sent): timeout, retryable;
//   - text only, as a last resort: a message containing "tls: " is tls;
//   - anything else: error, retryable.
//
// Each rule looks at the whole error — every wrapped and joined error — so a rule above wins over
// a rule below wherever their errors sit. Errors marked with [Permanent] keep their class and
// breaker verdict but are never retried.
func ClassifyError(err error, idempotent bool) Verdict {
	if err == nil {
		return Verdict{}
	}
	if errors.Is(err, context.Canceled) {
		return Verdict{Class: catalog.ClassCanceled}
	}
	if IsBusiness(err) {
		return Verdict{Class: catalog.ClassError}
	}
	var rej Rejection
	if errors.As(err, &rej) && rej.Rejected() {
		return Verdict{Class: catalog.ClassRejected}
	}
	var v Verdict
	var ve VerdictError
	var se StatusError
	if errors.As(err, &ve) {
		v = ve.Verdict(idempotent)
		if v.Class != catalog.ClassNone && !v.Class.Valid() {
			v.Class = catalog.ClassError
		}
	} else if errors.As(err, &se) && se.HTTPStatus() >= 400 {
		v = Status(se.HTTPStatus(), idempotent)
	} else {
		v = transport(err, idempotent)
	}
	var perm *permanentError
	if errors.As(err, &perm) {
		v.Retryable = false
	}
	return v
}

func transport(err error, idempotent bool) Verdict {
	if isTLSCert(err) {
		return Verdict{BreakerFailure: true, Class: catalog.ClassTLSCert}
	}
	sent, unsent := timeouts(err, false, 0)
	if sent {
		return Verdict{Retryable: idempotent, BreakerFailure: true, Class: catalog.ClassTimeout}
	}
	if isTLS(err) {
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassTLS}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassDNS}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassConnRefused}
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassConnReset}
	}
	if unsent {
		// A timeout while connecting means the request was never sent: repeating it is safe.
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassTimeout}
	}
	if strings.Contains(err.Error(), "tls: ") {
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassTLS}
	}
	return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassError}
}

// maxDepth bounds the walk of an error tree; deeper errors are not looked at. errors.Is and
// errors.As have no bound, but a classifier must not loop on a pathological chain.
const maxDepth = 100

// timeouts walks err's tree and reports whether it holds a timeout that may have happened after
// the request was sent (sent), and one that happened while connecting (unsent: inside a dial
// *net.OpError or a *net.DNSError). A wrapper that reports Timeout() because it wraps a timeout
// (*url.Error, *net.OpError) is judged by what it wraps, so that a dial timeout wrapped in a
// *url.Error still counts as unsent; an error counts as a timeout itself only when nothing it
// wraps does.
func timeouts(err error, inDial bool, depth int) (sent, unsent bool) {
	if err == nil || depth > maxDepth {
		return false, false
	}
	switch e := err.(type) {
	case *net.OpError:
		if e != nil && e.Op == "dial" {
			inDial = true
		}
	case *net.DNSError:
		inDial = true
	}
	switch x := err.(type) {
	case interface{ Unwrap() error }:
		sent, unsent = timeouts(x.Unwrap(), inDial, depth+1)
	case interface{ Unwrap() []error }:
		for _, inner := range x.Unwrap() {
			s, u := timeouts(inner, inDial, depth+1)
			sent, unsent = sent || s, unsent || u
		}
	}
	if sent || unsent || !isTimeoutItself(err) {
		return sent, unsent
	}
	return !inDial, inDial
}

// isTimeoutItself reports whether err, not looking at what it wraps, is a timeout.
func isTimeoutItself(err error) (timeout bool) {
	defer func() {
		if recover() != nil { // a method on a nil pointer, for instance
			timeout = false
		}
	}()
	if err == context.DeadlineExceeded || err == os.ErrDeadlineExceeded {
		return true
	}
	if t, ok := err.(interface{ Timeout() bool }); ok && t.Timeout() {
		return true
	}
	if is, ok := err.(interface{ Is(error) bool }); ok {
		return is.Is(context.DeadlineExceeded) || is.Is(os.ErrDeadlineExceeded)
	}
	return false
}

func isTLSCert(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		system   x509.SystemRootsError
		insecure x509.InsecureAlgorithmError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &invalid) ||
		errors.As(err, &hostname) || errors.As(err, &system) || errors.As(err, &insecure)
}

// isTLS reports the TLS failures that crypto/tls reports with a type; see transport for the
// ones it reports only as text.
func isTLS(err error) bool {
	var (
		header tls.RecordHeaderError
		alert  tls.AlertError
		ech    *tls.ECHRejectionError
	)
	if errors.As(err, &header) || errors.As(err, &alert) || errors.As(err, &ech) {
		return true
	}
	// Alerts received from the peer are reported as a *net.OpError with Op "remote error" around
	// an unexported type.
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// Permanent marks err as not retryable, whatever its class. The class and the breaker
// verdict stay those of err; errors.Is and errors.As see through the mark.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Business marks err as a business outcome (insufficient balance, a failed validation): the
// dependency answered, and the answer is an error for the caller. It is stormwatch's one marker
// for this, with one meaning everywhere (see the package documentation): never retried, ignored
// by a circuit breaker, never a fallback cause, returned to the caller. Its class is
// catalog.ClassError. errors.Is and errors.As see through the mark. Business(nil) is nil.
func Business(err error) error {
	if err == nil {
		return nil
	}
	return &businessError{err}
}

// IsBusiness reports whether err, or an error it wraps, was marked with [Business].
func IsBusiness(err error) bool {
	var biz *businessError
	return errors.As(err, &biz)
}

type businessError struct{ err error }

func (e *businessError) Error() string { return e.err.Error() }
func (e *businessError) Unwrap() error { return e.err }
