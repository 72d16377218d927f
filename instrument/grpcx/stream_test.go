package grpcx_test

import (
	"context"
	"io"
	"strconv"
	"sync/atomic"
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
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

type outputStream = grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]

// sendN sends n messages "0", "1", …
func sendN(s outputStream, n int) error {
	for i := 0; i < n; i++ {
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: payload(strconv.Itoa(i))}); err != nil {
			return err
		}
	}
	return nil
}

// recvAll reads a server stream to its end and returns the messages' bodies and the final error
// (nil for a clean end).
func recvAll(s grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse]) ([]string, error) {
	var got []string
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, string(m.GetPayload().GetBody()))
	}
}

// A server-streaming call that fails before its first message is retried: a new stream, the
// request sent again. The caller sees one clean stream.
func TestServerStreamRetriedBeforeTheFirstMessage(t *testing.T) {
	srv := &testServer{output: func(n int64, req *testgrpc.StreamingOutputCallRequest, s outputStream) error {
		if string(req.GetPayload().GetBody()) != "request" {
			return status.Error(codes.InvalidArgument, "the request was not sent again")
		}
		if n == 1 {
			_ = s.SendHeader(metadata.Pairs("attempt", "1")) // headers sent: still no message
			return status.Error(codes.Unavailable, "warming up")
		}
		return sendN(s, 3)
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	rec := record(ic.Registry().Events())
	st, err := client(t, addr, ic).StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{Payload: payload("request")})
	require.NoError(t, err)
	got, err := recvAll(st)
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "1", "2"}, got)
	assert.Equal(t, int64(2), srv.outputCalls.Load())

	p := pipelineOf(t, ic, outputKey)
	assert.Equal(t, uint64(1), p.Retry().Snapshot().Calls[catalog.RetrySuccessfulWithRetry])
	bs := p.Breaker().Snapshot()
	assert.Equal(t, uint64(1), bs.Calls[catalog.CallFailed])
	assert.Equal(t, uint64(1), bs.Calls[catalog.CallSuccessful])
	evs := rec.events()
	require.Len(t, evs, 2)
	assert.Equal(t, outputMethod, evs[0].Endpoint)
}

// Once a message has arrived, the stream is the caller's: a later failure is returned as is.
func TestServerStreamNotRetriedAfterTheFirstMessage(t *testing.T) {
	srv := &testServer{output: func(_ int64, _ *testgrpc.StreamingOutputCallRequest, s outputStream) error {
		if err := sendN(s, 2); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "lost the shard")
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	st, err := client(t, addr, ic).StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	got, err := recvAll(st)
	assert.Equal(t, []string{"0", "1"}, got)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int64(1), srv.outputCalls.Load())
	bs := pipelineOf(t, ic, outputKey).Breaker().Snapshot()
	assert.Equal(t, uint64(1), bs.Calls[catalog.CallSuccessful], "the opening succeeded; later errors are the caller's")
}

func TestServerStreamEndingWithoutMessages(t *testing.T) {
	srv := &testServer{output: func(int64, *testgrpc.StreamingOutputCallRequest, outputStream) error { return nil }}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	st, err := client(t, addr, ic).StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	got, err := recvAll(st)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = st.Recv()
	assert.Equal(t, io.EOF, err, "the end stays the end")
	assert.Equal(t, uint64(1), pipelineOf(t, ic, outputKey).Retry().Snapshot().Calls[catalog.RetrySuccessfulWithoutRetry])
}

// Opening failures go to the breaker: once open, a stream fails at its first Recv without
// reaching the server.
func TestServerStreamFailsFastWhenTheBreakerIsOpen(t *testing.T) {
	srv := &testServer{output: func(int64, *testgrpc.StreamingOutputCallRequest, outputStream) error {
		return status.Error(codes.Unavailable, "down")
	}}
	addr := serve(t, srv)
	cfg := pipeline(nil)
	cfg.Breaker = &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 3, OpenDuration: time.Hour}
	ic := newInterceptor(t, grpcx.WithPipeline(cfg))
	c := client(t, addr, ic)
	for i := 0; i < 2; i++ {
		st, err := c.StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err, "the stream opens at its first Recv")
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		_, again := st.Recv()
		assert.Equal(t, err, again, "a failed opening keeps its error")
	}
	assert.Equal(t, int64(3), srv.outputCalls.Load())
	assert.Equal(t, catalog.StateOpen, pipelineOf(t, ic, outputKey).Breaker().State())
}

// The Timeout layer bounds the opening — up to the first message — not the stream's life.
func TestTimeoutBoundsTheOpeningOnly(t *testing.T) {
	clk := clock.NewFake(time.Now())
	more, arrived := make(chan struct{}), make(chan struct{})
	srv := &testServer{output: func(n int64, _ *testgrpc.StreamingOutputCallRequest, s outputStream) error {
		if n == 1 { // the first attempt never answers: the Timeout layer ends it
			close(arrived)
			<-s.Context().Done()
			return s.Context().Err()
		}
		if err := sendN(s, 1); err != nil {
			return err
		}
		<-more
		return sendN(s, 2)
	}}
	addr := serve(t, srv)
	cfg := pipeline(clk)
	cfg.Timeout = &timeout.Config{Timeout: time.Minute, Clock: clk}
	ic := newInterceptor(t, grpcx.WithPipeline(cfg), grpcx.WithIdempotent(outputMethod))
	st, err := client(t, addr, ic).StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)

	first, finished := goCall(func() error {
		m, err := st.Recv()
		if err == nil && string(m.GetPayload().GetBody()) != "0" {
			t.Errorf("first message %q", m.GetPayload().GetBody())
		}
		return err
	})
	<-arrived
	require.True(t, clk.WaitForTimers(1, finished), "the first attempt is under the timeout")
	clk.Advance(time.Minute)
	require.NoError(t, <-first, "the timed-out opening was retried (the method is idempotent)")

	clk.Advance(time.Hour) // long past the limit: the open stream lives on
	close(more)
	got, err := recvAll(st)
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "1"}, got)
	p := pipelineOf(t, ic, outputKey)
	assert.Equal(t, uint64(1), p.Timeout().Snapshot().Calls[catalog.TimeoutTimedOut])
	assert.Equal(t, uint64(1), p.Timeout().Snapshot().Calls[catalog.TimeoutSuccessful])
	assert.Equal(t, uint64(1), p.Retry().Snapshot().Errors[catalog.ClassGRPCDeadline])
}

