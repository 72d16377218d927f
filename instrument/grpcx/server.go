package grpcx

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/stormwatch-go/stormwatch/instrument/internal/retrysignal"
)

// The do-not-retry signal (server side): the server interceptors put a flag in each request's
// context; the client interceptors raise it when a downstream call made with that context (or
// one derived from it) exhausted its retries, was refused a retry by the budget, or was told by
// its own dependency not to retry. When the handler then fails, the interceptor adds
// "retry-disabled: true" to the trailer, and the caller's interceptor does not retry the call.
// The flag is package retrysignal's, the same one package httpx raises and reads: a mark made
// through either package is seen by the server of either protocol.

// MarkRetryDisabled raises the do-not-retry signal of the request whose context is ctx (see
// [UnaryServerInterceptor]). It reports false when ctx does not come from a request served
// through the server interceptors or httpx.Middleware. The signal is shared with package httpx:
// a request served by httpx.Middleware is marked too, and httpx.MarkRetryDisabled marks a
// request served through the server interceptors.
func MarkRetryDisabled(ctx context.Context) bool { return retrysignal.Mark(ctx) }

// NoteError raises the do-not-retry signal when err says that this service's retries of a call
// were exhausted — a *retry.Error with outcome gave_up after more than one attempt, or
// budget_exhausted — and reports whether it did. The client interceptors call it for every call;
// call it for the errors of other retried calls (a database through an instrument.Pipeline)
// whose errors the handler does not return. It decides as httpx.NoteError does and raises the
// same signal.
func NoteError(ctx context.Context, err error) bool { return retrysignal.Note(ctx, err) }

// retryDisabledTrailer is the trailer of the signal.
func retryDisabledTrailer() metadata.MD { return metadata.Pairs(RetryDisabledKey, "true") }

// UnaryServerInterceptor returns a server interceptor that marks failed calls with the
// do-not-retry signal ("retry-disabled: true" in the trailer) when this service already retried
// on its caller's behalf: the handler's downstream calls through grpcx or an httpx.Transport
// (with the request's context) exhausted their retries, were refused one by the budget, or were
// told not to retry; the handler raised the signal itself (NoteError or MarkRetryDisabled, of
// this package or of httpx); or the handler's error holds a *retry.Error that gave up after
// retrying or was refused by the budget (the error of any stormwatch retry, gRPC or not).
// Successful calls are never marked.
//
// A service whose callers retry and which retries its own dependencies multiplies attempts at
// every layer (three layers retrying three times send 27 requests to the bottom one); with the
// signal, only the layer nearest the failure retries.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		sctx, sig := retrysignal.With(ctx)
		resp, err := handler(sctx, req)
		if err != nil && (sig.Raised() || retrysignal.Exhausted(err)) {
			_ = grpc.SetTrailer(ctx, retryDisabledTrailer())
		}
		return resp, err
	}
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streams: a stream whose handler fails
// after this service's retries were exhausted ends with the signal in its trailer.
func StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		sctx, sig := retrysignal.With(ss.Context())
		if sctx != ss.Context() {
			ss = &signalStream{ServerStream: ss, ctx: sctx}
		}
		err := handler(srv, ss)
		if err != nil && (sig.Raised() || retrysignal.Exhausted(err)) {
			ss.SetTrailer(retryDisabledTrailer())
		}
		return err
	}
}

// ServerOptions returns the options that install both server interceptors (appended to the
// server's chains).
//
//	srv := grpc.NewServer(grpcx.ServerOptions()...)
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(StreamServerInterceptor()),
	}
}

// signalStream is a server stream whose context carries the flag.
type signalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *signalStream) Context() context.Context { return s.ctx }
