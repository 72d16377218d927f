package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// Retrying a plain function: two transient failures, then success.
func Example() {
	cfg := retry.Config{}
	cfg.Backoff = retry.Backoff{Strategy: retry.Exponential, Base: time.Millisecond}
	// A new budget holds no tokens and its floor allows one retry per second: raise the floor
	// so that this one call can use both of its retries.
	cfg.Budget.MinRetriesPerSecond = 2
	r, err := retry.New("inventory-db", cfg)
	if err != nil {
		panic(err)
	}
	calls := 0
	err = r.Do(context.Background(), func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("connection dropped")
		}
		return nil
	})
	fmt.Println(calls, err)
	// Output: 3 <nil>
}

// Exhausted attempts: the error says how many were made and keeps each one's error.
func Example_exhausted() {
	cfg := retry.Config{}
	cfg.Backoff = retry.Backoff{Strategy: retry.None}
	cfg.Budget.Disabled = true
	r, _ := retry.New("inventory-db", cfg)
	n := 0
	err := r.Do(context.Background(), func(context.Context) error {
		n++
		return fmt.Errorf("attempt %d: unavailable", n)
	})
	fmt.Println(err)
	var rerr *retry.Error
	if errors.As(err, &rerr) {
		fmt.Println(len(rerr.Attempts()), rerr.Attempts()[0], rerr.Outcome())
	}
	// Output:
	// retry "inventory-db": gave up after 3 attempts: attempt 3: unavailable
	// 3 attempt 1: unavailable gave_up
}

// How an HTTP middleware retries a request: CallWith with HTTPHooks classifies each response
// (status, Retry-After, the request's idempotency), drains and closes the responses it drops, and
// hands back the last response — even a final 503 — for the caller to read and close.
func ExampleCallWith() {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0") // clamped to the 0.5 s minimum
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
	}, retry.HTTPHooks(req))
	var he *retry.HTTPError
	if errors.As(err, &he) && resp != nil {
		err = nil // attempts exhausted: a RoundTripper returns the last response as is
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), n.Load())
	fmt.Println(retry.HTTPHooks(req).Endpoint[:4])
	// Output:
	// 200 quote: 42 2
	// GET
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"30", " 2.5", "-1", "Mon, 30 Nov 2026 12:01:00 GMT"} {
		d, ok := retry.ParseRetryAfter(v, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 30s true
	// 2.5s true
	// 0s false
	// 1m0s true
}

func ExampleBackoff_Delay() {
	b := retry.Backoff{Strategy: retry.EqualJitter, Base: 100 * time.Millisecond, Cap: time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 5; n++ {
		d := b.Delay(n, 0, rng)
		e := min(time.Second, 100*time.Millisecond<<(n-1))
		fmt.Println(n, d >= e/2 && d <= e)
	}
	// Output:
	// 1 true
	// 2 true
	// 3 true
	// 4 true
	// 5 true
}
