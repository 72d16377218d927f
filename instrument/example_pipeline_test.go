package instrument_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// One pipeline per dependency: every layer is the registry's primitive of the same name, so the
// collector exports one set of series for "inventory-db".
func ExampleRegistry_Pipeline() {
	reg, err := instrument.NewRegistry()
	if err != nil {
		panic(err)
	}
	rc := retry.Config{}
	rc.Backoff = retry.Backoff{Strategy: retry.Exponential, Base: time.Millisecond}
	rc.Budget.MinRetriesPerSecond = 10
	p, err := reg.Pipeline("inventory-db", instrument.PipelineConfig{
		Retry:    &rc,
		Breaker:  &breaker.Config{},
		Bulkhead: &bulkhead.Config{MaxConcurrent: 20, MaxWait: 200 * time.Millisecond},
		Timeout:  &timeout.Config{Timeout: 800 * time.Millisecond},
	})
	if err != nil {
		panic(err)
	}
	attempts := 0
	stock, err := instrument.Call(context.Background(), p, func(ctx context.Context) (int, error) {
		attempts++ // ctx carries the attempt's deadline
		if attempts == 1 {
			return 0, errors.New("connection reset")
		}
		return 42, nil
	})
	fmt.Println(stock, err, attempts)
	fmt.Println(reg.Breakers()[0].Name, p.Breaker().State())
	// Output:
	// 42 <nil> 2
	// inventory-db closed
}

// The fallback answers with a degraded value, says so, and is told why.
func ExampleCallWithFallback() {
	reg, _ := instrument.NewRegistry()
	p, err := reg.Pipeline("prices", instrument.PipelineConfig{
		Breaker:  &breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1},
		Fallback: &fallback.Config{},
	})
	if err != nil {
		panic(err)
	}
	fetch := func(context.Context) (string, error) { return "", errors.New("prices-api: 503") }
	cached := func(_ context.Context, cause catalog.Cause, _ error) (string, error) {
		return "cached prices (" + cause.String() + ")", nil
	}
	for range 2 {
		v, fromFallback, err := instrument.CallWithFallback(context.Background(), p, fetch, cached)
		fmt.Println(v, fromFallback, err)
	}
	// Output:
	// cached prices (error) true <nil>
	// cached prices (circuit_open) true <nil>
}

// An impossible combination of fields is refused, naming the field and its value.
func ExamplePipelineConfig_Validate() {
	rc := retry.Config{AttemptTimeout: time.Second} // a second per-attempt limit
	err := instrument.PipelineConfig{Retry: &rc, Timeout: &timeout.Config{Timeout: time.Second}}.Validate()
	var ce *catalog.ConfigError
	if errors.As(err, &ce) {
		fmt.Println(ce.Primitive, ce.Field, ce.Value)
	}
	// Output: pipeline Retry.AttemptTimeout 1s
}

// A business error — the dependency answered "no" — is marked with classify.Business: it is not
// retried, the breaker ignores it, the fallback does not replace it, and the caller receives it.
func Example_businessError() {
	reg, _ := instrument.NewRegistry()
	p, err := reg.Pipeline("payments", instrument.PipelineConfig{
		Retry:    &retry.Config{},
		Breaker:  &breaker.Config{},
		Fallback: &fallback.Config{},
	})
	if err != nil {
		panic(err)
	}
	errInsufficientFunds := errors.New("insufficient funds")
	attempts := 0
	fromFallback, err := p.DoWithFallback(context.Background(),
		func(context.Context) error {
			attempts++
			return classify.Business(errInsufficientFunds)
		},
		func(context.Context, catalog.Cause, error) error { return nil })
	fmt.Println(attempts, fromFallback, errors.Is(err, errInsufficientFunds))
	fmt.Println(p.Breaker().Snapshot().Calls[catalog.CallIgnored], "ignored by the breaker")
	// Output:
	// 1 false true
	// 1 ignored by the breaker
}
