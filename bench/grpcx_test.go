package bench

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
)

// The gRPC benchmarks measure one unary call on loopback (grpc-go's interop TestService,
// UnaryCall with a small response):
//
//   - plain: a connection without interceptors, the call without a deadline;
//   - plain_deadline: the same with a 1 s deadline on each call, as production calls have — gRPC
//     then sends grpc-timeout and both sides arm a timer;
//   - grpcx: grpcx's interceptors with the full pipeline (retry, breaker, bulkhead, timeout — the
//     configuration of BenchmarkPipelineSuccess); the Timeout layer gives each attempt a deadline;
//   - grpcx_notimeout: the same pipeline without its Timeout layer: the interceptors' own cost;
//   - failsafegrpc: failsafe-go's failsafegrpc unary interceptor with the same four policies (its
//     retry policy from failsafegrpc.NewRetryPolicyBuilder).
//
// BenchmarkGRPCOverheadRatio makes one call of each kind per iteration, each on a connection of
// its own and in a rotating order, so that all see the same machine load, and reports the
// ratios. BenchmarkGRPCXInterceptor measures
// the interceptor alone, around an invoker that returns at once.

type benchService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (benchService) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{Username: "ok"}, nil
}

// grpcServer serves benchService on 127.0.0.1 until the benchmark ends.
func grpcServer(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(s, benchService{})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	b.Cleanup(func() { s.Stop(); <-done })
	return l.Addr().String()
}

// grpcClient dials addr with opts and returns the TestService client, connected.
func grpcClient(b *testing.B, addr string, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	conn, err := grpc.NewClient("passthrough:///"+addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	c := testgrpc.NewTestServiceClient(conn)
	unary(b, c) // connect outside the measurement
	return c
}

func grpcxInterceptor(b *testing.B, timeoutLayer bool) *grpcx.Interceptor {
	cfg := benchPipelineConfig(breaker.Config{})
	if !timeoutLayer {
		cfg.Timeout = nil
	}
	ic, err := grpcx.NewInterceptor(grpcx.WithRegistry(scrapedRegistry(b)), grpcx.WithPipeline(cfg))
	if err != nil {
		b.Fatal(err)
	}
	return ic
}

func grpcxOptions(b *testing.B) []grpc.DialOption { return grpcxInterceptor(b, true).DialOptions() }

func grpcxNoTimeoutOptions(b *testing.B) []grpc.DialOption {
	return grpcxInterceptor(b, false).DialOptions()
}

func failsafeGRPCOptions(*testing.B) []grpc.DialOption {
	rp := failsafegrpc.NewRetryPolicyBuilder[*testgrpc.SimpleResponse]().WithMaxAttempts(3).
		WithBackoff(100*time.Millisecond, 10*time.Second).WithJitterFactor(0.5).Build()
	cb := fscircuitbreaker.NewBuilder[*testgrpc.SimpleResponse]().WithFailureThresholdRatio(50, 100).WithDelay(30 * time.Second).Build()
	policies := []failsafe.Policy[*testgrpc.SimpleResponse]{rp, cb,
		fsbulkhead.New[*testgrpc.SimpleResponse](bulkheadBenchPermits), fstimeout.New[*testgrpc.SimpleResponse](time.Second)}
	return []grpc.DialOption{grpc.WithUnaryInterceptor(failsafegrpc.NewUnaryClientInterceptor(policies...))}
}

var benchRequest = &testgrpc.SimpleRequest{ResponseSize: 8}

func unary(b *testing.B, c testgrpc.TestServiceClient) { unaryCtx(b, context.Background(), c) }

// unaryDeadline makes the call with a 1 s deadline.
func unaryDeadline(b *testing.B, c testgrpc.TestServiceClient) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	unaryCtx(b, ctx, c)
	cancel()
}

func unaryCtx(b *testing.B, ctx context.Context, c testgrpc.TestServiceClient) {
	resp, err := c.UnaryCall(ctx, benchRequest)
	if err != nil {
		b.Fatal(err)
	}
	if resp.GetUsername() != "ok" {
		b.Fatalf("response %v", resp)
	}
}

func BenchmarkGRPCOverhead(b *testing.B) {
	addr := grpcServer(b)
	none := func(*testing.B) []grpc.DialOption { return nil }
	for _, c := range []struct {
		name string
		opts func(*testing.B) []grpc.DialOption
		call func(*testing.B, testgrpc.TestServiceClient)
	}{
		{"plain", none, unary},
		{"plain_deadline", none, unaryDeadline},
		{"grpcx", grpcxOptions, unary},
		{"grpcx_notimeout", grpcxNoTimeoutOptions, unary},
		{"failsafegrpc", failsafeGRPCOptions, unary},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := grpcClient(b, addr, c.opts(b)...)
			b.ReportAllocs()
			for b.Loop() {
				c.call(b, client)
			}
		})
	}
}

func BenchmarkGRPCOverheadRatio(b *testing.B) {
	addr := grpcServer(b)
	// A connection per kind: a call on a connection that has just served another is faster
	// (its goroutines are awake), which would favour whichever kind follows on the same one.
	plain, withDeadline := grpcClient(b, addr), grpcClient(b, addr)
	full, noTimeout := grpcClient(b, addr, grpcxOptions(b)...), grpcClient(b, addr, grpcxNoTimeoutOptions(b)...)
	fs := grpcClient(b, addr, failsafeGRPCOptions(b)...)
	kinds := [...]func(){
		func() { unary(b, plain) },
		func() { unaryDeadline(b, withDeadline) },
		func() { unary(b, full) },
		func() { unary(b, noTimeout) },
		func() { unary(b, fs) },
	}
	var ns [len(kinds)]time.Duration
	// Each iteration makes one call of each kind, starting from a different kind each time, so
	// that no kind always runs first (after the loop's own work) or last.
	for i := 0; b.Loop(); i++ {
		for j := range kinds {
			k := (i + j) % len(kinds)
			t := time.Now()
			kinds[k]()
			ns[k] += time.Since(t)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(ns[0])/n, "plain-ns/call")
	b.ReportMetric(float64(ns[2])/n, "grpcx-ns/call")
	b.ReportMetric(float64(ns[2])/float64(ns[0]), "grpcx/plain")
	b.ReportMetric(float64(ns[2])/float64(ns[1]), "grpcx/plain_deadline")
	b.ReportMetric(float64(ns[3])/float64(ns[0]), "grpcx_notimeout/plain")
	b.ReportMetric(float64(ns[4])/float64(ns[0]), "failsafegrpc/plain")
	b.ReportMetric(float64(ns[2])/float64(ns[4]), "grpcx/failsafegrpc")
}

// BenchmarkGRPCXInterceptor is the unary interceptor alone: the pipeline's layers, the trailer
// option and the idempotency lookup, around an invoker that succeeds at once.
func BenchmarkGRPCXInterceptor(b *testing.B) {
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	for _, c := range []struct {
		name    string
		timeout bool
	}{{"full", true}, {"notimeout", false}} {
		b.Run(c.name, func(b *testing.B) {
			intercept := grpcxInterceptor(b, c.timeout).Unary()
			ctx, req, reply := context.Background(), &testgrpc.SimpleRequest{}, &testgrpc.SimpleResponse{}
			b.ReportAllocs()
			for b.Loop() {
				if err := intercept(ctx, "/grpc.testing.TestService/UnaryCall", req, reply, nil, invoker); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
