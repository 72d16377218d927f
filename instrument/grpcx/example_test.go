package grpcx_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// flaky answers UNAVAILABLE to its first call and succeeds afterwards.
type flaky struct {
	testgrpc.UnimplementedTestServiceServer
	calls int
}

func (f *flaky) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	f.calls++
	if f.calls == 1 {
		return nil, status.Error(codes.Unavailable, "warming up")
	}
	return &testgrpc.SimpleResponse{}, nil
}

// A client connection whose calls go through stormwatch's pipeline: the first call's
// UNAVAILABLE is retried. DialOptions installs the interceptors and turns gRPC's own retry
// policies off, so that attempts never multiply.
func ExampleInterceptor_DialOptions() {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := grpc.NewServer(grpcx.ServerOptions()...) // the do-not-retry signal for this server's callers
	dep := &flaky{}
	testgrpc.RegisterTestServiceServer(srv, dep)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	reg, _ := instrument.NewRegistry()
	rc := retry.Config{}
	rc.Backoff = retry.Backoff{Strategy: retry.Constant, Base: time.Millisecond}
	ic, err := grpcx.NewInterceptor(grpcx.WithRegistry(reg),
		grpcx.WithPipeline(instrument.PipelineConfig{
			Retry:   &rc,
			Breaker: &breaker.Config{},
			Timeout: &timeout.Config{Timeout: 5 * time.Second},
		}))
	if err != nil {
		panic(err)
	}
	conn, err := grpc.NewClient("passthrough:///"+l.Addr().String(),
		append(ic.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	_, err = testgrpc.NewTestServiceClient(conn).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	p, _ := ic.Pipeline("grpc.testing.TestService/UnaryCall")
	s := p.Retry().Snapshot()
	fmt.Println(err, dep.calls, s.Calls[catalog.RetrySuccessfulWithRetry], s.Errors[catalog.ClassGRPCUnavailable])
	// Output: <nil> 2 1 1
}

// Every failed attempt's status code has one verdict, shared by the retry, the circuit breaker
// and the fallback.
func ExampleClassify() {
	for _, code := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.NotFound} {
		fmt.Println(code, grpcx.Classify(code, false), grpcx.Classify(code, true))
	}
	// Output:
	// Unavailable {true true grpc_unavailable} {true true grpc_unavailable}
	// DeadlineExceeded {false true grpc_deadline} {true true grpc_deadline}
	// NotFound {false false grpc_permanent} {false false grpc_permanent}
}
