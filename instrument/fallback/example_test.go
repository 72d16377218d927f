package fallback_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
)

// A fallback answers failed calls with a degraded value and says so: fromFallback tells the
// caller the prices are cached, not live.
func Example() {
	fb, err := fallback.New("prices", fallback.Config{
		On: []catalog.Cause{catalog.CauseCircuitOpen, catalog.CauseBulkheadFull, catalog.CauseTimeout},
	})
	if err != nil {
		panic(err)
	}
	fetch := func(context.Context) (float64, error) {
		return 0, &bulkhead.FullError{Name: "prices-api", MaxConcurrent: 10}
	}
	cached := func(_ context.Context, cause catalog.Cause, _ error) (float64, error) {
		fmt.Println("falling back because of", cause)
		return 9.99, nil
	}

	price, fromFallback, err := fallback.Call(context.Background(), fb, fetch, cached)
	fmt.Println(price, fromFallback, err)

	// Causes not chosen are returned as they are.
	_, fromFallback, err = fallback.Call(context.Background(), fb,
		func(context.Context) (float64, error) { return 0, errors.New("400 bad request") }, cached)
	fmt.Println(fromFallback, err)
	fmt.Println("bulkhead_full fallbacks:", fb.Snapshot().Calls[catalog.CauseBulkheadFull])
	// Output:
	// falling back because of bulkhead_full
	// 9.99 true <nil>
	// false 400 bad request
	// bulkhead_full fallbacks: 1
}
