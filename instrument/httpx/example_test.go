package httpx_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// A client whose requests go through a retry, a circuit breaker and a per-attempt timeout of
// their host. The flaky server answers its first request 502; the transport retries it.
func ExampleNewTransport() {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		fmt.Fprintf(w, "quote 42 (deadline header %t)", r.Header.Get(httpx.TimeoutHeader) != "")
	}))
	defer srv.Close()

	reg, _ := instrument.NewRegistry()
	rc := retry.Config{}
	rc.Backoff = retry.Backoff{Strategy: retry.Exponential, Base: time.Millisecond}
	tr, err := httpx.NewTransport(http.DefaultTransport, httpx.WithRegistry(reg),
		httpx.WithPipeline(instrument.PipelineConfig{
			Retry:   &rc,
			Breaker: &breaker.Config{},
			Timeout: &timeout.Config{Timeout: 2 * time.Second},
		}))
	if err != nil {
		panic(err)
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Get(srv.URL + "/v1/quote?session=secret")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), n.Load())
	fmt.Println(len(reg.Breakers()), reg.Breakers()[0].Name == srv.Listener.Addr().String())
	// Output:
	// 200 quote 42 (deadline header true) 2
	// 1 true
}

// The server side of the do-not-retry signal: when a handler's own downstream retries are
// exhausted, its failure response tells the caller not to retry.
func ExampleMiddleware() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	rc := retry.Config{MaxAttempts: 2, Backoff: retry.Backoff{Strategy: retry.None}, DisableBudget: true}
	tr, _ := httpx.NewTransport(nil, httpx.WithPipeline(instrument.PipelineConfig{Retry: &rc}))
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	handler := httpx.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, down.URL, nil)
		resp, err := client.Do(req) // retried twice, then given up: the signal is raised
		if err == nil {
			resp.Body.Close()
		}
		w.WriteHeader(http.StatusBadGateway)
	}))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/checkout", nil))
	fmt.Println(rec.Code, rec.Header().Get(httpx.RetryDisabledHeader))
	// Output: 502 true
}

// Retrying requests with package retry directly, without the Transport: RetryHooks classifies
// each response (status, Retry-After, the request's idempotency), drains and closes the responses
// the retry drops, and hands back the last response — even a final 503 — for the caller to read
// and close.
func ExampleRetryHooks() {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0") // clamped to the retry's 0.5 s minimum
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "quote: 42")
	}))
	defer srv.Close()

	r, _ := retry.New("quotes-api", retry.Config{})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/quote?session=abc", nil)
	resp, err := retry.CallWith(req.Context(), r, func(ctx context.Context) (*http.Response, error) {
		// ctx is the attempt context: the caller's, bounded by AttemptTimeout.
		return srv.Client().Do(req.WithContext(ctx))
	}, httpx.RetryHooks(req))
	var he *httpx.Error
	if errors.As(err, &he) && resp != nil {
		err = nil // attempts exhausted: like a RoundTripper, hand the last response over as is
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), n.Load())
	fmt.Println(httpx.RetryHooks(req).Endpoint == "GET "+srv.Listener.Addr().String()+"/v1/quote")
	// Output:
	// 200 quote: 42 2
	// true
}
