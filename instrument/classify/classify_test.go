package classify

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStatusTable(t *testing.T) {
	fail := func(retry bool, class catalog.Class) Verdict {
		return Verdict{Retryable: retry, BreakerFailure: true, Class: class}
	}
	pass := func(class catalog.Class) Verdict { return Verdict{Class: class} }
	cases := []struct {
		code       int
		idempotent bool
		want       Verdict
	}{
		{200, false, Verdict{}},
		{204, true, Verdict{}},
		{304, true, Verdict{}},
		{400, true, pass(catalog.ClassHTTP4xx)},
		{401, true, pass(catalog.ClassHTTPAuth)},
		{403, true, pass(catalog.ClassHTTPAuth)},
		{404, true, pass(catalog.ClassHTTP4xx)},
		{409, true, pass(catalog.ClassHTTP4xx)},
		{422, true, pass(catalog.ClassHTTP4xx)},
		{425, true, pass(catalog.ClassHTTP4xx)},
		{451, true, pass(catalog.ClassHTTP4xx)},
		{408, false, fail(true, catalog.ClassHTTP408)},
		{429, false, fail(true, catalog.ClassHTTP429)},
		{500, false, fail(true, catalog.ClassHTTP5xx)},
		{502, false, fail(true, catalog.ClassHTTP5xx)},
		{503, false, fail(true, catalog.ClassHTTP5xx)},
		{504, true, fail(true, catalog.ClassHTTP5xx)},
		{504, false, fail(false, catalog.ClassHTTP5xx)},
		{501, true, pass(catalog.ClassHTTP5xxPermanent)},
		{505, true, pass(catalog.ClassHTTP5xxPermanent)},
		{507, false, fail(true, catalog.ClassHTTP5xx)},
		{511, false, fail(true, catalog.ClassHTTP5xx)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d/idempotent=%v", c.code, c.idempotent), func(t *testing.T) {
			assert.Equal(t, c.want, Status(c.code, c.idempotent))
			assert.Equal(t, c.want.Failed(), c.want.Class != catalog.ClassNone)
		})
	}
}

// get performs one request with a fresh transport (no connection reuse, no proxy) under ctx,
// bounded by bound.
func get(t *testing.T, ctx context.Context, method, url string) (*http.Response, error) {
	t.Helper()
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	// A bound, not an expectation: every request here ends on its own long before.
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// tcpServer accepts connections and hands each to handle; it stops with the test.
func tcpServer(t *testing.T, handle func(c *net.TCPConn)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			handle(c.(*net.TCPConn))
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })
	return l.Addr().String()
}

// silentServer reads each request, reports it on the returned channel and never answers; the
// connections close with the test.
func silentServer(t *testing.T) (addr string, received <-chan struct{}) {
	got := make(chan struct{}, 16)
	hold := make(chan struct{})
	var wg sync.WaitGroup
	addr = tcpServer(t, func(c *net.TCPConn) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if line == "\r\n" { // the end of the request's header: it was sent
					break
				}
			}
			got <- struct{}{}
			<-hold
		}()
	})
	t.Cleanup(func() { close(hold); wg.Wait() })
	return addr, got
}

// deadlineCtx is a context whose deadline passes when expire is called: a deterministic stand-in
// for a deadline that fires while the request is in flight. It has no Deadline time, so nothing
// in net/http arms a timer from it.
type deadlineCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *deadlineCtx) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Done() <-chan struct{} { return c.done }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// afterReceived runs end once the server reports the request (the request was sent).
func afterReceived(received <-chan struct{}, end func()) {
	go func() { <-received; end() }()
}

func TestTransportErrorsFromRealOperations(t *testing.T) {
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer untrusted.Close()

	reset := tcpServer(t, func(c *net.TCPConn) {
		buf := make([]byte, 4096)
		_, _ = c.Read(buf) // read the request, then abort the connection with RST
		_ = c.SetLinger(0)
		_ = c.Close()
	})
	alert := tcpServer(t, func(c *net.TCPConn) {
		buf := make([]byte, 4096)
		_, _ = c.Read(buf) // read the ClientHello, answer with a fatal handshake_failure alert
		_, _ = c.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28})
		_ = c.Close()
	})
	silent, received := silentServer(t)

	cases := []struct {
		name    string
		method  string
		url     string
		timeout bool // the request's deadline passes once the server has received it
		want    Verdict
	}{
		{"connection refused", "GET", "http://" + closedPort(t) + "/", false, Verdict{true, true, catalog.ClassConnRefused}},
		{"connection reset", "GET", "http://" + reset + "/", false, Verdict{true, true, catalog.ClassConnReset}},
		{"dns failure", "GET", "http://stormwatch-test.invalid/", false, Verdict{true, true, catalog.ClassDNS}},
		{"untrusted certificate", "GET", untrusted.URL + "/", false, Verdict{false, true, catalog.ClassTLSCert}},
		{"tls handshake alert", "GET", "https://" + alert + "/", false, Verdict{true, true, catalog.ClassTLS}},
		{"read timeout, idempotent", "GET", "http://" + silent + "/", true, Verdict{true, true, catalog.ClassTimeout}},
		{"read timeout, not idempotent", "POST", "http://" + silent + "/", true, Verdict{false, true, catalog.ClassTimeout}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Context(context.Background())
			if c.timeout {
				dl := newDeadlineCtx()
				afterReceived(received, dl.expire)
				ctx = dl
			}
			resp, err := get(t, ctx, c.method, c.url)
			require.Error(t, err)
			req, _ := http.NewRequest(c.method, c.url, nil)
			assert.Equal(t, c.want, httpVerdict(resp, err, req.Method == http.MethodGet), "error: %v", err)
		})
	}
}

