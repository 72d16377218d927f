package grpcx_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Every status code a server returns gets its verdict: how many attempts the server sees, the
// class the retry counts, how the breaker counts each attempt — for a method declared
// idempotent and for one that is not. The caller always receives the server's code.
func TestEveryStatusCodeGetsItsVerdict(t *testing.T) {
	type want struct {
		retried, retriedIdempotent bool
		class                      catalog.Class
		breaker                    catalog.CallKind
	}
	failure := func(retried, retriedIdem bool, class catalog.Class) want {
		return want{retried, retriedIdem, class, catalog.CallFailed}
	}
	permanent := want{false, false, catalog.ClassGRPCPermanent, catalog.CallSuccessful}
	cases := map[codes.Code]want{
		codes.Canceled:           failure(false, false, catalog.ClassError), // the server's: the caller did not cancel
		codes.Unknown:            failure(false, true, catalog.ClassError),
		codes.InvalidArgument:    permanent,
		codes.DeadlineExceeded:   failure(false, true, catalog.ClassGRPCDeadline),
		codes.NotFound:           permanent,
		codes.AlreadyExists:      permanent,
		codes.PermissionDenied:   permanent,
		codes.ResourceExhausted:  failure(true, true, catalog.ClassGRPCResourceExhausted),
		codes.FailedPrecondition: permanent,
		codes.Aborted:            permanent,
		codes.OutOfRange:         permanent,
		codes.Unimplemented:      permanent,
		codes.Internal:           failure(false, true, catalog.ClassError),
		codes.Unavailable:        failure(true, true, catalog.ClassGRPCUnavailable),
		codes.DataLoss:           failure(false, false, catalog.ClassError),
		codes.Unauthenticated:    permanent,
	}
	require.Len(t, cases, 16, "every code but OK")
	for code, w := range cases {
		for _, idempotent := range []bool{false, true} {
			name := code.String()
			if idempotent {
				name += "/idempotent"
			}
			t.Run(name, func(t *testing.T) {
				srv := &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
					return nil, status.Error(code, "scripted")
				}}
				addr := serve(t, srv)
				opts := []grpcx.Option{grpcx.WithPipeline(pipeline(nil))}
				if idempotent {
					opts = append(opts, grpcx.WithIdempotent(unaryMethod))
				}
				ic := newInterceptor(t, opts...)
				_, err := client(t, addr, ic).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
				require.Error(t, err)
				assert.Equal(t, code, status.Code(err), "the caller receives the server's code")

				attempts := int64(1)
				if (idempotent && w.retriedIdempotent) || (!idempotent && w.retried) {
					attempts = 3
				}
				assert.Equal(t, attempts, srv.unaryCalls.Load(), "attempts")
				p := pipelineOf(t, ic, unaryKey)
				rs := p.Retry().Snapshot()
				assert.Equal(t, uint64(attempts), rs.Errors[w.class], "failed attempts of class %s", w.class)
				bs := p.Breaker().Snapshot()
				assert.Equal(t, uint64(attempts), bs.Calls[w.breaker], "breaker: attempts counted %s", w.breaker)

				var ge *grpcx.Error
				require.ErrorAs(t, err, &ge)
				assert.Equal(t, code, ge.Code())
				assert.Equal(t, unaryMethod, ge.Method)
				assert.Equal(t, idempotent, ge.Idempotent())
			})
		}
	}
}

