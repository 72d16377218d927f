// Package retrysignal is the server side of the do-not-retry signal, shared by every protocol:
// one flag per request being served, carried by the request's context. A server layer (package
// httpx's Middleware, package grpcx's server interceptors) puts it there with [With]; whatever
// runs with that context — a client of any protocol retrying a downstream call, or the handler
// itself — raises it with [Mark] or [Note]; the server layer reads it when the response is
// written and, when the request failed, tells the caller not to retry (HTTP: a response header,
// gRPC: a trailer).
//
// Because the flag is one, a mark made through either protocol's package is seen by the server
// of either protocol: a gRPC handler whose downstream is HTTP, or an HTTP handler whose
// downstream is gRPC, passes the signal on like any other.
//
// The package is internal to instrument/, and module instrument/grpcx imports it too (Go's
// internal rule is path-based): a change here must keep grpcx compiling, and a released grpcx
// requires a version of the main module that has this package.
package retrysignal

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// key is the context key of the flag.
type key struct{}

// Signal is the do-not-retry flag of one request being served. Its methods are safe for
// concurrent use: a handler may fan its downstream calls out to goroutines.
type Signal struct{ disabled atomic.Bool }

// Raise raises the flag.
func (s *Signal) Raise() { s.disabled.Store(true) }

// Raised reports whether the flag was raised.
func (s *Signal) Raised() bool { return s.disabled.Load() }

// signalCtx is a context carrying a flag: the context and the flag in one allocation.
type signalCtx struct {
	context.Context
	sig Signal
}

func (c *signalCtx) Value(k any) any {
	if k == (key{}) {
		return &c.sig
	}
	return c.Context.Value(k)
}

// With returns a context carrying a flag, and the flag. When ctx already carries one — the
// request passes through a second server layer in the same process, such as a gRPC server
// served by grpc.Server.ServeHTTP behind an HTTP middleware — it returns ctx and that flag
// unchanged, so that one request has one flag, whichever layer reads it. Otherwise it returns a
// context derived from ctx with a new flag (one allocation).
func With(ctx context.Context) (context.Context, *Signal) {
	if s := From(ctx); s != nil {
		return ctx, s
	}
	sc := &signalCtx{Context: ctx}
	return sc, &sc.sig
}

// From returns the flag that ctx carries, nil when ctx is nil or carries none.
func From(ctx context.Context) *Signal {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(key{}).(*Signal)
	return s
}

// Mark raises the flag that ctx carries and reports whether there was one.
func Mark(ctx context.Context) bool {
	s := From(ctx)
	if s == nil {
		return false
	}
	s.Raise()
	return true
}

// Raised reports whether ctx carries a flag that was raised.
func Raised(ctx context.Context) bool {
	s := From(ctx)
	return s != nil && s.Raised()
}

// Note raises the flag that ctx carries when [Exhausted] says err is a reason to, and reports
// whether it did.
func Note(ctx context.Context, err error) bool {
	return Exhausted(err) && Mark(ctx)
}

// Exhausted reports whether err says that this service already retried on its caller's behalf:
// err holds (as errors.As finds it) a *retry.Error whose outcome is budget_exhausted, or
// gave_up after more than one attempt. A call that made a single attempt did not retry — its
// error was not retryable, or MaxAttempts is 1 — and an aborted call (the caller's cancellation
// or deadline) says nothing about the dependency, so neither is a reason. Whether a downstream
// response itself carried the signal is the client's to report, with [Mark]: the hints an
// attempt's error carries (classify.DoNotRetryHint) also say "unsafe to repeat", which is no reason
// to stop the caller's retries.
func Exhausted(err error) bool {
	var re *retry.Error
	if !errors.As(err, &re) {
		return false
	}
	switch re.Outcome() {
	case catalog.OutcomeBudgetExhausted:
		return true
	case catalog.OutcomeGaveUp:
		return len(re.Attempts()) >= 2
	}
	return false
}