// Header before the first Recv opens the stream without waiting for a message: the opening ends
// there, and a failure after it is not retried.
func TestHeaderCommitsAServerStream(t *testing.T) {
	srv := &testServer{output: func(int64, *testgrpc.StreamingOutputCallRequest, outputStream) error {
		return status.Error(codes.Unavailable, "down")
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	st, err := client(t, addr, ic).StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	_, err = st.Header()
	require.NoError(t, err)
	_, err = st.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int64(1), srv.outputCalls.Load())
}

// failFirstStreams is an inner stream interceptor that fails the first n stream establishments
// with UNAVAILABLE, as a connection that is not ready would.
func failFirstStreams(n int64, count *atomic.Int64) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if count.Add(1) <= n {
			return nil, status.Error(codes.Unavailable, "no connection")
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
}

// Client-streaming calls retry their establishment only: the messages sent after it are not kept.
func TestClientStreamRetriesItsEstablishmentOnly(t *testing.T) {
	srv := &testServer{input: func(n int64, s grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
		total := 0
		for {
			m, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			total += len(m.GetPayload().GetBody())
		}
		if n == 2 {
			return status.Error(codes.Unavailable, "could not store the upload")
		}
		return s.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: int32(total)})
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	var established atomic.Int64
	c := client(t, addr, ic, grpc.WithChainStreamInterceptor(failFirstStreams(2, &established)))
	upload := func() (*testgrpc.StreamingInputCallResponse, error) {
		st, err := c.StreamingInputCall(context.Background())
		if err != nil {
			return nil, err
		}
		for _, part := range []string{"ab", "cde"} {
			if err := st.Send(&testgrpc.StreamingInputCallRequest{Payload: payload(part)}); err != nil {
				return nil, err
			}
		}
		return st.CloseAndRecv()
	}
	resp, err := upload()
	require.NoError(t, err)
	assert.Equal(t, int32(5), resp.GetAggregatedPayloadSize())
	assert.Equal(t, int64(3), established.Load(), "two failed establishments, retried")
	assert.Equal(t, int64(1), srv.inputCalls.Load())

	_, err = upload() // established at once; the server fails it after the upload
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int64(2), srv.inputCalls.Load(), "not retried after the establishment")
	p := pipelineOf(t, ic, inputKey)
	assert.Equal(t, uint64(1), p.Retry().Snapshot().Calls[catalog.RetrySuccessfulWithRetry])
	assert.Equal(t, uint64(2), p.Retry().Snapshot().Errors[catalog.ClassGRPCUnavailable])
}

// Bidirectional streams: establishment through the pipeline (an open breaker refuses it), and
// mid-stream failures are the caller's.
func TestBidiStream(t *testing.T) {
	srv := &testServer{duplex: func(_ int64, s grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
		for {
			m, err := s.Recv()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if string(m.GetPayload().GetBody()) == "fail" {
				return status.Error(codes.Unavailable, "dropped")
			}
			if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
				return err
			}
		}
	}}
	addr := serve(t, srv)
	cfg := pipeline(nil)
	cfg.Breaker = &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1, OpenDuration: time.Hour}
	ic := newInterceptor(t, grpcx.WithPipeline(cfg))
	c := client(t, addr, ic)

	st, err := c.FullDuplexCall(context.Background())
	require.NoError(t, err)
	require.NoError(t, st.Send(&testgrpc.StreamingOutputCallRequest{Payload: payload("ping")}))
	m, err := st.Recv()
	require.NoError(t, err)
	assert.Equal(t, "ping", string(m.GetPayload().GetBody()))
	require.NoError(t, st.Send(&testgrpc.StreamingOutputCallRequest{Payload: payload("fail")}))
	_, err = st.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int64(1), srv.duplexCalls.Load(), "not retried")

	p := pipelineOf(t, ic, duplexKey)
	p.Breaker().ForceOpen()
	_, err = c.FullDuplexCall(context.Background())
	assert.ErrorIs(t, err, breaker.ErrOpen)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int64(1), srv.duplexCalls.Load())
}

// The caller's cancellation during the opening ends it: CANCELED, not retried.
func TestServerStreamCancelledWhileOpening(t *testing.T) {
	arrived := make(chan struct{})
	srv := &testServer{output: func(_ int64, _ *testgrpc.StreamingOutputCallRequest, s outputStream) error {
		close(arrived)
		<-s.Context().Done()
		return s.Context().Err()
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)), grpcx.WithIdempotent(outputMethod))
	ctx, cancel := context.WithCancel(context.Background())
	st, err := client(t, addr, ic).StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	go func() { <-arrived; cancel() }()
	_, err = st.Recv()
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(1), srv.outputCalls.Load())
	assert.Zero(t, pipelineOf(t, ic, outputKey).Breaker().Snapshot().Calls[catalog.CallFailed])
}
