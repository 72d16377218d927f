package grpcx_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// highDraw makes the throttle shed only at a probability above 0.99: after one refusal the
// probability is (1 − 0)/(1 + 1) = 0.5, and the retry must get through.
type highDraw struct{}

func (highDraw) Float64() float64 { return 0.99 }

// WithLimit and WithThrottle apply whatever the option order; RESOURCE_EXHAUSTED is a drop for
// the limiter and a refusal for the throttle.
func TestWithLimitAndThrottle(t *testing.T) {
	srv := &testServer{unary: func(_ context.Context, n int64, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		if n == 1 {
			return nil, status.Error(codes.ResourceExhausted, "busy")
		}
		return &testgrpc.SimpleResponse{}, nil
	}}
	addr := serve(t, srv)
	ic := newInterceptor(t, grpcx.WithLimit(limit.Config{}), grpcx.WithThrottle(throttle.Config{Rand: highDraw{}}),
		grpcx.WithPipeline(pipeline(nil)))
	c := client(t, addr, ic)
	_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	require.NoError(t, err, "the retry rescues the first attempt")

	p := pipelineOf(t, ic, unaryKey)
	require.NotNil(t, p.Limiter())
	require.NotNil(t, p.Throttle())
	ls := p.Limiter().Snapshot()
	assert.Equal(t, [catalog.NumSampleKinds]uint64{1, 1, 0}, ls.Samples, "RESOURCE_EXHAUSTED dropped, the success measured")
	ts := p.Throttle().Snapshot()
	assert.Equal(t, [catalog.NumThrottleKinds]uint64{1, 1, 0}, ts.Calls)
}
