package grpcx_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/stormwatch-go/stormwatch/instrument/grpcx"
)

// stockFiles returns a registry holding a file that declares the service stock.v1.Stock: Get
// (idempotency_level = IDEMPOTENT), List (NO_SIDE_EFFECTS) and Reserve (no option), as protoc
// would register it from
//
//	rpc Get(google.protobuf.Empty) returns (google.protobuf.Empty) { option idempotency_level = IDEMPOTENT; }
func stockFiles(t *testing.T) *protoregistry.Files {
	t.Helper()
	method := func(name string, level *descriptorpb.MethodOptions_IdempotencyLevel) *descriptorpb.MethodDescriptorProto {
		m := &descriptorpb.MethodDescriptorProto{
			Name:       proto.String(name),
			InputType:  proto.String(".google.protobuf.Empty"),
			OutputType: proto.String(".google.protobuf.Empty"),
		}
		if level != nil {
			m.Options = &descriptorpb.MethodOptions{IdempotencyLevel: level}
		}
		return m
	}
	fd := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("stock/v1/stock.proto"),
		Package:    proto.String("stock.v1"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/empty.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Stock"),
			Method: []*descriptorpb.MethodDescriptorProto{
				method("Get", descriptorpb.MethodOptions_IDEMPOTENT.Enum()),
				method("List", descriptorpb.MethodOptions_NO_SIDE_EFFECTS.Enum()),
				method("Reserve", nil),
			},
		}},
	}
	f, err := protodesc.NewFile(fd, protoregistry.GlobalFiles)
	require.NoError(t, err)
	files := new(protoregistry.Files)
	require.NoError(t, files.RegisterFile(f))
	return files
}

// serveStock serves stock.v1.Stock with every method failing with code, counting calls by method.
func serveStock(t *testing.T, code codes.Code) (string, map[string]*atomic.Int64) {
	t.Helper()
	counts := map[string]*atomic.Int64{}
	desc := grpc.ServiceDesc{ServiceName: "stock.v1.Stock", HandlerType: (*any)(nil)}
	for _, name := range []string{"Get", "List", "Reserve"} {
		n := &atomic.Int64{}
		counts[name] = n
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: name,
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				n.Add(1)
				if err := dec(new(emptypb.Empty)); err != nil {
					return nil, err
				}
				return nil, status.Error(code, "scripted")
			},
		})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	s.RegisterService(&desc, struct{}{})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return l.Addr().String(), counts
}

// A method's idempotency_level option makes it idempotent: its DEADLINE_EXCEEDED is retried.
func TestIdempotencyLevelFromTheDescriptor(t *testing.T) {
	addr, counts := serveStock(t, codes.DeadlineExceeded)
	files := stockFiles(t)
	for _, tt := range []struct {
		name  string
		opts  []grpcx.Option
		calls map[string]int64
	}{
		{"descriptor", []grpcx.Option{grpcx.WithDescriptors(files)}, map[string]int64{"Get": 3, "List": 3, "Reserve": 1}},
		{"descriptor and a declaration", []grpcx.Option{grpcx.WithDescriptors(files), grpcx.WithIdempotent("/stock.v1.Stock/Reserve")}, map[string]int64{"Get": 3, "List": 3, "Reserve": 3}},
		{"no descriptors", []grpcx.Option{grpcx.WithDescriptors(nil)}, map[string]int64{"Get": 1, "List": 1, "Reserve": 1}},
		{"GlobalFiles does not hold this file", nil, map[string]int64{"Get": 1, "List": 1, "Reserve": 1}},
		{"a whole service", []grpcx.Option{grpcx.WithIdempotent("/stock.v1.Stock/*")}, map[string]int64{"Get": 3, "List": 3, "Reserve": 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range counts {
				n.Store(0)
			}
			ic := newInterceptor(t, append(tt.opts, grpcx.WithPipeline(pipeline(nil)))...)
			conn := dial(t, addr, ic.DialOptions()...)
			for m := range tt.calls {
				for i := 0; i < 2; i++ { // the second call answers from the cache
					counts[m].Store(0)
					err := conn.Invoke(context.Background(), "/stock.v1.Stock/"+m, new(emptypb.Empty), new(emptypb.Empty))
					assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
					assert.Equal(t, tt.calls[m], counts[m].Load(), m)
				}
			}
		})
	}
}
