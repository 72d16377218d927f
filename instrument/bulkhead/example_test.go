package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
)

// A bulkhead caps the concurrent calls to one dependency; callers beyond the cap wait up to
// MaxWait, then get ErrFull — usually answered by a fallback, never retried.
func Example() {
	b, err := bulkhead.New("payments-api", bulkhead.Config{MaxConcurrent: 1, MaxWait: 0})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	err = b.Do(ctx, func(ctx context.Context) error {
		// The only permit is taken: a concurrent call is rejected at once.
		_, err := bulkhead.Call(ctx, b, func(context.Context) (string, error) { return "charged", nil })
		fmt.Println("inner call full:", errors.Is(err, bulkhead.ErrFull))
		return nil
	})
	fmt.Println("outer call:", err)
	st := b.Snapshot()
	fmt.Println("permitted:", st.Calls[catalog.AdmissionPermitted], "rejected:", st.Calls[catalog.AdmissionRejected], "in flight:", st.InFlight)
	// Output:
	// inner call full: true
	// outer call: <nil>
	// permitted: 1 rejected: 1 in flight: 0
}

// Acquire is the two-step form, for code that cannot be wrapped in a closure.
func ExampleBulkhead_Acquire() {
	b, err := bulkhead.New("db", bulkhead.Config{MaxConcurrent: 10, MaxWait: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	release, err := b.Acquire(context.Background())
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	defer release.Done()
	fmt.Println("in flight:", b.Snapshot().InFlight)
	// Output: in flight: 1
}
