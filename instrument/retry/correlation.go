package retry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

type correlationKey struct{}

// WithCorrelationID returns a context carrying id as the correlation id of the logical call: every
// retry log line of the call carries it, and an HTTP middleware can send it downstream. The
// retrylog package re-exports this helper.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey{}, id)
}

// CorrelationID returns the correlation id carried by ctx, or "" when there is none.
func CorrelationID(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	id, _ := ctx.Value(correlationKey{}).(string)
	return id
}

// NewCorrelationID returns a random UUID (version 4) string.
func NewCorrelationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// ensureCorrelationID returns ctx with a correlation id, generating one when absent.
func ensureCorrelationID(ctx context.Context) context.Context {
	if CorrelationID(ctx) != "" {
		return ctx
	}
	return WithCorrelationID(ctx, NewCorrelationID())
}

// Endpoint describes req for retry events and logs: the method, then the host and path — never
// the query string, the fragment or userinfo (LG-05), which may carry tokens.
func Endpoint(req *http.Request) string {
	if req == nil || req.URL == nil {
		return ""
	}
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	host := req.URL.Host
	if host == "" {
		host = req.Host
	}
	return m + " " + stripUserinfo(host) + req.URL.EscapedPath()
}

// SanitizeEndpoint removes what must never be logged from an endpoint string: userinfo, the
// query string and the fragment. It accepts "METHOD URL", "METHOD /path", a URL or a bare path.
func SanitizeEndpoint(s string) string {
	s = strings.TrimSpace(s)
	method, rest, found := strings.Cut(s, " ")
	if !found || !isMethod(method) {
		method, rest = "", s
	}
	rest = strings.TrimSpace(rest)
	// Userinfo first, then the query string and the fragment.
	start := 0
	if i := strings.Index(rest, "://"); i >= 0 {
		start = i + 3
	}
	rest = rest[:start] + stripUserinfo(rest[start:])
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if method == "" || rest == "" {
		return method + rest
	}
	return method + " " + rest
}

// isMethod reports whether s looks like an HTTP method: letters only.
func isMethod(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

// stripUserinfo drops a "user:pass@" prefix from a host (or host/path): the userinfo ends at the
// last '@' of the authority, which ends at the first '/', '?' or '#'.
func stripUserinfo(hostPath string) string {
	end := strings.IndexAny(hostPath, "/?#")
	if end < 0 {
		end = len(hostPath)
	}
	if at := strings.LastIndexByte(hostPath[:end], '@'); at >= 0 {
		return hostPath[at+1:]
	}
	return hostPath
}
