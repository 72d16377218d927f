package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

func Example() {
	b, err := breaker.New("payments-api", breaker.Config{
		Window:     breaker.ConsecutiveFailures,
		WindowSize: 2,
	})
	if err != nil {
		panic(err)
	}
	down := errors.New("503 Service Unavailable")
	for i := range 3 {
		err := b.Do(context.Background(), func(ctx context.Context) error { return down })
		var open *breaker.OpenError
		if errors.As(err, &open) {
			fmt.Printf("call %d: rejected, breaker %s\n", i+1, open.State)
			continue
		}
		fmt.Printf("call %d: %v, breaker %s\n", i+1, err, b.State())
	}
	// Output:
	// call 1: 503 Service Unavailable, breaker closed
	// call 2: 503 Service Unavailable, breaker open
	// call 3: rejected, breaker open
}

func ExampleCall() {
	b, _ := breaker.New("pricing", breaker.Config{})
	price, err := breaker.Call(context.Background(), b, func(ctx context.Context) (float64, error) {
		return 9.99, nil
	})
	fmt.Println(price, err)
	// Output: 9.99 <nil>
}

func ExampleBreaker_Acquire() {
	b, _ := breaker.New("inventory", breaker.Config{})
	done, err := b.Acquire()
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	err = nil // ... make the call ...
	done.Done(err)
	fmt.Println(b.Snapshot().Calls[catalog.CallSuccessful])
	// Output: 1
}

func ExampleBreaker_Snapshot() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b, _ := breaker.New("payments-api", breaker.Config{
		Window: breaker.ConsecutiveFailures, WindowSize: 3, OpenDuration: 10 * time.Second, DisableJitter: true, Clock: clk,
	})
	for range 3 {
		_ = b.Do(context.Background(), func(context.Context) error { return errors.New("503") })
	}
	_ = b.Do(context.Background(), func(context.Context) error { return nil }) // rejected

	// Counters are arrays indexed by the catalog's values.
	sn := b.Snapshot()
	fmt.Println(sn.State, "since", sn.TrippedSince.Format(time.TimeOnly), "because of", sn.TripCause)
	fmt.Println("failed calls:", sn.Calls[catalog.CallFailed], "rejected:", sn.NotPermitted)
	fmt.Println("trips:", sn.Trips[catalog.TripConsecutiveFailures], "closed→open:", sn.Transitions[catalog.StateClosed][catalog.StateOpen])
	// Output:
	// open since 00:00:00 because of consecutive_failures
	// failed calls: 3 rejected: 1
	// trips: 1 closed→open: 1
}

func ExampleOpenError() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b, _ := breaker.New("search", breaker.Config{OpenDuration: 20 * time.Second, DisableJitter: true, Clock: clk})
	b.ForceOpen()
	err := b.Do(context.Background(), func(context.Context) error { return nil })
	fmt.Println(errors.Is(err, breaker.ErrOpen), err)
	b.Reset()

	// A tripped breaker tells how long it stays open: a Retry-After hint.
	b2, _ := breaker.New("search", breaker.Config{Window: breaker.ConsecutiveFailures, WindowSize: 1, OpenDuration: 20 * time.Second, DisableJitter: true, Clock: clk})
	_ = b2.Do(context.Background(), func(context.Context) error { return errors.New("timeout") })
	clk.Advance(5 * time.Second)
	err = b2.Do(context.Background(), func(context.Context) error { return nil })
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		fmt.Println(oe.Name, oe.State, oe.Remaining)
	}
	// Output:
	// true circuit breaker "search" is forced_open
	// search open 15s
}
