// Command grpcclient shows how a service adopts stormwatch for gRPC: one grpcx.Interceptor gives
// every dependency its own retry, circuit breaker, bulkhead, timeout and fallback from one
// registry, exported on /metrics like HTTP dependencies. Two local gRPC servers on 127.0.0.1:
// "catalog" answers (and one stream in ten fails before its first item, which the interceptor
// retries), "payments" answers every call with UNAVAILABLE. Watch the payments breaker trip,
// the fallback answer "payment processing", and the catalog keep succeeding.
//
// It lives in the grpcx module (instrument/grpcx) so that stormwatch's main module never
// depends on gRPC:
//
//	cd instrument/grpcx && go run ./examples/grpcclient -duration 30s
//	curl -s 127.0.0.1:9467/metrics | grep -E 'resilience_(circuitbreaker_state|fallback|retry_calls)'
//
// The retry log (package retrylog, JSON lines) goes to stderr; a one-line status per second to
// stdout.
//
// Flags:
//
//	-listen 127.0.0.1:9467  metrics address
//	-duration 0             how long to run; 0 = until SIGINT or SIGTERM (exits 0)
//	-interval 100ms         pause between rounds (a call and a stream to catalog, a call to payments)
//	-requests 0             stop after this many rounds; 0 = no limit
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
	"github.com/stormwatch-go/stormwatch/internal/exampleutil"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

// The dependencies' names: the `name` label of their series.
const (
	Catalog  = "catalog"
	Payments = "payments"
)

// options are the parsed command-line flags.
type options struct {
	listen   string
	duration time.Duration
	interval time.Duration
	requests int
	// scraped, when set, is called with the metrics URL after the last round, before shutdown
	// (tests use it).
	scraped func(metricsURL string)
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := exampleutil.NewFlagSet("grpcclient")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9467", "address to serve /metrics on")
	fs.DurationVar(&o.duration, "duration", 0, "how long to run; 0 = until SIGINT/SIGTERM")
	fs.DurationVar(&o.interval, "interval", 100*time.Millisecond, "pause between rounds")
	fs.IntVar(&o.requests, "requests", 0, "stop after this many rounds; 0 = no limit")
	return o, exampleutil.Parse(fs, "go run ./examples/grpcclient [flags]", args, stdout, func() error {
		switch {
		case o.duration < 0:
			return fmt.Errorf("-duration %v: must not be negative", o.duration)
		case o.interval < 0:
			return fmt.Errorf("-interval %v: must not be negative", o.interval)
		case o.requests < 0:
			return fmt.Errorf("-requests %d: must not be negative", o.requests)
		}
		return nil
	})
}

// parseArgs parses the command line for main (see exampleutil.ExitCode).
func parseArgs(args []string, stdout, stderr io.Writer) (options, int) {
	o, err := parseFlags(args, stdout)
	return o, exampleutil.ExitCode("grpcclient", err, stderr)
}

func main() {
	o, code := parseArgs(os.Args[1:], os.Stdout, os.Stderr)
	exampleutil.Main("grpcclient", code, func(ctx context.Context) error { return run(ctx, o, os.Stdout, os.Stderr) })
}

// catalogServer answers every call; one stream in ten fails before its first item.
type catalogServer struct {
	testgrpc.UnimplementedTestServiceServer
	streams atomic.Int64
}

func (*catalogServer) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: []byte(`{"items":3}`)}}, nil
}

func (s *catalogServer) StreamingOutputCall(_ *testgrpc.StreamingOutputCallRequest, st grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	if s.streams.Add(1)%10 == 1 {
		return status.Error(codes.Unavailable, "index shard moving")
	}
	for i := 0; i < 3; i++ {
		if err := st.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte("item-" + strconv.Itoa(i))}}); err != nil {
			return err
		}
	}
	return nil
}

// paymentsServer is under maintenance.
type paymentsServer struct {
	testgrpc.UnimplementedTestServiceServer
}

func (paymentsServer) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return nil, status.Error(codes.Unavailable, "bank channel under maintenance")
}

// dependency starts a gRPC server for srv on 127.0.0.1 and returns its address and a function
// that stops it. Its server interceptors add the do-not-retry signal to failures after its own
// retries (these servers call nothing, so they never do).
func dependency(srv testgrpc.TestServiceServer) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	s := grpc.NewServer(grpcx.ServerOptions()...)
	testgrpc.RegisterTestServiceServer(s, srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	return l.Addr().String(), func() { s.Stop(); <-done }, nil
}

