package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
)

func TestIsIdempotent(t *testing.T) {
	cases := []struct {
		method string
		key    string
		want   bool
	}{
		{http.MethodGet, "", true},
		{http.MethodHead, "", true},
		{http.MethodOptions, "", true},
		{http.MethodPut, "", true},
		{http.MethodDelete, "", true},
		{"", "", true}, // net/http: empty method means GET
		{http.MethodPost, "", false},
		{http.MethodPatch, "", false},
		{http.MethodPost, "k-1", true},
		{http.MethodPatch, "k-2", true},
		{http.MethodConnect, "", false},
		{http.MethodTrace, "k", false},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, "http://127.0.0.1/", nil)
		require.NoError(t, err)
		if c.key != "" {
			req.Header.Set("Idempotency-Key", c.key)
		}
		assert.Equal(t, c.want, IsIdempotent(req), "%s key=%q", c.method, c.key)
	}
	assert.False(t, IsIdempotent(nil))
}

func ExampleClassify() {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/orders", nil)
	resp := &http.Response{StatusCode: http.StatusGatewayTimeout, Request: req}
	fmt.Println(Classify(resp, nil, IsIdempotent(req)))

	req.Header.Set("Idempotency-Key", "order-42")
	fmt.Println(Classify(resp, nil, IsIdempotent(req)))

	fmt.Println(Classify(&http.Response{StatusCode: http.StatusNotFound}, nil, true))
	// Output:
	// {false true http_5xx}
	// {true true http_5xx}
	// {false false http_4xx}
}

func TestClassifyResponseAndError(t *testing.T) {
	for _, code := range []int{200, 304, 400, 401, 404, 408, 429, 500, 501, 503, 504, 505} {
		for _, idem := range []bool{false, true} {
			assert.Equal(t, classify.Status(code, idem), Classify(&http.Response{StatusCode: code}, nil, idem), "%d", code)
		}
	}
	assert.Equal(t, classify.Verdict{}, Classify(nil, nil, true))
	refused := errors.New("dial tcp: connection refused")
	assert.Equal(t, classify.ClassifyError(refused, false), Classify(&http.Response{StatusCode: 200}, refused, false),
		"the error wins over the response")
	assert.Equal(t, catalog.ClassHTTP5xx, Classify(&http.Response{StatusCode: 503}, nil, false).Class)
}
