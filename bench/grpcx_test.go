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
// UnaryCall with a small response) over a plain connection, over a connection with grpcx's
// interceptors and the full pipeline (retry, breaker, bulkhead, timeout — the configuration of
// BenchmarkPipelineSuccess), and over one with failsafe-go's failsafegrpc unary interceptor and
// the same four policies (its retry policy from failsafegrpc.NewRetryPolicyBuilder).
// BenchmarkGRPCOverheadRatio interleaves plain and grpcx calls in one loop so that both see the
// same machine load, and reports their ratio.

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

func grpcxOptions(b *testing.B) []grpc.DialOption {
	ic, err := grpcx.NewInterceptor(grpcx.WithRegistry(scrapedRegistry(b)),
		grpcx.WithPipeline(benchPipelineConfig(breaker.Config{})))
	if err != nil {
		b.Fatal(err)
	}
	return ic.DialOptions()
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

func unary(b *testing.B, c testgrpc.TestServiceClient) {
	resp, err := c.UnaryCall(context.Background(), benchRequest)
	if err != nil {
		b.Fatal(err)
	}
	if resp.GetUsername() != "ok" {
		b.Fatalf("response %v", resp)
	}
}

func BenchmarkGRPCOverhead(b *testing.B) {
	addr := grpcServer(b)
	for _, c := range []struct {
		name string
		opts func(*testing.B) []grpc.DialOption
	}{
		{"plain", func(*testing.B) []grpc.DialOption { return nil }},
		{"grpcx", grpcxOptions},
		{"failsafegrpc", failsafeGRPCOptions},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := grpcClient(b, addr, c.opts(b)...)
			b.ReportAllocs()
			for b.Loop() {
				unary(b, client)
			}
		})
	}
}

func BenchmarkGRPCOverheadRatio(b *testing.B) {
	addr := grpcServer(b)
	plain, instrumented := grpcClient(b, addr), grpcClient(b, addr, grpcxOptions(b)...)
	var plainNs, grpcxNs time.Duration
	for b.Loop() {
		t0 := time.Now()
		unary(b, plain)
		t1 := time.Now()
		unary(b, instrumented)
		plainNs += t1.Sub(t0)
		grpcxNs += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plainNs)/n, "plain-ns/call")
	b.ReportMetric(float64(grpcxNs)/n, "grpcx-ns/call")
	b.ReportMetric(float64(grpcxNs)/float64(plainNs), "grpcx/plain")
}
