package grpcx_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
)

// retryPolicy is a service config whose retry policy retries UNAVAILABLE up to 4 attempts.
const retryPolicy = `{"methodConfig": [{
	"name": [{"service": "grpc.testing.TestService"}],
	"retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
		"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// failing returns a server that always fails with code.
func failing(code codes.Code) *testServer {
	return &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		return nil, status.Error(code, "down")
	}}
}

// The interaction of stormwatch's retry (3 attempts) with a gRPC retry policy (4 attempts) on
// the same channel: attempts never multiply (3 × 4 = 12).
func TestServiceConfigRetryPolicy(t *testing.T) {
	unaryCall := func(t *testing.T, conn *grpc.ClientConn) error {
		_, err := testgrpc.NewTestServiceClient(conn).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		return err
	}

	t.Run("DialOptions turn gRPC's retries off: stormwatch's attempts only", func(t *testing.T) {
		srv := failing(codes.Unavailable)
		addr := serve(t, srv)
		ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
		conn := dial(t, addr, append(ic.DialOptions(), grpc.WithDefaultServiceConfig(retryPolicy))...)
		assert.Equal(t, codes.Unavailable, status.Code(unaryCall(t, conn)))
		assert.Equal(t, int64(3), srv.unaryCalls.Load())
	})

	t.Run("without stormwatch, gRPC's policy retries", func(t *testing.T) {
		srv := failing(codes.Unavailable)
		addr := serve(t, srv)
		conn := dial(t, addr, grpc.WithDefaultServiceConfig(retryPolicy))
		assert.Equal(t, codes.Unavailable, status.Code(unaryCall(t, conn)))
		assert.Equal(t, int64(4), srv.unaryCalls.Load())
	})

	t.Run("installed by hand: yield to the policy for the codes it retries", func(t *testing.T) {
		srv := failing(codes.Unavailable)
		addr := serve(t, srv)
		ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
		conn := dial(t, addr, grpc.WithChainUnaryInterceptor(ic.Unary()), grpc.WithDefaultServiceConfig(retryPolicy))
		err := unaryCall(t, conn)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, int64(4), srv.unaryCalls.Load(), "gRPC's 4 attempts, not 12")
		var ge *grpcx.Error
		require.ErrorAs(t, err, &ge)
		assert.True(t, ge.DoNotRetry())
		rs := pipelineOf(t, ic, unaryKey).Retry().Snapshot()
		assert.Zero(t, rs.Retries)
		assert.Equal(t, uint64(1), rs.Calls[catalog.RetryFailedWithoutRetry], "the call is still counted")
	})

	t.Run("installed by hand: codes the policy does not retry are stormwatch's", func(t *testing.T) {
		srv := failing(codes.ResourceExhausted)
		addr := serve(t, srv)
		ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
		conn := dial(t, addr, grpc.WithChainUnaryInterceptor(ic.Unary()), grpc.WithDefaultServiceConfig(retryPolicy))
		assert.Equal(t, codes.ResourceExhausted, status.Code(unaryCall(t, conn)))
		assert.Equal(t, int64(3), srv.unaryCalls.Load())
	})

	t.Run("installed by hand and dialled WithDisableRetry: the policy is inert, stormwatch retries", func(t *testing.T) {
		// The interceptor cannot see WithDisableRetry: it yields, and only one attempt is made.
		// This is why DialOptions, which knows, is the way to install it.
		srv := failing(codes.Unavailable)
		addr := serve(t, srv)
		ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))
		conn := dial(t, addr, grpc.WithChainUnaryInterceptor(ic.Unary()), grpc.WithDefaultServiceConfig(retryPolicy), grpc.WithDisableRetry())
		assert.Equal(t, codes.Unavailable, status.Code(unaryCall(t, conn)))
		assert.Equal(t, int64(1), srv.unaryCalls.Load())
	})

	t.Run("RefuseRetryPolicy fails the call before sending it", func(t *testing.T) {
		srv := failing(codes.Unavailable)
		addr := serve(t, srv)
		ic := newInterceptor(t, grpcx.WithPipeline(pipeline(nil)), grpcx.WithRetryPolicyGuard(grpcx.RefuseRetryPolicy))
		conn := dial(t, addr, grpc.WithChainUnaryInterceptor(ic.Unary()), grpc.WithChainStreamInterceptor(ic.Stream()),
			grpc.WithDefaultServiceConfig(retryPolicy))
		// A new channel learns its service config when its first call resolves the target: that
		// call cannot be refused, and the yield rule keeps it from multiplying attempts.
		assert.Equal(t, codes.Unavailable, status.Code(unaryCall(t, conn)))
		assert.Equal(t, int64(4), srv.unaryCalls.Load(), "gRPC's 4 attempts, not 12")
		err := unaryCall(t, conn)
		assert.Equal(t, codes.FailedPrecondition, status.Code(err))
		assert.ErrorIs(t, err, grpcx.ErrRetryPolicy)
		_, err = testgrpc.NewTestServiceClient(conn).StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
		assert.ErrorIs(t, err, grpcx.ErrRetryPolicy)
		assert.Equal(t, int64(4), srv.unaryCalls.Load(), "refused calls are not sent")

		// A channel without a policy is served; so is one dialled with DialOptions.
		srv2 := failing(codes.Unavailable)
		addr2 := serve(t, srv2)
		plain := dial(t, addr2, grpc.WithChainUnaryInterceptor(ic.Unary()))
		assert.Equal(t, codes.Unavailable, status.Code(unaryCall(t, plain)))
		viaOptions := dial(t, addr2, append(ic.DialOptions(), grpc.WithDefaultServiceConfig(retryPolicy))...)
		assert.Equal(t, codes.Unavailable, status.Code(unaryCall(t, viaOptions)))
		assert.Equal(t, int64(6), srv2.unaryCalls.Load())
	})
}
