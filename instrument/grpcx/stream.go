package grpcx

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// Streams (see "Streams" in the package documentation): the pipeline runs the stream's opening
// phase, and retries it, and nothing after.
//
//   - server-streaming: the opening is the stream's establishment, the request message, and
//     the first response message (or the stream's end). The stream is established lazily, at
//     the first RecvMsg, so that every attempt — a new stream, the request sent again, the wait
//     for the first message — runs inside the pipeline: breaker, bulkhead permit, timeout.
//   - client-streaming and bidirectional: the opening is the establishment only (NewStream).
//     Messages the caller sends afterwards are not kept, so nothing after it is retried.
//
// Once open, the stream is the caller's: its context is the caller's (not the attempt's, which
// ends with the opening), and its later errors are returned as gRPC reports them.

func (ic *Interceptor) streamInterceptor(noPolicy bool) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		t, err := ic.resolve(cc, method, noPolicy)
		if err != nil {
			return nil, err
		}
		o := &opener{ic: ic, t: t, ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, opts: opts}
		if desc.ServerStreams && !desc.ClientStreams {
			return &serverStream{o: o}, nil
		}
		s, err := o.open(nil, false)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// opener opens a stream through the pipeline.
type opener struct {
	ic       *Interceptor
	t        target
	ctx      context.Context // the caller's
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption
	trailer  metadata.MD // the last failed attempt's trailer (read from the stream: gRPC may
	// finish a stream from a goroutine of its own, so a grpc.Trailer option would race)

	// What a server-streaming attempt sends and receives.
	req     any  // the request message, nil when none was sent
	closed  bool // the caller called CloseSend
	m       any  // where the first response message goes; nil: do not wait for it
	eof     bool // the stream ended without a message
	stopped bool // the attempt ended on its own: the stream is open

	downstreamDisabled bool
}

// open runs the opening phase through the pipeline and returns the open stream, or the error
// that ended the phase (with a gRPC status). m, for a server-streaming stream, receives the first
// message; first says the opening waits for it.
func (o *opener) open(m any, first bool) (*openStream, error) {
	if first {
		o.m = m
	}
	h := retry.Hooks[*openStream]{}
	if o.ic.reg.Events().Retries.Active() {
		h.Endpoint = o.method
	}
	s, _, err := instrument.CallWith(noHedge(o.ctx, o.t.p), o.t.p, o.attempt, h, nil)
	if err != nil {
		if o.downstreamDisabled {
			MarkRetryDisabled(o.ctx)
		} else {
			NoteError(o.ctx, err)
		}
		return nil, withStatus(err)
	}
	return s, nil
}

// attempt opens one stream under the attempt context. The stream's own context is the
// caller's, cancelled when the attempt context ends before the opening completes (the Timeout
// layer fired, or the caller left), so that an open stream outlives its attempt.
func (o *opener) attempt(actx context.Context) (*openStream, error) {
	sctx, cancel := context.WithCancel(o.ctx)
	stop := context.AfterFunc(actx, cancel)
	o.trailer = nil
	cs, err := o.streamer(sctx, o.desc, o.cc, o.method, o.opts...)
	if err == nil && o.req != nil {
		if err = cs.SendMsg(o.req); err == io.EOF {
			err = nil // the stream has ended: RecvMsg returns its status
		}
	}
	if err == nil && o.closed {
		err = cs.CloseSend()
	}
	if err == nil && o.m != nil {
		if err = cs.RecvMsg(o.m); err == io.EOF {
			o.eof, err = true, nil
		}
	}
	if !stop() {
		// The attempt context ended — the Timeout layer's deadline, the caller's cancellation —
		// and cancelled the stream: gRPC reports CANCELED, the attempt context says why.
		err = status.FromContextError(actx.Err()).Err()
	}
	if err != nil {
		cancel()
		if cs != nil {
			o.trailer = cs.Trailer()
		}
		return nil, o.ic.check(o.ctx, o.cc, o.method, err, o.trailer, o.t, &o.downstreamDisabled)
	}
	if o.eof {
		cancel() // gRPC has finished the stream
	}
	return &openStream{ClientStream: cs, cancel: cancel}, nil
}

// openStream is a stream past its opening: the caller's. It cancels its context once gRPC has
// finished it (the ways grpc.ClientConn.NewStream lists), so that no context outlives it.
type openStream struct {
	grpc.ClientStream
	cancel context.CancelFunc
}

func (s *openStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.cancel()
	}
	return err
}

func (s *openStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil && err != io.EOF {
		s.cancel()
	}
	return err
}

func (s *openStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil && err != io.EOF {
		s.cancel()
	}
	return md, err
}

// serverStream is a server-streaming stream: established at its first RecvMsg (or Header),
// through the pipeline, with retries until its first message arrives.
type serverStream struct {
	o *opener

	mu   sync.Mutex
	open *openStream // nil until opened
	err  error       // the opening's error: every later call returns it
	eof  bool        // the stream ended at its opening without a message: RecvMsg returns io.EOF once
}

// SendMsg keeps the request message for the attempts; it is sent when the stream opens. A
// server-streaming call has one request message: a second one is refused, as gRPC refuses it.
func (s *serverStream) SendMsg(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		return s.open.SendMsg(m)
	}
	if s.err != nil {
		return io.EOF
	}
	if s.o.req != nil || s.o.closed {
		return status.Error(codes.Internal, "SendMsg called after CloseSend")
	}
	s.o.req = m
	return nil
}

// CloseSend is remembered and applied when the stream opens.
func (s *serverStream) CloseSend() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		return s.open.CloseSend()
	}
	s.o.closed = true
	return nil
}

// RecvMsg opens the stream at its first call, retrying until the first message arrives; later
// calls read the open stream, without retries.
func (s *serverStream) RecvMsg(m any) error {
	s.mu.Lock()
	if s.open == nil && s.err == nil {
		s.open, s.err = s.o.open(m, true)
		if s.err == nil {
			s.eof = s.o.eof
			s.mu.Unlock()
			if s.eof {
				return io.EOF
			}
			return nil // m holds the first message
		}
	}
	open, err := s.open, s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return open.RecvMsg(m)
}

// Header opens the stream when it is not open yet — without waiting for a message, so that the
// opening ends there and later failures are not retried — and returns its header.
func (s *serverStream) Header() (metadata.MD, error) {
	open, err := s.opened()
	if err != nil {
		return nil, err
	}
	return open.Header()
}

// Trailer returns the trailer of the open stream, or of the last failed attempt.
func (s *serverStream) Trailer() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		return s.open.Trailer()
	}
	return s.o.trailer
}

// Context returns the open stream's context, or the caller's before the stream opens.
func (s *serverStream) Context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		return s.open.Context()
	}
	return s.o.ctx
}

func (s *serverStream) opened() (*openStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil && s.err == nil {
		s.open, s.err = s.o.open(nil, false)
	}
	return s.open, s.err
}
