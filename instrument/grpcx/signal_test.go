package grpcx_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
)

// The do-not-retry signal is one for both protocols: these tests mark a request through the
// other protocol's package and expect the server to send the signal all the same.

// httpDown starts an HTTP server on 127.0.0.1 that answers every request with 503, and returns
// a client whose httpx.Transport retries it 3 times; both are closed at the end of the test.
func httpDown(t *testing.T) (*http.Client, string) {
	t.Helper()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr, err := httpx.NewTransport(base, httpx.WithPipeline(pipeline(nil)))
	require.NoError(t, err)
	return &http.Client{Transport: tr}, down.URL
}

// A gRPC handler whose downstream is HTTP raises the signal through package httpx — its
// Transport, NoteError or MarkRetryDisabled — and its failure carries the gRPC trailer: the
// client does not retry it.
func TestHTTPMarkRaisesTheGRPCSignal(t *testing.T) {
	httpClient, downURL := httpDown(t)
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	db, err := reg.Pipeline("ledger-db", pipeline(nil))
	require.NoError(t, err)
	var seen []string // what httpx.RetryDisabled said in each handler, after the mark
	srv := &testServer{unary: func(ctx context.Context, _ int64, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		what := string(req.GetPayload().GetBody())
		switch what {
		case "transport":
			hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, downURL, nil)
			if err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
			resp, err := httpClient.Do(hreq) // 3 attempts, all 503: given up
			if err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
			_ = resp.Body.Close()
		case "note":
			err := db.Do(ctx, func(context.Context) error { return errors.New("db unavailable") })
			if !httpx.NoteError(ctx, err) {
				return nil, status.Error(codes.Internal, "httpx.NoteError did not raise the signal")
			}
		case "mark":
			if !httpx.MarkRetryDisabled(ctx) {
				return nil, status.Error(codes.Internal, "httpx.MarkRetryDisabled found no signal")
			}
		}
		if httpx.RetryDisabled(ctx) {
			seen = append(seen, what)
		}
		return nil, status.Error(codes.Unavailable, "failed")
	}}
	addr := serve(t, srv, grpcx.ServerOptions()...)
	c := client(t, addr, newInterceptor(t, grpcx.WithPipeline(pipeline(nil))))
	for i, what := range []string{"transport", "note", "mark"} {
		var trailer metadata.MD
		_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{Payload: payload(what)}, grpc.Trailer(&trailer))
		assert.Equal(t, codes.Unavailable, status.Code(err), what)
		assert.Equal(t, []string{"true"}, trailer.Get(grpcx.RetryDisabledKey), what)
		assert.Equal(t, int64(i+1), srv.unaryCalls.Load(), "%s: not retried", what)
	}
	assert.Equal(t, []string{"transport", "note", "mark"}, seen, "httpx.RetryDisabled sees the gRPC request's signal")
}

// The same across a stream: a server-streaming handler whose HTTP downstream gave up ends with
// the trailer.
func TestHTTPMarkRaisesTheGRPCStreamSignal(t *testing.T) {
	httpClient, downURL := httpDown(t)
	a := &testServer{output: func(_ int64, _ *testgrpc.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
		hreq, err := http.NewRequestWithContext(s.Context(), http.MethodGet, downURL, nil)
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		resp, err := httpClient.Do(hreq)
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		_ = resp.Body.Close()
		return status.Error(codes.Unavailable, "downstream failed")
	}}
	addr := serve(t, a, grpcx.ServerOptions()...)
	st, err := client(t, addr, newInterceptor(t, grpcx.WithPipeline(pipeline(nil)))).
		StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	_, err = st.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, []string{"true"}, st.Trailer().Get(grpcx.RetryDisabledKey))
	assert.Equal(t, int64(1), a.outputCalls.Load(), "the stream is not retried")
}

// An HTTP handler behind httpx.Middleware whose downstream is gRPC raises the signal through
// package grpcx — its client interceptors, NoteError or MarkRetryDisabled — and its failure
// response carries Retry-Disabled: the caller's Transport does not retry it.
func TestGRPCMarkRaisesTheHTTPSignal(t *testing.T) {
	b := &testServer{unary: func(context.Context, int64, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
		return nil, status.Error(codes.Unavailable, "b is down")
	}}
	toB := client(t, serve(t, b), newInterceptor(t, grpcx.WithPipeline(pipeline(nil))))
	reg, err := instrument.NewRegistry()
	require.NoError(t, err)
	db, err := reg.Pipeline("ledger-db", pipeline(nil))
	require.NoError(t, err)
	var middleHits atomic.Int64
	middle := httptest.NewServer(httpx.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		middleHits.Add(1)
		ctx := r.Context()
		switch r.URL.Path {
		case "/interceptor":
			_, _ = toB.UnaryCall(ctx, &testgrpc.SimpleRequest{}) // 3 attempts, all UNAVAILABLE: given up
		case "/note":
			err := db.Do(ctx, func(context.Context) error { return errors.New("db unavailable") })
			if !grpcx.NoteError(ctx, err) {
				http.Error(w, "grpcx.NoteError did not raise the signal", http.StatusInternalServerError)
				return
			}
		case "/mark":
			if !grpcx.MarkRetryDisabled(ctx) {
				http.Error(w, "grpcx.MarkRetryDisabled found no signal", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})))
	t.Cleanup(middle.Close)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	upstream, err := httpx.NewTransport(base, httpx.WithPipeline(pipeline(nil)))
	require.NoError(t, err)
	hc := &http.Client{Transport: upstream}

	for _, path := range []string{"/interceptor", "/note", "/mark"} {
		middleHits.Store(0)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, middle.URL+path, nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		require.NoError(t, err, path)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, path)
		assert.Equal(t, "true", resp.Header.Get(httpx.RetryDisabledHeader), path)
		assert.Equal(t, int64(1), middleHits.Load(), "%s: not retried", path)
	}
	assert.Equal(t, int64(3), b.unaryCalls.Load(), "the gRPC downstream was retried once, by middle")
}