func TestReadDeadlineOnARealConnection(t *testing.T) {
	// A read deadline that has already passed when the request is on the wire: the error the
	// net package reports for a read timeout, without waiting for one.
	silent, received := silentServer(t)
	conn, err := net.Dial("tcp", silent)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	<-received
	require.NoError(t, conn.SetReadDeadline(time.Unix(1, 0)))
	_, err = conn.Read(make([]byte, 1))
	require.Error(t, err)
	assert.Equal(t, Verdict{false, true, catalog.ClassTimeout}, ClassifyError(err, false), "error: %v", err)
	assert.Equal(t, Verdict{true, true, catalog.ClassTimeout}, ClassifyError(err, true))
	joined := errors.Join(errors.New("tls: handshake failure"), err)
	assert.Equal(t, Verdict{false, true, catalog.ClassTimeout}, ClassifyError(joined, false),
		"a real read timeout wins over text that mentions TLS")
}

func TestAttemptDeadlineAndCallerCancellation(t *testing.T) {
	silent, received := silentServer(t)
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()

	// The attempt's deadline passes after the request was sent: a timeout.
	dl := newDeadlineCtx()
	afterReceived(received, dl.expire)
	req, _ := http.NewRequestWithContext(dl, "GET", "http://"+silent+"/", nil)
	_, err := tr.RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, Verdict{true, true, catalog.ClassTimeout}, ClassifyError(err, true), "error: %v", err)
	assert.Equal(t, Verdict{false, true, catalog.ClassTimeout}, ClassifyError(err, false))

	// The caller cancels while the request is in flight: never retried, not a breaker failure.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	afterReceived(received, cancel)
	req, _ = http.NewRequestWithContext(ctx, "GET", "http://"+silent+"/", nil)
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, Verdict{Class: catalog.ClassCanceled}, ClassifyError(err, true), "error: %v", err)
}

type fakeRejection struct{ name string }

func (e *fakeRejection) Error() string  { return "circuit breaker " + e.name + " is open" }
func (e *fakeRejection) Rejected() bool { return true }

type statusErr int

func (e statusErr) Error() string   { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusErr) HTTPStatus() int { return int(e) }

// verdictErr carries its own verdict, as a protocol adapter's error does; the verdict depends on
// the operation's idempotency, like a gRPC DEADLINE_EXCEEDED.
type verdictErr struct{ class catalog.Class }

func (e verdictErr) Error() string { return "rpc: " + e.class.String() }
func (e verdictErr) Verdict(idempotent bool) Verdict {
	return Verdict{Retryable: idempotent, BreakerFailure: true, Class: e.class}
}

type notRejection struct{}

func (notRejection) Error() string  { return "looks like a rejection" }
func (notRejection) Rejected() bool { return false }