func TestSuccessAndRetriedSuccess(t *testing.T) {
	srv := &testServer{unary: func(_ context.Context, n int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		if n == 1 {
			return nil, status.Error(codes.Unavailable, "warming up")
		}
		return &testgrpc.SimpleResponse{Payload: payload("ok")}, nil
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
	rec := record(ic.Registry().Events())
	c := client(t, addr, ic)

	resp, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	assert.Equal(t, "ok", string(resp.GetPayload().GetBody()))
	resp, err = c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	assert.Equal(t, "ok", string(resp.GetPayload().GetBody()))

	assert.Equal(t, int64(3), srv.unaryCalls.Load())
	rs := pipelineOf(t, ic, unaryKey).Retry().Snapshot()
	assert.Equal(t, uint64(1), rs.Calls[catalog.RetrySuccessfulWithRetry])
	assert.Equal(t, uint64(1), rs.Calls[catalog.RetrySuccessfulWithoutRetry])
	evs := rec.events()
	require.Len(t, evs, 2)
	assert.Equal(t, catalog.OutcomeRetrying, evs[0].Outcome)
	assert.Equal(t, catalog.ClassGRPCUnavailable, evs[0].ErrorClass)
	assert.Equal(t, unaryMethod, evs[0].Endpoint, "retry events name the full method")
	assert.Equal(t, unaryKey, evs[0].Name, "the dependency is the method")
	assert.Equal(t, catalog.OutcomeSucceeded, evs[1].Outcome)
	assert.NotEmpty(t, events.CorrelationID(evs[0].Context))
	assert.Equal(t, events.CorrelationID(evs[0].Context), events.CorrelationID(evs[1].Context), "one logical call")
}

// pushbackServer fails the first call with code and the pushback trailer values, then succeeds.
func pushbackServer(code codes.Code, values ...string) *testServer {
	return &testServer{unary: func(ctx context.Context, n int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		if n > 1 {
			return &testgrpc.SimpleResponse{}, nil
		}
		md := metadata.MD{}
		for _, v := range values {
			md.Append(grpcx.PushbackKey, v)
		}
		_ = grpc.SetTrailer(ctx, md)
		return nil, status.Error(code, "slow down")
	}}
}

func TestPushbackSetsTheDelay(t *testing.T) {
	for _, code := range []codes.Code{codes.ResourceExhausted, codes.Unavailable} {
		t.Run(code.String(), func(t *testing.T) {
			clk := clock.NewFake(time.Now())
			srv := pushbackServer(code, "2000")
			addr := serve(t, srv)
			ic := newInterceptor(t, grpcx.WithPipeline(pipeline(clk)))
			rec := record(ic.Registry().Events())
			c := client(t, addr, ic)

			done, finished := goCall(func() error {
				_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
				return err
			})
			require.True(t, clk.WaitForTimers(1, finished), "the retry waits on its clock")
			clk.Advance(2*time.Second - time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("the call returned before the pushback elapsed: %v", err)
			default:
			}
			clk.Advance(time.Millisecond)
			require.NoError(t, <-done)

			assert.Equal(t, int64(2), srv.unaryCalls.Load())
			evs := rec.events()
			require.NotEmpty(t, evs)
			assert.Equal(t, catalog.OutcomeRetrying, evs[0].Outcome)
			assert.Equal(t, catalog.SourceRetryAfter, evs[0].DelaySource)
			assert.Equal(t, 2*time.Second, evs[0].Delay)
			rs := pipelineOf(t, ic, unaryKey).Retry().Snapshot()
			assert.Equal(t, uint64(1), rs.Backoff[catalog.SourceRetryAfter].Count)
		})
	}
}

// A negative pushback asks the client not to retry; so do a malformed one and several values,
// as in gRPC's own retry.
func TestNegativeOrMalformedPushbackStopsRetries(t *testing.T) {
	for _, values := range [][]string{{"-1"}, {"-0"}, {"abc"}, {"1.5"}, {"+20"}, {""}, {"99999999999"}, {"10", "20"}} {
		t.Run(values[0], func(t *testing.T) {
			srv := pushbackServer(codes.ResourceExhausted, values...)
			addr := serve(t, srv)
			ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
			_, err := client(t, addr, ic).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
			require.Error(t, err)
			assert.Equal(t, codes.ResourceExhausted, status.Code(err))
			assert.Equal(t, int64(1), srv.unaryCalls.Load(), "not retried")
			var ge *grpcx.Error
			require.ErrorAs(t, err, &ge)
			assert.True(t, ge.DoNotRetry())
		})
	}
}

// The retry never waits past the caller's deadline: a pushback longer than the time left ends
// the call after the first attempt, without waiting.
func TestNeverRetriesPastTheCallersDeadline(t *testing.T) {
	clk := clock.NewFake(time.Now())
	srv := &testServer{unary: func(ctx context.Context, n int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(grpcx.PushbackKey, "50000"))
		return nil, status.Error(codes.Unavailable, "down")
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(clk)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := client(t, addr, ic).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	var re *retry.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, catalog.OutcomeGaveUp, re.Outcome())
	assert.Equal(t, int64(1), srv.unaryCalls.Load())
	assert.Zero(t, clk.Timers(), "no wait was started")
}

// When the caller's deadline ends an attempt, the call ends: DEADLINE_EXCEEDED, one attempt,
// even for an idempotent method.
func TestCallersDeadlineEndsTheCall(t *testing.T) {
	srv := &testServer{unary: func(ctx context.Context, _ int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)), grpcx.WithIdempotent(unaryMethod))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := client(t, addr, ic).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	var re *retry.Error // the deadline passed (on the client or, a moment earlier, on the server)
	require.ErrorAs(t, err, &re)
	assert.Equal(t, catalog.OutcomeGaveUp, re.Outcome())
	assert.Equal(t, int64(1), srv.unaryCalls.Load())
}

// The Timeout layer bounds each attempt (its deadline travels to the server as gRPC's own); a
// timed-out attempt is retried only for an idempotent method.
func TestAttemptTimeoutRetriedOnlyWhenIdempotent(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		t.Run(map[bool]string{false: "not idempotent", true: "idempotent"}[idempotent], func(t *testing.T) {
			clk := clock.NewFake(time.Now())
			arrived := make(chan time.Duration, 3)
			srv := &testServer{unary: func(ctx context.Context, _ int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
				dl, _ := ctx.Deadline()
				arrived <- time.Until(dl)
				<-ctx.Done()
				return nil, status.FromContextError(ctx.Err()).Err()
			}}
			addr := serve(t, srv)
			cfg := pipeline(clk)
			cfg.Retry.MaxAttempts = 2
			cfg.Timeout = &timeout.Config{Timeout: time.Hour, Clock: clk}
			opts := []grpcx.Option{grpcx.WithPipeline(cfg)}
			if idempotent {
				opts = append(opts, grpcx.WithIdempotent("/grpc.testing.TestService/*"))
			}
			ic := newInterceptor(t, opts...)
			c := client(t, addr, ic)
			done, finished := goCall(func() error {
				_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
				return err
			})
			attempts := 1
			if idempotent {
				attempts = 2
			}
			for i := 0; i < attempts; i++ {
				left := <-arrived
				assert.Greater(t, left, 50*time.Minute, "the server sees the attempt's deadline")
				require.True(t, clk.WaitForTimers(1, finished))
				clk.Advance(time.Hour)
			}
			err := <-done
			assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
			assert.ErrorIs(t, err, timeout.ErrTimedOut)
			assert.Equal(t, int64(attempts), srv.unaryCalls.Load())
			p := pipelineOf(t, ic, unaryKey)
			assert.Equal(t, uint64(attempts), p.Timeout().Snapshot().Calls[catalog.TimeoutTimedOut])
			assert.Equal(t, uint64(attempts), p.Retry().Snapshot().Errors[catalog.ClassGRPCDeadline])
			assert.Equal(t, uint64(attempts), p.Breaker().Snapshot().Calls[catalog.CallFailed])
		})
	}
}

