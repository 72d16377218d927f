package httpx

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/internal/redact"
)

// This file adapts package retry to HTTP: the error that carries a failed attempt's retry hints
// (Retry-After, the do-not-retry signal, the request's idempotency, the status), the hooks that
// drain dropped responses and keep the returned one readable, and the endpoint named in retry
// events. The Transport uses them for every request; RetryHooks gives them to code that calls
// retry.CallWith itself.

// Error reports a failed HTTP attempt — a failing response ([Classify] calls it a failure:
// 5xx, 408, 429, 4xx) or a transport error — to the retry and the other layers of a pipeline.
// Build it with [Result]. It tells the retry (see package retry, "Protocol adapters"):
//   - RetryAfter: the Retry-After header of a 429 or 503 response (delta-seconds or an HTTP-date),
//     which sets the delay before the next attempt;
//   - DoNotRetry: the response carried the do-not-retry signal ([RetryDisabledHeader]: true), or
//     the Transport found repeating the request unsafe;
//   - Idempotent: the request's idempotency ([IsIdempotent]);
//   - HTTPStatus: the status, which classify and the retry log's http_status use.
type Error struct {
	StatusCode int    // 0 when no response arrived
	Status     string // e.g. "503 Service Unavailable"
	Err        error  // the transport error; nil when a response arrived

	retryAfter string // the raw Retry-After header
	idempotent bool   // the request may be repeated safely
	signalled  bool   // the response carried the do-not-retry signal
	unsafe     bool   // repeating the request is unsafe (set by the Transport)
}

var (
	_ classify.RetryAfterHint = (*Error)(nil)
	_ classify.DoNotRetryHint = (*Error)(nil)
	_ classify.IdempotentHint = (*Error)(nil)
	_ classify.StatusError    = (*Error)(nil)
)

// Error describes the status or the transport error.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	if e.Status != "" {
		return "HTTP " + e.Status
	}
	return fmt.Sprintf("HTTP %d", e.StatusCode)
}

// Unwrap returns the transport error.
func (e *Error) Unwrap() error { return e.Err }

// HTTPStatus returns the response status, or 0 when no response arrived (a transport error). It
// makes Error a classify.StatusError, so that classify.ClassifyError — and a circuit breaker
// using it — classifies a failed response by its status (a 404 is not a breaker failure).
func (e *Error) HTTPStatus() int {
	if e.Err != nil {
		return 0
	}
	return e.StatusCode
}

// Idempotent reports whether the request may be sent again safely ([IsIdempotent]).
func (e *Error) Idempotent() bool { return e.idempotent }

// DoNotRetry reports whether the request must not be retried: the response carried the
// do-not-retry signal, or the Transport found repeating it unsafe (a POST that may have been
// processed, a body that cannot be rewound).
func (e *Error) DoNotRetry() bool { return e.signalled || e.unsafe }

