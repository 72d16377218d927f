package timeout_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Each attempt runs under its own deadline; an attempt stopped by it fails with ErrTimedOut
// (which is also a context.DeadlineExceeded), and is counted as timed_out.
func Example() {
	to, err := timeout.New("inventory-api", timeout.Config{Timeout: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	err = to.Do(context.Background(), func(ctx context.Context) error {
		<-ctx.Done() // a dependency that does not answer
		return ctx.Err()
	})
	fmt.Println(errors.Is(err, timeout.ErrTimedOut), errors.Is(err, context.DeadlineExceeded))
	fmt.Println(err)

	n, err := timeout.Call(context.Background(), to, func(ctx context.Context) (int, error) { return 42, nil })
	fmt.Println(n, err)
	sn := to.Snapshot()
	fmt.Println("successful:", sn.Calls[catalog.TimeoutSuccessful], "timed out:", sn.Calls[catalog.TimeoutTimedOut])
	// Output:
	// true true
	// timeout "inventory-api": attempt did not finish within 10ms: context deadline exceeded
	// 42 <nil>
	// successful: 1 timed out: 1
}

// Start and Done are the two-step form for compositions that avoid closures.
func ExampleTimeout_Start() {
	to, err := timeout.New("inventory-api", timeout.Config{Timeout: time.Second})
	if err != nil {
		panic(err)
	}
	ctx, attempt := to.Start(context.Background())
	_, hasDeadline := ctx.Deadline()
	err = attempt.Done(nil) // the attempt's result
	fmt.Println(hasDeadline, err)
	// Output: true <nil>
}