// The caller's cancellation is never retried, never a breaker failure, never a fallback cause —
// with a retry layer or without one.
func TestCallerCancellationIsNeverCounted(t *testing.T) {
	withRetry := pipeline(nil)
	withoutRetry := pipeline(nil)
	withoutRetry.Retry = nil
	for name, cfg := range map[string]instrument.PipelineConfig{"with retry": withRetry, "without retry": withoutRetry} {
		t.Run(name, func(t *testing.T) {
			arrived := make(chan struct{})
			srv := &testServer{unary: func(ctx context.Context, _ int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
				close(arrived)
				<-ctx.Done()
				return nil, status.FromContextError(ctx.Err()).Err()
			}}
			addr := serve(t, srv)
			var fallbacks atomic.Int64
			ic := newInterceptor(t, grpcx.WithPipeline(cfg), grpcx.WithIdempotent(unaryMethod),
				grpcx.WithFallback(func(context.Context, *grpc.ClientConn, string, any, any, catalog.Cause, error) error {
					fallbacks.Add(1)
					return nil
				}))
			c := client(t, addr, ic)
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-arrived; cancel() }()
			_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
			assert.Equal(t, codes.Canceled, status.Code(err))
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, int64(1), srv.unaryCalls.Load())
			assert.Zero(t, fallbacks.Load())
			p := pipelineOf(t, ic, unaryKey)
			bs := p.Breaker().Snapshot()
			assert.Zero(t, bs.Calls[catalog.CallFailed])
			assert.Zero(t, bs.Calls[catalog.CallSuccessful])
			if p.Retry() != nil {
				assert.Equal(t, uint64(1), p.Retry().Snapshot().Errors[catalog.ClassCanceled])
				assert.Equal(t, uint64(1), p.Retry().Snapshot().Calls[catalog.RetryAborted])
			}
		})
	}
}

