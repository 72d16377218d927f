package httpx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// The do-not-retry signal travels from the Transport to the Middleware in the request's
// context: see the package documentation.

type signalKey struct{}

type retrySignal struct{ disabled atomic.Bool }

func signalFrom(ctx context.Context) *retrySignal {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(signalKey{}).(*retrySignal)
	return s
}

// MarkRetryDisabled raises the do-not-retry signal of the request whose context is ctx (see
// [Middleware]). It reports false when ctx does not come from a request served by the
// middleware.
func MarkRetryDisabled(ctx context.Context) bool {
	s := signalFrom(ctx)
	if s == nil {
		return false
	}
	s.disabled.Store(true)
	return true
}

// RetryDisabled reports whether the do-not-retry signal of the request whose context is ctx was
// raised.
func RetryDisabled(ctx context.Context) bool {
	s := signalFrom(ctx)
	return s != nil && s.disabled.Load()
}

// NoteError raises the do-not-retry signal when err says that this service's retries of a call
// were exhausted — a *retry.Error with outcome gave_up after more than one attempt, or
// budget_exhausted — and reports whether it did. The Transport calls it for every request; call it
// for the errors of other retried calls (a database through an instrument.Pipeline).
func NoteError(ctx context.Context, err error) bool {
	var re *retry.Error
	if !errors.As(err, &re) {
		return false
	}
	switch re.Outcome() {
	case catalog.OutcomeBudgetExhausted:
	case catalog.OutcomeGaveUp:
		if len(re.Attempts()) < 2 {
			return false
		}
	default:
		return false
	}
	return MarkRetryDisabled(ctx)
}

// Middleware returns next wrapped so that its failure responses carry "Retry-Disabled: true"
// when this service's own retries, made while serving the request, were exhausted or refused by
// the budget (see [NoteError]). The header is set when the handler writes its status; a handler
// that writes its status before making its downstream calls cannot be marked.
func Middleware(next http.Handler) http.Handler {
	return &middleware{next: next, header: RetryDisabledHeader}
}

// MiddlewareWithHeader is [Middleware] with another response header name for the signal; the
// callers' transports must use the same ([WithRetryDisabledHeader]).
func MiddlewareWithHeader(next http.Handler, header string) (http.Handler, error) {
	if next == nil {
		return nil, errors.New("httpx: MiddlewareWithHeader: next handler must not be nil")
	}
	if !validHeaderName(header) {
		return nil, fmt.Errorf("httpx: MiddlewareWithHeader(%q): not a valid header name", header)
	}
	return &middleware{next: next, header: http.CanonicalHeaderKey(header)}, nil
}

type middleware struct {
	next   http.Handler
	header string
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sig := &retrySignal{}
	sw := &signalWriter{ResponseWriter: w, sig: sig, header: m.header}
	m.next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), signalKey{}, sig)))
}

// signalWriter adds the signal header when a failure status is written.
type signalWriter struct {
	http.ResponseWriter
	sig    *retrySignal
	header string
	wrote  bool
}

func (w *signalWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		if code >= 400 && w.sig.disabled.Load() {
			w.Header().Set(w.header, "true")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *signalWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client, when the underlying writer can.
func (w *signalWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer (for http.ResponseController).
func (w *signalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
