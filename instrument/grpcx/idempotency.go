package grpcx

import (
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// idempotency decides whether a method may run twice safely: declared with WithIdempotent
// (a method or a whole service), or by its descriptor's idempotency_level option, or by the
// pipeline's Retry.Idempotent for every method. Answers are cached per method.
type idempotency struct {
	methods  map[string]bool // "/pkg.Service/Method"
	services map[string]bool // "/pkg.Service/"
	files    *protoregistry.Files
	all      bool // PipelineConfig.Retry.Idempotent

	cache  sync.Map // method → bool
	cached atomic.Int64
}

// maxCachedMethods bounds the idempotency cache: a program has as many methods as its stubs,
// but a proxy may see any string. Past the bound, answers are worked out on every call.
const maxCachedMethods = 10000

// declare adds a method ("/pkg.Service/Method") or a service ("/pkg.Service/*").
func (id *idempotency) declare(name string) error {
	svc, m, ok := strings.Cut(strings.TrimPrefix(name, "/"), "/")
	switch {
	case !strings.HasPrefix(name, "/") || !ok || svc == "" || m == "" || strings.Contains(m, "/"):
		return optionError("WithIdempotent", name, `want a full method name "/package.Service/Method" or "/package.Service/*"`)
	case m == "*":
		id.services["/"+svc+"/"] = true
	default:
		id.methods[name] = true
	}
	return nil
}

// of reports whether method is idempotent.
func (id *idempotency) of(method string) bool {
	if id.all {
		return true
	}
	if v, ok := id.cache.Load(method); ok {
		return v.(bool)
	}
	v := id.lookup(method)
	if id.cached.Load() < maxCachedMethods {
		if _, loaded := id.cache.LoadOrStore(method, v); !loaded {
			id.cached.Add(1)
		}
	}
	return v
}

func (id *idempotency) lookup(method string) bool {
	if id.methods[method] {
		return true
	}
	if i := strings.LastIndexByte(method, '/'); i > 0 && id.services[method[:i+1]] {
		return true
	}
	return fromDescriptor(id.files, method)
}

// fromDescriptor reports whether the method's descriptor in files declares it free of side
// effects or idempotent (option idempotency_level = NO_SIDE_EFFECTS or IDEMPOTENT).
func fromDescriptor(files *protoregistry.Files, method string) bool {
	if files == nil || !strings.HasPrefix(method, "/") {
		return false
	}
	name := protoreflect.FullName(strings.Replace(method[1:], "/", ".", 1))
	if !name.IsValid() {
		return false
	}
	d, err := files.FindDescriptorByName(name)
	if err != nil {
		return false
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return false
	}
	opts, ok := md.Options().(*descriptorpb.MethodOptions)
	if !ok || opts == nil {
		return false
	}
	switch opts.GetIdempotencyLevel() {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
		return true
	}
	return false
}