func TestErrorTable(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		idempotent bool
		want       Verdict
	}{
		{"nil", nil, false, Verdict{}},
		{"own rejection", &fakeRejection{"payments"}, true, Verdict{Class: catalog.ClassRejected}},
		{"wrapped rejection", fmt.Errorf("call: %w", &fakeRejection{"payments"}), true, Verdict{Class: catalog.ClassRejected}},
		{"Rejected() false is an ordinary error", notRejection{}, true, Verdict{true, true, catalog.ClassError}},
		{"caller cancelled", fmt.Errorf("db: %w", context.Canceled), true, Verdict{Class: catalog.ClassCanceled}},
		{"deadline, idempotent", context.DeadlineExceeded, true, Verdict{true, true, catalog.ClassTimeout}},
		{"deadline, not idempotent", context.DeadlineExceeded, false, Verdict{false, true, catalog.ClassTimeout}},
		{"os deadline", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, false, Verdict{false, true, catalog.ClassTimeout}},
		{"dial timeout: never sent", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, false, Verdict{true, true, catalog.ClassTimeout}},
		{"refused syscall", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false, Verdict{true, true, catalog.ClassConnRefused}},
		{"reset syscall", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, false, Verdict{true, true, catalog.ClassConnReset}},
		{"unexpected EOF", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), false, Verdict{true, true, catalog.ClassConnReset}},
		{"dns", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, false, Verdict{true, true, catalog.ClassDNS}},
		{"dns timeout is dns", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}, false, Verdict{true, true, catalog.ClassDNS}},
		{"other", errors.New("boom"), false, Verdict{true, true, catalog.ClassError}},
		{"permanent keeps class", Permanent(&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), true, Verdict{false, true, catalog.ClassConnRefused}},
		{"business", Business(errors.New("insufficient balance")), true, Verdict{Class: catalog.ClassError}},
		{"tls record header", fmt.Errorf("x: %w", tls.RecordHeaderError{Msg: "bad"}), true, Verdict{true, true, catalog.ClassTLS}},
		{"status error 404: not a breaker failure", fmt.Errorf("get: %w", statusErr(404)), true, Verdict{Class: catalog.ClassHTTP4xx}},
		{"status error 503", statusErr(503), false, Verdict{true, true, catalog.ClassHTTP5xx}},
		{"status error 504 not idempotent", statusErr(504), false, Verdict{false, true, catalog.ClassHTTP5xx}},
		{"status error without a status", statusErr(0), false, Verdict{true, true, catalog.ClassError}},
		{"own verdict, idempotent", fmt.Errorf("call: %w", verdictErr{catalog.ClassGRPCDeadline}), true, Verdict{true, true, catalog.ClassGRPCDeadline}},
		{"own verdict, not idempotent", verdictErr{catalog.ClassGRPCDeadline}, false, Verdict{false, true, catalog.ClassGRPCDeadline}},
		{"own verdict wins over a timeout around it", fmt.Errorf("attempt: %w", errors.Join(context.DeadlineExceeded, verdictErr{catalog.ClassGRPCUnavailable})), true, Verdict{true, true, catalog.ClassGRPCUnavailable}},
		{"own verdict wins over a status", errors.Join(statusErr(404), verdictErr{catalog.ClassGRPCUnavailable}), true, Verdict{true, true, catalog.ClassGRPCUnavailable}},
		{"own verdict outside the closed set", verdictErr{catalog.NumClasses + 3}, true, Verdict{true, true, catalog.ClassError}},
		{"own verdict, permanent", Permanent(verdictErr{catalog.ClassGRPCUnavailable}), true, Verdict{false, true, catalog.ClassGRPCUnavailable}},
		{"own verdict, cancelled by the caller", errors.Join(verdictErr{catalog.ClassGRPCUnavailable}, context.Canceled), true, Verdict{Class: catalog.ClassCanceled}},
		{"own verdict, business", Business(verdictErr{catalog.ClassGRPCUnavailable}), true, Verdict{Class: catalog.ClassError}},
		{"own verdict, rejection first", errors.Join(verdictErr{catalog.ClassGRPCUnavailable}, &fakeRejection{"p"}), true, Verdict{Class: catalog.ClassRejected}},
		{"remote tls alert", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, true, Verdict{true, true, catalog.ClassTLS}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ClassifyError(c.err, c.idempotent))
		})
	}
	assert.Nil(t, Permanent(nil))
	assert.Nil(t, Business(nil))
	base := errors.New("x")
	assert.ErrorIs(t, Permanent(base), base)
	assert.ErrorIs(t, Business(base), base)
	assert.Equal(t, "x", Business(base).Error())
}

func TestEveryFailureHasAClassOfTheClosedSet(t *testing.T) {
	// Classes are metric label values: a failure must never carry ClassNone or a value outside
	// catalog.Classes.
	for code := 400; code < 600; code++ {
		for _, idem := range []bool{true, false} {
			v := Status(code, idem)
			assert.True(t, v.Class.Valid(), "status %d: class %v", code, v.Class)
		}
	}
	for _, err := range []error{errors.New("x"), context.Canceled, context.DeadlineExceeded,
		Business(errors.New("x")), &fakeRejection{"payments"}, syscall.ECONNREFUSED, io.EOF} {
		assert.True(t, ClassifyError(err, true).Class.Valid(), "%v", err)
	}
	assert.Equal(t, catalog.ClassNone, ClassifyError(nil, true).Class)
	assert.False(t, Verdict{}.Failed())
}

// httpVerdict classifies an HTTP call from its response and error, as httpx.Classify does.
func httpVerdict(resp *http.Response, err error, idempotent bool) Verdict {
	if err != nil {
		return ClassifyError(err, idempotent)
	}
	if resp == nil {
		return Verdict{}
	}
	return Status(resp.StatusCode, idempotent)
}
