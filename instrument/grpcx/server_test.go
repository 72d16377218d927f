package grpcx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// twoHops runs client → A → B: B always answers UNAVAILABLE; A's handler calls B through its
// own grpcx interceptor (3 attempts) with the request's context, and answers with handle's
// error. A has the server interceptors when signal is set. It returns the client's error and
// the attempts A and B saw.
func twoHops(t *testing.T, signal bool, handle func(err error) error) (error, int64, int64) {
	t.Helper()
	b := &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		return nil, status.Error(codes.Unavailable, "b is down")
	}}
	bAddr := serve(t, b)
	toB := client(t, bAddr, newInterceptor(t, grpcx.WithPipeline(pipeline(nil))))
	a := &testServer{unary: func(ctx context.Context, _ int64, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		_, err := toB.UnaryCall(ctx, req)
		return nil, handle(err)
	}}
	var opts []grpc.ServerOption
	if signal {
		opts = grpcx.ServerOptions()
	}
	aAddr := serve(t, a, opts...)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	_, err := client(t, aAddr, ic).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	return err, a.unaryCalls.Load(), b.unaryCalls.Load()
}

// The do-not-retry signal crosses two hops: A retried B three times and gave up, so the client
// does not retry A — B sees 3 requests, not 9.
func TestDoNotRetryAcrossTwoHops(t *testing.T) {
	for name, handle := range map[string]func(error) error{
		"handler returns the downstream error": func(err error) error { return err },
		"handler returns a status of its own":  func(error) error { return status.Error(codes.Unavailable, "try later") },
		"handler wraps the retry error":        func(err error) error { return fmt.Errorf("charging: %w", err) },
	} {
		t.Run(name, func(t *testing.T) {
			err, aCalls, bCalls := twoHops(t, true, handle)
			require.Error(t, err)
			assert.Equal(t, int64(1), aCalls, "the client honours the signal")
			assert.Equal(t, int64(3), bCalls)
			var ge *grpcx.Error
			require.ErrorAs(t, err, &ge)
			assert.True(t, ge.DoNotRetry())
		})
	}
	t.Run("without the server interceptors, attempts multiply", func(t *testing.T) {
		_, aCalls, bCalls := twoHops(t, false, func(err error) error { return err })
		assert.Equal(t, int64(3), aCalls)
		assert.Equal(t, int64(9), bCalls)
	})
}

// The signal is only for failures, and only when this service retried: a handler that fails
// on its own is retried by its caller, and a successful answer carries no signal.
func TestSignalOnlyWhenRetriesWereExhausted(t *testing.T) {
	var trailer metadata.MD
	srv := &testServer{unary: func(ctx context.Context, n int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		if n < 3 {
			return nil, status.Error(codes.Unavailable, "own failure")
		}
		return &testgrpc.SimpleResponse{}, nil
	}}
	addr := serve(t, srv, grpcx.ServerOptions()...)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	_, err := client(t, addr, ic).UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.NoError(t, err)
	assert.Equal(t, int64(3), srv.unaryCalls.Load())
	assert.Empty(t, trailer.Get(grpcx.RetryDisabledKey))
}

// A handler that reports another retried call — a database through a pipeline — with
// NoteError, or raises the signal itself, gets the same mark.
func TestNoteErrorAndMarkRetryDisabled(t *testing.T) {
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	p, err := reg.Pipeline("ledger-db", pipeline(nil))
	require.NoError(t, err)
	srv := &testServer{unary: func(ctx context.Context, _ int64, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		switch string(req.GetPayload().GetBody()) {
		case "db":
			err := p.Do(ctx, func(context.Context) error { return errors.New("db unavailable") })
			if !grpcx.NoteError(ctx, err) {
				return nil, status.Error(codes.Internal, "NoteError did not raise the signal")
			}
		case "mark":
			if !grpcx.MarkRetryDisabled(ctx) {
				return nil, status.Error(codes.Internal, "no signal in the context")
			}
		}
		return nil, status.Error(codes.Unavailable, "failed")
	}}
	addr := serve(t, srv, grpcx.ServerOptions()...)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	c := client(t, addr, ic)
	for _, what := range []string{"db", "mark"} {
		var trailer metadata.MD
		_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{Payload: payload(what)}, grpc.Trailer(&trailer))
		assert.Equal(t, codes.Unavailable, status.Code(err), what)
		assert.Equal(t, []string{"true"}, trailer.Get(grpcx.RetryDisabledKey), what)
	}
	assert.Equal(t, int64(2), srv.unaryCalls.Load(), "neither call was retried")

	assert.False(t, grpcx.MarkRetryDisabled(context.Background()), "no request context")
	assert.False(t, grpcx.NoteError(context.Background(), errors.New("x")))
}

// The budget's refusal is a reason to raise the signal too; a single attempt that was not
// retryable is not.
func TestNoteErrorOutcomes(t *testing.T) {
	cfg := retry.Config{MaxAttempts: 3, Clock: clock.NewFake(time.Now())}
	cfg.Backoff = retry.Backoff{Strategy: retry.None}
	r, err := retry.New("x", cfg)
	require.NoError(t, err)
	fails := func(context.Context) error { return errors.New("down") }
	var budgetErr error
	for i := 0; i < 10 && budgetErr == nil; i++ { // the floor's retries run out on a still clock
		var re *retry.Error
		if err := r.Do(context.Background(), fails); errors.As(err, &re) && re.Outcome() == catalog.OutcomeBudgetExhausted {
			budgetErr = err
		}
	}
	require.Error(t, budgetErr, "the budget refused a retry")

	srv := &testServer{unary: func(ctx context.Context, _ int64, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		if string(req.GetPayload().GetBody()) == "budget" {
			return nil, fmt.Errorf("x: %w", budgetErr)
		}
		single := r.Do(ctx, func(context.Context) error { return classify.Business(errors.New("insufficient funds")) })
		return nil, fmt.Errorf("charging: %w", single) // not a *retry.Error: one attempt, not retryable
	}}
	addr := serve(t, srv, grpcx.ServerOptions()...)
	conn := dial(t, addr)
	c := testgrpc.NewTestServiceClient(conn)
	var trailer metadata.MD
	_, _ = c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{Payload: payload("budget")}, grpc.Trailer(&trailer))
	assert.Equal(t, []string{"true"}, trailer.Get(grpcx.RetryDisabledKey))
	trailer = nil
	_, _ = c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	assert.Empty(t, trailer.Get(grpcx.RetryDisabledKey))
}

// The stream interceptor marks failed streams the same way.
func TestStreamServerInterceptorMarksFailures(t *testing.T) {
	b := &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		return nil, status.Error(codes.Unavailable, "b is down")
	}}
	toB := client(t, serve(t, b), newInterceptor(t, grpcx.WithPipeline(pipeline(nil))))
	a := &testServer{output: func(_ int64, _ *testgrpc.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
		_, err := toB.UnaryCall(s.Context(), &testgrpc.SimpleRequest{})
		return status.Error(codes.Unavailable, err.Error())
	}}
	aAddr := serve(t, a, grpcx.ServerOptions()...)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	st, err := client(t, aAddr, ic).StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	_, err = st.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, []string{"true"}, st.Trailer().Get(grpcx.RetryDisabledKey))
	assert.Equal(t, int64(1), a.outputCalls.Load(), "the stream is not retried")
	assert.Equal(t, int64(3), b.unaryCalls.Load())
}
