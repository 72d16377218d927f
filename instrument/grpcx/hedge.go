package grpcx

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// WithHedge hedges the unary calls of idempotent methods (package hedge): when an attempt has
// not answered after the hedge delay, the interceptor makes the call again, keeps the first
// acceptable answer and cancels the other attempt. It sets PipelineConfig.Hedge, whatever
// [WithPipeline] says; a pipeline's Hedge does the same.
//
// Only the methods the interceptor calls idempotent — named with [WithIdempotent], declared so
// by their descriptor's idempotency_level, or all of them with Retry.Idempotent — are hedged,
// and only unary calls whose reply is a protobuf message: every hedge receives into a reply of
// its own, and the winner's is merged into the caller's once every attempt has ended.
// hedge.Config.Idempotent does not apply here. Streams are never hedged.
func WithHedge(cfg hedge.Config) Option {
	return func(ic *Interceptor) error {
		ic.hedge = &cfg
		return nil
	}
}

// hedgeContext is the caller's context, marked with whether the call may be hedged when the
// pipeline hedges.
func (u *unaryCall) hedgeContext() context.Context {
	if u.t.p.Hedge() == nil {
		return u.ctx
	}
	_, isProto := u.reply.(proto.Message)
	u.hedged = u.t.idempotent && isProto
	return hedge.WithIdempotent(u.ctx, u.hedged)
}

// ownAttempt is an attempt of a hedged call after the first: it receives into a reply and a
// trailer of its own, since another attempt may be running.
func (u *unaryCall) ownAttempt(actx context.Context) (any, error) {
	reply := u.reply.(proto.Message).ProtoReflect().New().Interface()
	var trailer metadata.MD
	opts := make([]grpc.CallOption, 0, len(u.opts))
	opts = append(opts, u.opts[:len(u.opts)-1]...) // the caller's, without the first attempt's trailer
	opts = append(opts, grpc.Trailer(&trailer))
	err := u.invoker(actx, u.method, u.req, reply, u.cc, opts...)
	if err == nil {
		return reply, nil
	}
	return reply, u.failed(err, trailer)
}

// keep makes the reply of the attempt whose answer the call returns the caller's. It runs once
// every attempt has ended.
func (u *unaryCall) keep(got any) {
	if m, ok := got.(proto.Message); ok && got != u.reply {
		dst := u.reply.(proto.Message)
		proto.Reset(dst)
		proto.Merge(dst, m)
	}
}

// noHedge marks a stream's context: its opening is never hedged.
func noHedge(ctx context.Context, p *instrument.Pipeline) context.Context {
	if p.Hedge() == nil {
		return ctx
	}
	return hedge.WithIdempotent(ctx, false)
}
