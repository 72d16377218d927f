package classify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// facts are what the fuzz target knows, by construction, about an error tree it built.
type facts struct {
	sent, unsent bool // a timeout after the request may have been sent / while connecting
	canceled     bool
	marked       bool // Business, a Rejection or an HTTP status ≥ 400: decided before transport
	cert         bool
	permanent    bool
}

func (f facts) or(g facts) facts {
	return facts{f.sent || g.sent, f.unsent || g.unsent, f.canceled || g.canceled,
		f.marked || g.marked, f.cert || g.cert, f.permanent || g.permanent}
}

type node struct {
	err error
	f   facts
}

// timeoutWrapper claims Timeout() true whatever it wraps, as url.Error and net.OpError do for a
// wrapped timeout.
type timeoutWrapper struct{ err error }

func (e timeoutWrapper) Error() string { return "wrapped: " + e.err.Error() }
func (e timeoutWrapper) Unwrap() error { return e.err }
func (e timeoutWrapper) Timeout() bool { return true }

// buildError interprets program as a little stack machine that builds an error tree out of the
// errors the standard library and stormwatch produce, wrapped and joined in any order, with text
// from msg; it returns the tree and what is known about it.
func buildError(program []byte, msg string) (error, facts) {
	var stack []node
	push := func(err error, f facts) { stack = append(stack, node{err, f}) }
	pop := func() node {
		if len(stack) == 0 {
			return node{errors.New(msg), facts{}}
		}
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return n
	}
	for i := 0; i < len(program) && i < 64; i++ {
		op := program[i]
		switch op % 24 {
		case 0:
			push(errors.New(msg), facts{})
		case 1:
			push(&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, facts{sent: true})
		case 2:
			push(context.DeadlineExceeded, facts{sent: true})
		case 3:
			push(context.Canceled, facts{canceled: true})
		case 4:
			push(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, facts{})
		case 5:
			push(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, facts{})
		case 6:
			timeout := op&0x80 != 0
			push(&net.DNSError{Err: msg, Name: "x.invalid", IsTimeout: timeout}, facts{unsent: timeout})
		case 7:
			push(certErr, facts{cert: true})
		case 8:
			push(recordErr, facts{})
		case 9:
			push(alertErr, facts{})
		case 10:
			push(io.EOF, facts{})
		case 11:
			push(&net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, facts{unsent: true})
		case 12:
			n := pop()
			push(fmt.Errorf("%s: %w", msg, n.err), n.f)
		case 13:
			n := pop()
			push(&url.Error{Op: "Post", URL: "http://127.0.0.1/", Err: n.err}, n.f)
		case 14:
			a, b := pop(), pop()
			push(errors.Join(a.err, b.err), a.f.or(b.f))
		case 15: // inside a dial, every timeout is one while connecting
			n := pop()
			f := n.f
			f.unsent, f.sent = f.unsent || f.sent, false
			push(&net.OpError{Op: "dial", Net: "tcp", Err: n.err}, f)
		case 16:
			n := pop()
			f := n.f
			f.marked = true
			push(Business(n.err), f)
		case 17:
			n := pop()
			f := n.f
			f.permanent = true
			push(Permanent(n.err), f)
		case 18:
			push(&fakeRejection{msg}, facts{marked: true})
		case 19:
			code := 400 + int(op)%200
			push(statusErr(code), facts{marked: true})
		case 20:
			push(netTimeout{}, facts{sent: true})
		case 21: // a wrapper that claims to be a timeout is one only when nothing it wraps is
			n := pop()
			f := n.f
			if !f.sent && !f.unsent {
				f.sent = true
			}
			push(timeoutWrapper{n.err}, f)
		case 22:
			push(fmt.Errorf("%s", msg), facts{})
		case 23:
			a, b, c := pop(), pop(), pop()
			push(errors.Join(a.err, nil, b.err, c.err), a.f.or(b.f).or(c.f))
		}
	}
	n := pop()
	for _, rest := range stack { // whatever is left is joined in
		n = node{errors.Join(n.err, rest.err), n.f.or(rest.f)}
	}
	return n.err, n.f
}

// FuzzClassify checks, for error trees of any shape and any text:
//   - ClassifyError never panics and gives every error a class of the closed set;
//   - the caller's cancellation anywhere is canceled: never retried, not a breaker failure;
//   - a structured timeout after the request may have been sent, anywhere, is class timeout and
//     never retryable for a non-idempotent call, unless something decided first says otherwise:
//     a Business mark or a rejection (never retried), a certificate error (never retried) or an
//     HTTP status ≥ 400 (classified by its status: the server answered);
//   - text never changes the verdict of an error that has a structured class.
func FuzzClassify(f *testing.F) {
	// The reproducer: errors.Join(errors.New("tls: x"), readTimeout).
	f.Add([]byte{0, 1, 14}, "tls: x", false)
	f.Add([]byte{1, 0, 14}, "tls: x", false)
	f.Add([]byte{4, 1, 14}, "dial tcp: connection refused", false)
	f.Add([]byte{10, 1, 14, 13}, "unexpected EOF", false)
	f.Add([]byte{11, 1, 14}, "i/o timeout", false)
	f.Add([]byte{1, 15, 13}, "x", false)
	f.Add([]byte{20, 21, 15, 13}, "x", true)
	f.Add([]byte{7, 1, 14}, "x509: certificate signed by unknown authority", true)
	f.Add([]byte{3, 1, 14, 16}, "context canceled", true)
	f.Add([]byte{6 | 0x80, 1, 14}, "no such host", false)
	f.Add([]byte{9, 8, 5, 23, 12}, "remote error: tls: bad certificate", false)
	f.Add([]byte{18, 2, 14}, "circuit breaker open", false)
	f.Add([]byte{19, 1, 14, 17}, "HTTP 503", false)
	f.Add([]byte{22, 12, 12, 12}, "\xff\xfe tls: ", true)
	f.Fuzz(func(t *testing.T, program []byte, msg string, idempotent bool) {
		err, fs := buildError(program, msg)
		v := ClassifyError(err, idempotent)
		if !v.Class.Valid() {
			t.Fatalf("class %v outside the closed set for %v", v.Class, err)
		}
		if fs.canceled {
			if v != (Verdict{Class: catalog.ClassCanceled}) {
				t.Fatalf("the caller's cancellation classified %+v: %v", v, err)
			}
			return
		}
		if fs.sent && !idempotent && v.Retryable && !fs.marked { // a 5xx status is retryable as such

			t.Fatalf("a non-idempotent call after a timeout classified retryable %+v: %v", v, err)
		}
		if fs.sent && !fs.marked && !fs.cert {
			want := Verdict{Retryable: idempotent && !fs.permanent, BreakerFailure: true, Class: catalog.ClassTimeout}
			if v != want {
				t.Fatalf("a structured timeout classified %+v, want %+v: %v", v, want, err)
			}
		}
		if fs.cert && !fs.marked && v != (Verdict{BreakerFailure: true, Class: catalog.ClassTLSCert}) {
			t.Fatalf("a certificate error classified %+v: %v", v, err)
		}
		if v.Class != catalog.ClassError || fs.marked {
			text := errors.New(msg)
			for _, joined := range []error{errors.Join(text, err), errors.Join(err, text), fmt.Errorf("%s: %w", msg, err)} {
				if w := ClassifyError(joined, idempotent); w != v {
					t.Fatalf("text %q changed the verdict %+v to %+v: %v", msg, v, w, err)
				}
			}
		}
	})
}
