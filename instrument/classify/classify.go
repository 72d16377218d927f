// Package classify decides, for one finished outbound call, whether it failed, whether it may be
// retried and whether it counts as a failure for a circuit breaker.
//
// One classifier gives two separate verdicts (retryable, breaker failure) and a failure class from
// the closed set catalog.Classes. The class is a metric label value and a log field value:
//
//	v := classify.Classify(resp, err, classify.IsIdempotent(req))
//	if v.Failed() && v.Retryable { … }
//
// Transport errors are recognised with errors.Is/errors.As (connection refused and reset, DNS,
// TLS certificate versus other TLS failures, timeouts), never by matching on text, except for the
// TLS alerts that the standard library reports only as text. The caller's cancellation is never
// retried and never counted as a breaker failure; stormwatch's own rejections (an open breaker, a
// full bulkhead) are recognised through the [Rejection] interface and never retried.
//
// The package imports nothing of stormwatch but the metric catalog (where the classes are
// defined), so the breaker, the retry and the HTTP middleware can all use it.
package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
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
// the whole open window, so retrying only burns budget and adds latency (RT-20, RT-21).
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

// IsIdempotent reports whether req may be sent more than once without changing the outcome:
// GET, HEAD, OPTIONS, PUT and DELETE are idempotent; POST and PATCH only when the request carries
// an Idempotency-Key header (the server then returns the first result for a repeated key). Other
// methods are not. A nil request is not idempotent.
func IsIdempotent(req *http.Request) bool {
	if req == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPost, http.MethodPatch:
		return req.Header.Get("Idempotency-Key") != ""
	}
	return false
}

// Classify classifies an HTTP call from its response and transport error. idempotent
// says whether the request may be repeated safely (see [IsIdempotent]); it gates retrying a 504
// and a timeout after the request was sent.
//
// A non-nil err wins over resp. With no error, responses with a status below 400 succeed (zero
// Verdict), and 4xx/5xx statuses are classified by [Status].
func Classify(resp *http.Response, err error, idempotent bool) Verdict {
	if err != nil {
		return ClassifyError(err, idempotent)
	}
	if resp == nil {
		return Verdict{}
	}
	return Status(resp.StatusCode, idempotent)
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
	case code == http.StatusRequestTimeout:
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassHTTP408}
	case code == http.StatusTooManyRequests:
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassHTTP429}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return Verdict{Class: catalog.ClassHTTPAuth}
	case code < 500:
		return Verdict{Class: catalog.ClassHTTP4xx}
	case code == http.StatusNotImplemented || code == http.StatusHTTPVersionNotSupported:
		return Verdict{Class: catalog.ClassHTTP5xxPermanent}
	case code == http.StatusGatewayTimeout:
		return Verdict{Retryable: idempotent, BreakerFailure: true, Class: catalog.ClassHTTP5xx}
	default:
		return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassHTTP5xx}
	}
}

// ClassifyError classifies a call's error, for HTTP transports and for any other outbound call
// (databases, RPC, plain functions). idempotent gates retrying a timeout that happened after the
// request may have been processed. A nil error succeeds (zero Verdict).
//
// In order of precedence: errors marked with [Business] (not a failure, not retried); stormwatch's
// own rejections ([Rejection]: rejected, never retried, not a breaker failure); the caller's
// cancellation (context.Canceled: canceled, never retried, not a breaker failure); errors that
// report an HTTP status ([StatusError]: as [Status]); errors marked
// with [Permanent] (never retried); TLS certificate errors (tls_cert, not retried); other TLS
// errors (tls); DNS errors (dns); connection refused (conn_refused); connection reset or dropped
// (conn_reset); timeouts (timeout — a timeout while connecting is always retryable, because the
// request was never sent; any other only when idempotent); anything else (error, retryable).
func ClassifyError(err error, idempotent bool) Verdict {
	if err == nil {
		return Verdict{}
	}
	var biz *businessError
	if errors.As(err, &biz) {
		return Verdict{Class: catalog.ClassError}
	}
	var rej Rejection
	if errors.As(err, &rej) && rej.Rejected() {
		return Verdict{Class: catalog.ClassRejected}
	}
	if errors.Is(err, context.Canceled) {
		return Verdict{Class: catalog.ClassCanceled}
	}
	var v Verdict
	var se StatusError
	if errors.As(err, &se) && se.HTTPStatus() >= 400 {
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
	if isTimeout(err) {
		// A timeout while dialling means the request was never sent: repeating it is safe.
		var op *net.OpError
		notSent := errors.As(err, &op) && op.Op == "dial"
		return Verdict{Retryable: idempotent || notSent, BreakerFailure: true, Class: catalog.ClassTimeout}
	}
	return Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassError}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
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
	// an unexported type; handshake failures of crypto/tls are plain errors prefixed "tls: ".
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return true
	}
	return strings.Contains(err.Error(), "tls: ")
}

// Permanent marks err as not retryable, whatever its class (FC-12). The class and the breaker
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

// Business marks err as a business outcome (insufficient balance, validation failure): it is
// returned to the caller but is neither retried nor counted as a breaker failure (FC-03). Its
// class is [ClassError]. errors.Is and errors.As see through the mark.
func Business(err error) error {
	if err == nil {
		return nil
	}
	return &businessError{err}
}

type businessError struct{ err error }

func (e *businessError) Error() string { return e.err.Error() }
func (e *businessError) Unwrap() error { return e.err }
