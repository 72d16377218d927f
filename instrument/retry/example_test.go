package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
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
	cfg.DisableBudget = true
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

// rpcError is the error of a made-up RPC protocol's adapter. It carries what the protocol knows
// to the retry through the hint interfaces, the way package httpx's Error carries Retry-After and
// a gRPC adapter carries grpc-retry-pushback-ms.
type rpcError struct {
	code        string        // "UNAVAILABLE", "INVALID_ARGUMENT", …
	pushback    time.Duration // the delay the server asked for; negative: do not retry
	hasPushback bool
}

func (e *rpcError) Error() string { return "rpc: " + e.code }

// RetryAfter makes rpcError a retry.classify.RetryAfterHint.
func (e *rpcError) RetryAfter(time.Time) (time.Duration, bool) {
	return e.pushback, e.hasPushback && e.pushback >= 0
}

// DoNotRetry makes rpcError a retry.classify.DoNotRetryHint: a negative pushback says that the server's
// own retries are exhausted.
func (e *rpcError) DoNotRetry() bool { return e.hasPushback && e.pushback < 0 }

// Verdict makes rpcError a classify.VerdictError: the adapter maps its protocol's codes to
// failure classes, and every layer that classifies errors (the retry, a circuit breaker) uses
// the verdict.
func (e *rpcError) Verdict(idempotent bool) classify.Verdict {
	if e.code == "UNAVAILABLE" {
		return classify.Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassGRPCUnavailable}
	}
	return classify.Verdict{Class: catalog.ClassGRPCPermanent}
}

// A protocol adapter talks to the retry through its errors: the pushback sets the delay (delay
// source retry_after), a negative one stops the retries, and the error's own verdict maps the
// protocol's codes to failure classes.
func Example_protocolAdapter() {
	cfg := retry.Config{MaxAttempts: 5}
	cfg.Backoff = retry.Backoff{Strategy: retry.Constant, Base: time.Millisecond}
	cfg.RetryAfter = retry.RetryAfterConfig{Min: time.Millisecond, Max: 10 * time.Millisecond}
	cfg.DisableBudget = true
	cfg.Events = new(events.Hub)
	cfg.Events.Retries.Add(func(e events.Retry) {
		if e.HasDelay() {
			fmt.Println(e.Attempt, e.ErrorClass, e.Outcome, "after", e.DelaySource)
			return
		}
		fmt.Println(e.Attempt, e.ErrorClass, e.Outcome)
	})
	r, _ := retry.New("ledger-rpc", cfg)

	replies := []error{
		&rpcError{code: "UNAVAILABLE", pushback: 2 * time.Millisecond, hasPushback: true},
		&rpcError{code: "UNAVAILABLE"},
		&rpcError{code: "UNAVAILABLE", pushback: -1, hasPushback: true},
	}
	n := 0
	err := r.Do(context.Background(), func(context.Context) error { n++; return replies[n-1] })
	fmt.Println(err)
	// Output:
	// 1 grpc_unavailable retrying after retry_after
	// 2 grpc_unavailable retrying after backoff
	// 3 grpc_unavailable gave_up
	// retry "ledger-rpc": gave up after 3 attempts: rpc: UNAVAILABLE
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
