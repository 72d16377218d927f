package demo

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
)

// inProcess is an http.RoundTripper that serves each request by calling a handler (the
// downstream) in the caller's goroutine: no socket, so a run on a fake clock has no work in
// flight outside its goroutines (Config.InProcess). What the network would add is kept: a handler
// that resets its connection is a "connection reset by peer" error, one that never answers ends
// with the request's context.
type inProcess struct{ h http.Handler }

// errConnReset is the error of a request whose connection the downstream reset.
var errConnReset = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

func (t inProcess) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	w := &recorder{header: http.Header{}}
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler { // the sentinel panic value itself, not a wrapped error
				panic(p)
			}
			resp, err = nil, errConnReset
		}
	}()
	if req.Body != nil {
		defer req.Body.Close()
	}
	t.h.ServeHTTP(w, req)
	if w.code == 0 { // the handler returned without answering
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
		return nil, errConnReset // the downstream stopped (Close) with the request unanswered
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.header, Request: req,
		Body: io.NopCloser(bytes.NewReader(w.body.Bytes())), ContentLength: int64(w.body.Len()),
	}, nil
}

// recorder is the ResponseWriter of an in-process request. It is not an http.Hijacker: a
// handler that resets the connection panics with http.ErrAbortHandler instead.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