// A server answering CANCELED fails the call: 20 of 20 calls answered CANCELED trip the breaker
// (a threshold of 10 in 20 calls), each attempt counted as a failure, none retried. Only the
// caller's own cancellation is ignored (TestCallerCancellationIsNeverCounted).
func TestServerCanceledTripsTheBreaker(t *testing.T) {
	srv := &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		return nil, status.Error(codes.Canceled, "the server says canceled")
	}}
	addr := serve(t, srv)
	cfg := pipeline(nil)
	cfg.Breaker = &breaker.Config{WindowSize: 20, MinCalls: 20, FailureRateThreshold: 0.5, OpenDuration: time.Hour}
	ic := newInterceptor(t, grpcx.WithPipeline(cfg))
	c := client(t, addr, ic)
	for i := range 20 {
		_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		require.Equal(t, codes.Canceled, status.Code(err), "call %d", i)
		require.NotErrorIs(t, err, context.Canceled, "the caller did not cancel")
	}
	p := pipelineOf(t, ic, unaryKey)
	sn := p.Breaker().Snapshot()
	assert.Equal(t, uint64(20), sn.Calls[catalog.CallFailed], "every answer is a failure")
	assert.Zero(t, sn.Calls[catalog.CallIgnored])
	assert.Equal(t, catalog.StateOpen, p.Breaker().State(), "20 of 20 failed: the breaker trips")
	assert.Equal(t, int64(20), srv.unaryCalls.Load(), "a CANCELED answer is never retried")
	assert.Equal(t, uint64(20), p.Retry().Snapshot().Errors[catalog.ClassError])

	_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	assert.ErrorIs(t, err, breaker.ErrOpen)
	assert.Equal(t, int64(20), srv.unaryCalls.Load(), "the open breaker keeps the server out of reach")
}

// countingDialer dials 127.0.0.1 and counts the connections it makes.
type countingDialer struct{ dials atomic.Int64 }

func (d *countingDialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.dials.Add(1)
	return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
}

// The breaker trips on UNAVAILABLE; later calls fail fast — UNAVAILABLE, errors.Is
// breaker.ErrOpen — without reaching the server, and on a new connection without even dialing.
func TestBreakerTripsOnUnavailableAndFailsFast(t *testing.T) {
	srv := &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		return nil, status.Error(codes.Unavailable, "down")
	}}
	addr := serve(t, srv)
	cfg := pipeline(nil)
	cfg.Breaker = &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 3, OpenDuration: time.Hour}
	ic := newInterceptor(t, grpcx.WithPipeline(cfg))
	c := client(t, addr, ic)

	_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	require.Error(t, err)
	assert.Equal(t, int64(3), srv.unaryCalls.Load())
	p := pipelineOf(t, ic, unaryKey)
	assert.Equal(t, catalog.StateOpen, p.Breaker().State())

	_, err = c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.ErrorIs(t, err, breaker.ErrOpen)
	assert.Equal(t, int64(3), srv.unaryCalls.Load(), "the server sees nothing while the breaker is open")

	d := &countingDialer{}
	conn := dial(t, addr, append(ic.DialOptions(), grpc.WithContextDialer(d.dial))...)
	_, err = testgrpc.NewTestServiceClient(conn).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	assert.ErrorIs(t, err, breaker.ErrOpen)
	assert.Zero(t, d.dials.Load(), "a new connection is not even dialled")
	assert.Equal(t, connectivity.Idle, conn.GetState())
	assert.Equal(t, uint64(2), p.Breaker().Snapshot().NotPermitted)
}

