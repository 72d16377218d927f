package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// netTimeout is a net.Error that times out, like the errors of deadlines on net.Conn.
type netTimeout struct{}

func (netTimeout) Error() string   { return "i/o timeout" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

var (
	readTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	dialTimeout = &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	refused     = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	resetErr    = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	dnsNotFound = &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}
	dnsTimeout  = &net.DNSError{Err: "i/o timeout", Name: "x.invalid", IsTimeout: true}
	certErr     = &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	recordErr   = tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}
	alertErr    = tls.AlertError(40)
)

// Texts that name a failure class without being one: the standard library's wording, which a
// wrapped message can carry whatever happened.
var misleadingTexts = []string{
	"tls: handshake failure",
	"remote error: tls: bad certificate",
	"x509: certificate signed by unknown authority",
	"dial tcp: connection refused",
	"read: connection reset by peer",
	"i/o timeout",
	"context deadline exceeded",
	"lookup x.invalid: no such host",
	"context canceled",
}

func TestStructureWinsOverText(t *testing.T) {
	fail := func(retry bool, class catalog.Class) Verdict {
		return Verdict{Retryable: retry, BreakerFailure: true, Class: class}
	}
	structured := []struct {
		name       string
		err        error
		idempotent bool
		want       Verdict
	}{
		{"read timeout, not idempotent", readTimeout, false, fail(false, catalog.ClassTimeout)},
		{"read timeout, idempotent", readTimeout, true, fail(true, catalog.ClassTimeout)},
		{"deadline, not idempotent", context.DeadlineExceeded, false, fail(false, catalog.ClassTimeout)},
		{"net.Error timeout, not idempotent", netTimeout{}, false, fail(false, catalog.ClassTimeout)},
		{"dial timeout: never sent", dialTimeout, false, fail(true, catalog.ClassTimeout)},
		{"refused", refused, false, fail(true, catalog.ClassConnRefused)},
		{"reset", resetErr, false, fail(true, catalog.ClassConnReset)},
		{"dns", dnsNotFound, false, fail(true, catalog.ClassDNS)},
		{"dns timeout", dnsTimeout, false, fail(true, catalog.ClassDNS)},
		{"certificate", certErr, true, fail(false, catalog.ClassTLSCert)},
		{"tls record header", recordErr, false, fail(true, catalog.ClassTLS)},
		{"tls alert", alertErr, false, fail(true, catalog.ClassTLS)},
		{"caller cancelled", context.Canceled, true, Verdict{Class: catalog.ClassCanceled}},
	}
	for _, s := range structured {
		for _, text := range misleadingTexts {
			msg := errors.New(text)
			shapes := map[string]error{
				"alone":                   s.err,
				"join(text, err)":         errors.Join(msg, s.err),
				"join(err, text)":         errors.Join(s.err, msg),
				"wrapped with the text":   fmt.Errorf("%s: %w", text, s.err),
				"url.Error(join)":         &url.Error{Op: "Post", URL: "http://127.0.0.1/", Err: errors.Join(msg, s.err)},
				"join(text, wrapped err)": errors.Join(msg, fmt.Errorf("call: %w", s.err)),
				"join of joins":           errors.Join(errors.Join(msg), errors.Join(fmt.Errorf("%w", msg), s.err)),
			}
			for shape, err := range shapes {
				assert.Equal(t, s.want, ClassifyError(err, s.idempotent), "%s, %s, text %q", s.name, shape, text)
			}
		}
	}
}

func TestStructuredPrecedence(t *testing.T) {
	fail := func(retry bool, class catalog.Class) Verdict {
		return Verdict{Retryable: retry, BreakerFailure: true, Class: class}
	}
	cases := []struct {
		name       string
		err        error
		idempotent bool
		want       Verdict
	}{
		// A timeout after the request may have been sent is never hidden by a retryable class.
		{"refused dial joined with a read timeout", errors.Join(refused, readTimeout), false, fail(false, catalog.ClassTimeout)},
		{"read timeout joined with a refused dial", errors.Join(readTimeout, refused), false, fail(false, catalog.ClassTimeout)},
		{"EOF joined with a read timeout", errors.Join(io.EOF, readTimeout), false, fail(false, catalog.ClassTimeout)},
		{"reset joined with a deadline", errors.Join(resetErr, context.DeadlineExceeded), false, fail(false, catalog.ClassTimeout)},
		{"dns joined with a read timeout", errors.Join(dnsNotFound, readTimeout), false, fail(false, catalog.ClassTimeout)},
		{"tls alert joined with a read timeout", errors.Join(alertErr, readTimeout), false, fail(false, catalog.ClassTimeout)},
		{"a dial's timeout does not make a read timeout retryable",
			errors.Join(dialTimeout, readTimeout), false, fail(false, catalog.ClassTimeout)},
		{"a dial timeout inside a url.Error was never sent",
			&url.Error{Op: "Post", URL: "http://127.0.0.1/", Err: dialTimeout}, false, fail(true, catalog.ClassTimeout)},
		{"a read timeout inside a url.Error",
			&url.Error{Op: "Post", URL: "http://127.0.0.1/", Err: readTimeout}, false, fail(false, catalog.ClassTimeout)},
		{"refused beats a dial timeout (both unsent)", errors.Join(dialTimeout, refused), false, fail(true, catalog.ClassConnRefused)},
		// The certificate error is the most restrictive verdict: never retried.
		{"certificate joined with a read timeout", errors.Join(readTimeout, certErr), true, fail(false, catalog.ClassTLSCert)},
		// The marks and the caller's cancellation win over every transport class.
		{"cancelled joined with a timeout", errors.Join(readTimeout, context.Canceled), true, Verdict{Class: catalog.ClassCanceled}},
		{"business around a cancellation is the caller's cancellation", Business(context.Canceled), true, Verdict{Class: catalog.ClassCanceled}},
		{"business around a timeout", Business(readTimeout), true, Verdict{Class: catalog.ClassError}},
		{"permanent around a joined timeout", Permanent(errors.Join(alertErr, readTimeout)), true, fail(false, catalog.ClassTimeout)},
		{"rejection joined with a timeout", errors.Join(readTimeout, &fakeRejection{"p"}), true, Verdict{Class: catalog.ClassRejected}},
		// Text alone is still a last resort.
		{"tls text alone", errors.New("tls: handshake failure"), false, fail(true, catalog.ClassTLS)},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ClassifyError(c.err, c.idempotent), c.name)
	}
}