// RetryAfter returns the wait that the Retry-After header of a 429 or 503 response asks for, at
// now: delta-seconds (any number of digits, a fraction allowed, surrounding spaces ignored) or an
// HTTP-date (a date in the past waits 0). It reports false for other statuses and for an absent
// or invalid header ("-1", "abc", "1e3"), so that the retry falls back to its backoff: an invalid
// value never means "retry at once". Huge values come back as a maximum of 2^32 seconds, which
// the retry clamps to its own maximum.
func (e *Error) RetryAfter(now time.Time) (time.Duration, bool) {
	if e.Err != nil || (e.StatusCode != http.StatusTooManyRequests && e.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	return parseRetryAfter(e.retryAfter, now)
}

// Result reports one HTTP attempt: nil when it succeeded (classify.Classify finds no failure),
// else an [*Error] for the transport error or failing response of req. Use it as the Check of
// retry or pipeline hooks (see [RetryHooks]), or return it from an attempt function after closing
// the response body. The request may be nil (resp.Request is used).
func Result(req *http.Request, resp *http.Response, err error) error {
	if e := newError(req, resp, err, RetryDisabledHeader); e != nil {
		return e
	}
	return nil
}

// newError is Result's *Error, nil on success; signal is the do-not-retry header honoured besides
// RetryDisabledHeader.
func newError(req *http.Request, resp *http.Response, err error, signal string) *Error {
	if req == nil && resp != nil {
		req = resp.Request
	}
	idempotent := IsIdempotent(req)
	if !Classify(resp, err, idempotent).Failed() {
		return nil
	}
	e := &Error{idempotent: idempotent, Err: err}
	if resp != nil {
		e.StatusCode, e.Status = resp.StatusCode, resp.Status
		e.retryAfter = resp.Header.Get("Retry-After")
		e.signalled = signalled(resp.Header, RetryDisabledHeader) || (signal != RetryDisabledHeader && signalled(resp.Header, signal))
	}
	return e
}

// signalled reports whether header name of h says "true".
func signalled(h http.Header, name string) bool {
	return strings.EqualFold(strings.TrimSpace(h.Get(name)), "true")
}

// RetryHooks returns the hooks for retrying req with retry.CallWith: Endpoint from [Endpoint],
// Check from [Result], Discard from [DiscardResponse], the status of a successful response, and
// Retain, which keeps the returned response's body readable under the retry's AttemptTimeout and
// MaxDuration until the caller closes it or reads it to the end.
func RetryHooks(req *http.Request) retry.Hooks[*http.Response] {
	return retry.Hooks[*http.Response]{
		Endpoint: Endpoint(req),
		Check:    func(resp *http.Response, err error) error { return Result(req, resp, err) },
		Discard:  DiscardResponse,
		Status:   responseStatus,
		Retain:   retain,
	}
}

// maxDrain bounds how much of a discarded body is read to let the connection be reused.
const maxDrain = 64 << 10

// DiscardResponse drains (up to 64 KiB) and closes the body of a response that is dropped, so the
// connection can be reused. A nil response or body is ignored.
func DiscardResponse(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}

func responseStatus(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// retain keeps the contexts of the attempt alive while the returned body is read: closing the
// body, or reading it to the end, releases them.
func retain(resp *http.Response, release func()) *http.Response {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		release()
		return resp
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp
}

// releasingBody is a response body that calls release once, at EOF or on Close.
type releasingBody struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.release)
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// Endpoint names req in retry events and logs: the method, then the host and path — never the
// query string, the fragment or userinfo, which may carry tokens.
func Endpoint(req *http.Request) string {
	if req == nil || req.URL == nil {
		return ""
	}
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	host := req.URL.Host
	if host == "" {
		host = req.Host
	}
	return redact.Endpoint(m + " " + host + req.URL.EscapedPath())
}

// SanitizeEndpoint removes what must never be logged from a string naming an operation: userinfo,
// the query string and the fragment, whatever the shape — "METHOD URL", "METHOD /path", a URL
// with or without a scheme ("//user:pass@host/a"), "host/path", several words — and whatever the
// bytes. It is idempotent. The Transport applies it to the endpoints of [WithEndpoint], and the
// retry log to every endpoint it writes.
func SanitizeEndpoint(s string) string { return redact.Endpoint(s) }

// maxRetryAfter is the longest wait parseRetryAfter reports; larger values, however many digits
// they have, are reported as it.
const (
	maxRetryAfterSeconds = 1 << 32
	maxRetryAfter        = maxRetryAfterSeconds * time.Second
)

// parseRetryAfter parses a Retry-After value at now: delta-seconds or an HTTP-date. See
// [Error.RetryAfter].
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	s := strings.TrimSpace(v)
	if s == "" {
		return 0, false
	}
	if d, ok := parseSeconds(s); ok {
		return d, true
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// parseSeconds parses delta-seconds: decimal digits with at most one '.', at least one digit
// ("30", "2.5", "007", ".5"), without a sign or an exponent. A value of maxRetryAfterSeconds or
// more, of any length, is maxRetryAfter; the fraction counts to the nanosecond.
func parseSeconds(s string) (time.Duration, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if (whole == "" && frac == "") || !digits(whole) || !digits(frac) {
		return 0, false
	}
	var secs uint64
	for i := 0; i < len(whole); i++ {
		secs = secs*10 + uint64(whole[i]-'0')
		if secs >= maxRetryAfterSeconds {
			return maxRetryAfter, true
		}
	}
	d := time.Duration(secs) * time.Second
	for i, unit := 0, time.Second/10; i < len(frac) && unit > 0; i, unit = i+1, unit/10 {
		d += time.Duration(frac[i]-'0') * unit
	}
	return d, true
}

// digits reports whether s holds ASCII digits only (true for "").
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