func TestFallbackAnswersUnaryCalls(t *testing.T) {
	srv := &testServer{unary: func(_ context.Context, _ int64, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		if string(req.GetPayload().GetBody()) == "missing" {
			return nil, status.Error(codes.NotFound, "no such item")
		}
		return nil, status.Error(codes.Unavailable, "down")
	}}
	addr := serve(t, srv)
	cfg := pipeline(nil)
	cfg.Fallback = &fallback.Config{On: []catalog.Cause{catalog.CauseRetriesExhausted, catalog.CauseCircuitOpen}}
	ic := newInterceptor(t, grpcx.WithPipeline(cfg),
		grpcx.WithFallback(func(_ context.Context, _ *grpc.ClientConn, method string, _, reply any, cause catalog.Cause, err error) error {
			reply.(*testgrpc.SimpleResponse).Payload = payload("cached " + method)
			return nil
		}))
	c := client(t, addr, ic)

	var info grpcx.FallbackInfo
	resp, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, grpcx.ReportFallback(&info))
	require.NoError(t, err)
	assert.Equal(t, "cached "+unaryMethod, string(resp.GetPayload().GetBody()))
	assert.Equal(t, grpcx.FallbackInfo{Used: true, Cause: catalog.CauseRetriesExhausted}, info)

	_, err = c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{Payload: payload("missing")}, grpcx.ReportFallback(&info))
	assert.Equal(t, codes.NotFound, status.Code(err), "an answer is not a cause this fallback handles")
	assert.False(t, info.Used)
	assert.Equal(t, uint64(1), pipelineOf(t, ic, unaryKey).Fallback().Snapshot().Calls[catalog.CauseRetriesExhausted])
}

func TestKeys(t *testing.T) {
	srv := &testServer{}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithKey(grpcx.TargetKey))
	_, err := client(t, addr, ic).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	names := []string{}
	for _, n := range ic.Registry().Retries() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"passthrough:///" + addr}, names)

	// Keys from traffic become valid names; an empty key is refused with INTERNAL.
	ic = newInterceptor(t, grpcx.WithKey(func(*grpc.ClientConn, string) string { return "bad\xffname\n" }))
	_, err = client(t, addr, ic).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	assert.Equal(t, instrument.SanitizeName("bad\xffname\n"), ic.Registry().Retries()[0].Name)
	ic = newInterceptor(t, grpcx.WithKey(func(*grpc.ClientConn, string) string { return "" }))
	_, err = client(t, addr, ic).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.Internal, status.Code(err))
}

func TestOptionsAreValidated(t *testing.T) {
	for name, opt := range map[string]grpcx.Option{
		"nil registry":      grpcx.WithRegistry(nil),
		"nil key":           grpcx.WithKey(nil),
		"nil fallback":      grpcx.WithFallback(nil),
		"unknown guard":     grpcx.WithRetryPolicyGuard(7),
		"no leading slash":  grpcx.WithIdempotent("pkg.Svc/Get"),
		"no method":         grpcx.WithIdempotent("/pkg.Svc/"),
		"no service":        grpcx.WithIdempotent("//Get"),
		"three parts":       grpcx.WithIdempotent("/pkg.Svc/Get/x"),
		"nil option":        nil,
		"bad pipeline":      grpcx.WithPipeline(instrument.PipelineConfig{Retry: &retry.Config{MaxAttempts: -1}}),
		"attempt timeout 2": grpcx.WithPipeline(instrument.PipelineConfig{Retry: &retry.Config{AttemptTimeout: 1}, Timeout: &timeout.Config{}}),
	} {
		_, err := grpcx.NewInterceptor(opt)
		assert.Error(t, err, name)
	}
	_, err := grpcx.NewInterceptor(grpcx.WithPipeline(instrument.PipelineConfig{Retry: &retry.Config{MaxAttempts: -1}}))
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Retry.MaxAttempts", ce.Field)
}

func TestErrorsWithoutAStatusGetOne(t *testing.T) {
	// A full bulkhead rejects without calling: RESOURCE_EXHAUSTED, errors.Is bulkhead.ErrFull.
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		arrived <- struct{}{}
		<-release
		return &testgrpc.SimpleResponse{}, nil
	}}
	addr := serve(t, srv)
	cfg := pipeline(nil)
	cfg.Bulkhead = &bulkhead.Config{MaxConcurrent: 1}
	ic := newInterceptor(t, grpcx.WithPipeline(cfg))
	c := client(t, addr, ic)
	done := make(chan error, 1)
	go func() {
		_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		done <- err
	}()
	<-arrived
	_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.True(t, errors.Is(err, bulkhead.ErrFull))
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), srv.unaryCalls.Load())
}
