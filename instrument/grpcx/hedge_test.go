package grpcx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

const hedgeDelay = 50 * time.Millisecond

func hedgeOutcomes(t *testing.T, ic *grpcx.Interceptor, key string) map[string]uint64 {
	t.Helper()
	h := pipelineOf(t, ic, key).Hedge()
	require.NotNil(t, h)
	sn := h.Snapshot()
	m := map[string]uint64{"calls": sn.Calls}
	for _, o := range catalog.HedgeOutcomes {
		if n := sn.Hedges[o]; n > 0 {
			m[o.String()] = n
		}
	}
	return m
}

// TestAHedgeBeatsAStalledUnaryCall: on loopback, the first call of an idempotent method stalls;
// after the delay the interceptor calls again, the caller gets the hedge's reply, and the
// stalled call is cancelled (the server sees it); no goroutine is left.
func TestAHedgeBeatsAStalledUnaryCall(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // after the server and the client are closed
	arrived := make(chan int64, 2)
	cancelled := make(chan struct{})
	srv := &testServer{unary: func(ctx context.Context, n int64, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		arrived <- n
		if n == 1 {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}
		return &testgrpc.SimpleResponse{Payload: payload("from the hedge: " + string(req.GetPayload().GetBody()))}, nil
	}}
	addr := serve(t, srv)
	hclk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) // the hedge's alone
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)), grpcx.WithIdempotent(unaryMethod),
		grpcx.WithHedge(hedge.Config{Delay: hedgeDelay, Clock: hclk}))
	c := client(t, addr, ic)

	type result struct {
		resp *testgrpc.SimpleResponse
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{Payload: payload("item 7")})
		res <- result{resp, err}
	}()
	require.Equal(t, int64(1), <-arrived)
	require.True(t, hclk.WaitForTimers(1, nil))
	hclk.Advance(hedgeDelay)
	require.Equal(t, int64(2), <-arrived)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, "from the hedge: item 7", string(r.resp.GetPayload().GetBody()), "the hedge's reply is the caller's")
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled call was not cancelled")
	}
	assert.Equal(t, map[string]uint64{"calls": 1, "won": 1}, hedgeOutcomes(t, ic, unaryKey))
}

// TestNonIdempotentMethodsAndStreamsAreNeverHedged: a method nobody declared idempotent runs
// once however long it takes, and so does a stream's opening.
func TestNonIdempotentMethodsAndStreamsAreNeverHedged(t *testing.T) {
	gate, streamGate := make(chan struct{}), make(chan struct{})
	started := make(chan int64, 4)
	srv := &testServer{
		unary: func(ctx context.Context, n int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
			started <- n
			<-gate
			return &testgrpc.SimpleResponse{Payload: payload("slow")}, nil
		},
		output: func(n int64, _ *testgrpc.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
			started <- n
			<-streamGate
			return s.Send(&testgrpc.StreamingOutputCallResponse{Payload: payload("first")})
		},
	}
	addr := serve(t, srv)
	hclk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)), grpcx.WithHedge(hedge.Config{Delay: hedgeDelay, Clock: hclk, Idempotent: true}))
	c := client(t, addr, ic)

	done, finished := goCall(func() error {
		_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		return err
	})
	require.Equal(t, int64(1), <-started)
	assert.Zero(t, hclk.Timers(), "no hedge is scheduled for a method not declared idempotent")
	hclk.Advance(time.Hour)
	close(gate)
	require.NoError(t, <-done)
	<-finished
	assert.Equal(t, int64(1), srv.unaryCalls.Load())
	assert.Equal(t, map[string]uint64{"calls": 1}, hedgeOutcomes(t, ic, unaryKey))

	// A server stream opens with its first message: the opening waits for it, unhedged.
	st, err := c.StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	recv, recvDone := goCall(func() error {
		m, err := st.Recv()
		if err == nil && string(m.GetPayload().GetBody()) != "first" {
			t.Errorf("got %q", m.GetPayload().GetBody())
		}
		return err
	})
	require.Equal(t, int64(1), <-started)
	assert.Zero(t, hclk.Timers(), "no hedge is scheduled for a stream")
	hclk.Advance(time.Hour)
	close(streamGate)
	require.NoError(t, <-recv)
	<-recvDone
	assert.Equal(t, int64(1), srv.outputCalls.Load())
}
