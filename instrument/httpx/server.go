package httpx

import (
	"context"
	"net/http"

	"github.com/stormwatch-go/stormwatch/instrument/internal/retrysignal"
)

// The do-not-retry signal travels from the clients to the Middleware in the request's context:
// see the package documentation. The flag is package retrysignal's, the same one package grpcx
// (module instrument/grpcx) raises and reads, so a mark made through either package is seen by
// the server of either protocol.

// MarkRetryDisabled raises the do-not-retry signal of the request whose context is ctx (see
// [Middleware]). It reports false when ctx does not come from a request served by the
// middleware or by grpcx's server interceptors. The signal is shared with package grpcx: a
// request served by grpcx's server interceptors is marked too, and grpcx.MarkRetryDisabled
// marks a request served by the middleware.
func MarkRetryDisabled(ctx context.Context) bool { return retrysignal.Mark(ctx) }

// RetryDisabled reports whether the do-not-retry signal of the request whose context is ctx was
// raised, through this package or through grpcx.
func RetryDisabled(ctx context.Context) bool { return retrysignal.Raised(ctx) }

// NoteError raises the do-not-retry signal when err says that this service's retries of a call
// were exhausted — a *retry.Error with outcome gave_up after more than one attempt, or
// budget_exhausted — and reports whether it did. The Transport calls it for every request; call it
// for the errors of other retried calls (a database through an instrument.Pipeline). It decides
// as grpcx.NoteError does and raises the same signal.
func NoteError(ctx context.Context, err error) bool { return retrysignal.Note(ctx, err) }

// Middleware returns next wrapped so that its failure responses carry "Retry-Disabled: true"
// when this service's own retries, made while serving the request, were exhausted or refused by
// the budget (see [NoteError]) — retries of HTTP calls through a [Transport], of gRPC calls
// through grpcx's client interceptors, or of anything reported with NoteError or
// [MarkRetryDisabled] of either package. The header is set when the handler writes its status; a
// handler that writes its status before making its downstream calls cannot be marked.
func Middleware(next http.Handler) http.Handler {
	return &middleware{next: next, header: RetryDisabledHeader}
}

// MiddlewareWithHeader is [Middleware] with another response header name for the signal; the
// callers' transports must use the same ([WithRetryDisabledHeader]).
func MiddlewareWithHeader(next http.Handler, header string) (http.Handler, error) {
	if next == nil {
		return nil, optionError("MiddlewareWithHeader.next", nil, "next handler must not be nil")
	}
	if !validHeaderName(header) {
		return nil, optionError("MiddlewareWithHeader.header", header, "not a valid header name")
	}
	return &middleware{next: next, header: http.CanonicalHeaderKey(header)}, nil
}

type middleware struct {
	next   http.Handler
	header string
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, sig := retrysignal.With(r.Context())
	sw := &signalWriter{ResponseWriter: w, sig: sig, header: m.header}
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	m.next.ServeHTTP(sw, r)
}

// signalWriter adds the signal header when a failure status is written.
type signalWriter struct {
	http.ResponseWriter
	sig    *retrysignal.Signal
	header string
	wrote  bool
}

func (w *signalWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		if code >= 400 && w.sig.Raised() {
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