// pipeline is the configuration of every dependency: retries with jittered backoff and a
// budget, a breaker over the last 20 attempts, 10 concurrent attempts, 500 ms per attempt (to
// the first item, for a stream), and a fallback.
func pipeline() instrument.PipelineConfig {
	rc := retry.Config{}
	rc.Backoff = retry.Backoff{Strategy: retry.FullJitter, Base: 20 * time.Millisecond, Cap: time.Second}
	return instrument.PipelineConfig{
		Retry:    &rc,
		Breaker:  &breaker.Config{WindowSize: 20, MinCalls: 10, OpenDuration: 10 * time.Second},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 10, MaxWait: 100 * time.Millisecond},
		Timeout:  &timeout.Config{Timeout: 500 * time.Millisecond},
		Fallback: &fallback.Config{},
	}
}

func run(ctx context.Context, o options, status, logOut io.Writer) error {
	ctx, cancel := exampleutil.WithDuration(ctx, o.duration)
	defer cancel()

	catalogAddr, stopCatalog, err := dependency(&catalogServer{})
	if err != nil {
		return err
	}
	defer stopCatalog()
	paymentsAddr, stopPayments, err := dependency(paymentsServer{})
	if err != nil {
		return err
	}
	defer stopPayments()

	// One registry: its retry events go to the retry log, its primitives to /metrics.
	reg, err := instrument.NewRegistry()
	if err != nil {
		return err
	}
	logger, err := retrylog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err != nil {
		return err
	}
	defer logger.Attach(reg.Events())()
	metricsURL, stopMetrics, err := exampleutil.ServeMetrics(o.listen, reg)
	if err != nil {
		return err
	}
	defer stopMetrics()
	fmt.Fprintf(status, "metrics on %s; catalog on %s; payments on %s\n", metricsURL, catalogAddr, paymentsAddr)

	// The interceptor: a dependency per connection, named for the metrics; the fallback answers
	// payments while they are down.
	names := map[string]string{"passthrough:///" + catalogAddr: Catalog, "passthrough:///" + paymentsAddr: Payments}
	ic, err := grpcx.NewInterceptor(
		grpcx.WithRegistry(reg),
		grpcx.WithPipeline(pipeline()),
		grpcx.WithKey(func(cc *grpc.ClientConn, _ string) string { return names[cc.Target()] }),
		grpcx.WithIdempotent("/grpc.testing.TestService/StreamingOutputCall"),
		grpcx.WithFallback(func(_ context.Context, cc *grpc.ClientConn, _ string, _, reply any, _ catalog.Cause, err error) error {
			r, ok := reply.(*testgrpc.SimpleResponse)
			if !ok || names[cc.Target()] != Payments {
				return err
			}
			r.Payload = &testgrpc.Payload{Body: []byte(`{"status":"payment processing"}`)}
			return nil
		}),
	)
	if err != nil {
		return err
	}
	connect := func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient("passthrough:///"+addr,
			append(ic.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	}
	catalogConn, err := connect(catalogAddr)
	if err != nil {
		return err
	}
	defer catalogConn.Close()
	paymentsConn, err := connect(paymentsAddr)
	if err != nil {
		return err
	}
	defer paymentsConn.Close()
	catalogClient, paymentsClient := testgrpc.NewTestServiceClient(catalogConn), testgrpc.NewTestServiceClient(paymentsConn)

	var catalogOK, catalogFailed, streamsOK, paymentsDegraded, paymentsFailed atomic.Int64
	report := time.NewTicker(time.Second)
	defer report.Stop()
	printStatus := func() {
		pp, _ := ic.Pipeline(Payments)
		fmt.Fprintf(status, "catalog ok=%d failed=%d streams=%d | payments degraded=%d failed=%d breaker=%s\n",
			catalogOK.Load(), catalogFailed.Load(), streamsOK.Load(), paymentsDegraded.Load(), paymentsFailed.Load(), pp.Breaker().State())
	}
	for round := 1; o.requests == 0 || round <= o.requests; round++ {
		if ctx.Err() != nil {
			break
		}
		rctx := retrylog.WithCorrelationID(ctx, fmt.Sprintf("order-%05d", round))
		if _, err := catalogClient.UnaryCall(rctx, &testgrpc.SimpleRequest{}); err == nil {
			catalogOK.Add(1)
		} else if ctx.Err() == nil {
			catalogFailed.Add(1)
		}
		if n, err := items(rctx, catalogClient); err == nil && n == 3 {
			streamsOK.Add(1)
		} else if ctx.Err() == nil {
			catalogFailed.Add(1)
		}
		var fb grpcx.FallbackInfo
		if _, err := paymentsClient.UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpcx.ReportFallback(&fb)); err == nil && fb.Used {
			paymentsDegraded.Add(1)
		} else if ctx.Err() == nil {
			paymentsFailed.Add(1)
		}
		select {
		case <-report.C:
			printStatus()
		default:
		}
		if o.interval > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.interval):
			}
		}
	}
	printStatus()
	if o.scraped != nil {
		o.scraped(metricsURL)
	}
	return nil
}

// items reads the catalog's stream of items to its end and returns how many arrived.
func items(ctx context.Context, c testgrpc.TestServiceClient) (int, error) {
	st, err := c.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		_, err := st.Recv()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}
