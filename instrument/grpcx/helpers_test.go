package grpcx_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test service's full method names.
const (
	unaryMethod  = "/grpc.testing.TestService/UnaryCall"
	outputMethod = "/grpc.testing.TestService/StreamingOutputCall"
	unaryKey     = "grpc.testing.TestService/UnaryCall"
	outputKey    = "grpc.testing.TestService/StreamingOutputCall"
	inputKey     = "grpc.testing.TestService/StreamingInputCall"
	duplexKey    = "grpc.testing.TestService/FullDuplexCall"
)

// testServer is grpc-go's interop TestService with scripted behaviour: each method counts its
// calls and runs its function with the call's number (1-based).
type testServer struct {
	testgrpc.UnimplementedTestServiceServer

	unaryCalls, outputCalls, inputCalls, duplexCalls atomic.Int64

	unary  func(ctx context.Context, n int64, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error)
	output func(n int64, req *testgrpc.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error
	input  func(n int64, s grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error
	duplex func(n int64, s grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error
}

func (s *testServer) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	n := s.unaryCalls.Add(1)
	if s.unary == nil {
		return &testgrpc.SimpleResponse{}, nil
	}
	return s.unary(ctx, n, req)
}

func (s *testServer) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, st grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	return s.output(s.outputCalls.Add(1), req, st)
}

func (s *testServer) StreamingInputCall(st grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	return s.input(s.inputCalls.Add(1), st)
}

func (s *testServer) FullDuplexCall(st grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	return s.duplex(s.duplexCalls.Add(1), st)
}

// serve starts srv on 127.0.0.1 and returns its address; the server stops at the end of the test.
func serve(t *testing.T, srv testgrpc.TestServiceServer, opts ...grpc.ServerOption) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(s, srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return l.Addr().String()
}

// dial returns a connection to addr (insecure, loopback), closed at the end of the test.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// zeroRand draws 0: no jitter.
type zeroRand struct{}

func (zeroRand) Float64() float64 { return 0 }

// pipeline is the tests' configuration: 3 attempts without backoff delays, no budget, a breaker
// that never trips in these tests unless asked to, all on clk.
func pipeline(clk clock.Clock) instrument.PipelineConfig {
	rc := retry.Config{MaxAttempts: 3, Clock: clk, Rand: zeroRand{}}
	rc.Backoff = retry.Backoff{Strategy: retry.None}
	rc.DisableBudget = true
	rc.RetryAfter = retry.RetryAfterConfig{Min: time.Millisecond, Max: time.Minute}
	return instrument.PipelineConfig{
		Retry:   &rc,
		Breaker: &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1000, Clock: clk},
	}
}

// newInterceptor returns an interceptor with a registry of its own and opts.
func newInterceptor(t *testing.T, opts ...grpcx.Option) *grpcx.Interceptor {
	t.Helper()
	ic, err := grpcx.NewInterceptor(opts...)
	require.NoError(t, err)
	return ic
}

// client dials addr through ic's DialOptions and returns the TestService client.
func client(t *testing.T, addr string, ic *grpcx.Interceptor, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	t.Helper()
	return testgrpc.NewTestServiceClient(dial(t, addr, append(ic.DialOptions(), opts...)...))
}

// pipelineOf returns ic's pipeline for key.
func pipelineOf(t *testing.T, ic *grpcx.Interceptor, key string) *instrument.Pipeline {
	t.Helper()
	p, err := ic.Pipeline(key)
	require.NoError(t, err)
	return p
}

// recorder keeps the retry events of a hub.
type recorder struct {
	mu  sync.Mutex
	evs []events.Retry
}

func record(hub *events.Hub) *recorder {
	r := &recorder{}
	hub.Retries.Add(func(e events.Retry) {
		r.mu.Lock()
		r.evs = append(r.evs, e)
		r.mu.Unlock()
	})
	return r
}

func (r *recorder) events() []events.Retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Retry(nil), r.evs...)
}

func payload(s string) *testgrpc.Payload { return &testgrpc.Payload{Body: []byte(s)} }

// goCall runs fn in a goroutine: done receives its error, finished is closed after that.
func goCall(fn func() error) (done <-chan error, finished <-chan struct{}) {
	d, f := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(f)
		d <- fn()
	}()
	return d, f
}
