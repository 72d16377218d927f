package redact

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEndpoint(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"GET api.example.com/v1/orders", "GET api.example.com/v1/orders"},
		{"GET https://user:pass@api.example.com/v1/x?token=s3cret", "GET https://api.example.com/v1/x"},
		{"https://user:pass@host/p?q=1#f", "https://host/p"},
		{"POST /api/v2/orders?debug=1", "POST /api/v2/orders"},
		{"user:pass@host:8080/path?x", "host:8080/path"},
		// Scheme-relative, as url.URL.String() writes a URL without a scheme.
		{"POST //user:pass@h:8080/a", "POST //h:8080/a"},
		{"//user:pass@h:8080/a", "//h:8080/a"},
		// The first word is not a method.
		{"123 https://user:pass@h/x", "123 https://h/x"},
		{"call user:pass@h/x", "call h/x"},
		{"db-query //user:pass@h/x", "db-query //h/x"},
		{"GET /x user:pass@h", "GET /x h"},
		{"GET http://h/ http://user:pass@h2/", "GET http://h/ http://h2/"},
		{"GET\tuser:pass@h/x", "GET\th/x"},
		// A URL inside a path.
		{"GET h/proxy/http://user:pass@inner/x", "GET h/proxy/http://inner/x"},
		// '@' in a path segment is not userinfo.
		{"GET /users/a@b.example/orders", "GET /users/a@b.example/orders"},
		// The last '@' ends the userinfo.
		{"https://us@er:p@ss@host/", "https://host/"},
		// A '?' or '#' before the last '@' of an authority: a password or a query, dropped whole.
		{"https://user:pa#ss@host/x", "https://"},
		{"https://user:pa?ss@host/x", "https://"},
		{"https://host?a=b@c/d", "https://"},
		{"https://host#frag", "https://host"},
		{"  GET /x  ", "GET /x"},
		{"u@", ""},
		{"?only=query", ""},
	}
	for _, tt := range tests {
		got := Endpoint(tt.in)
		assert.Equal(t, tt.want, got, "Endpoint(%q)", tt.in)
		assert.Equal(t, got, Endpoint(got), "idempotent on %q", tt.in)
	}
}

func BenchmarkEndpoint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Endpoint("GET https://user:pass@api.example.com/v1/x?token=s3cret")
	}
}
