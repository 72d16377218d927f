package retrylog_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

// A retry log on stdout for every retry of a registry. (The time attribute is dropped to keep
// the output stable.)
func Example() {
	reg, _ := instrument.NewRegistry()
	h := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	l, _ := retrylog.New(h)
	defer l.Attach(reg.Events())()

	cfg := retry.DefaultConfig()
	cfg.MaxAttempts = 2
	cfg.Backoff = retry.Backoff{Strategy: retry.Constant, Base: time.Millisecond}
	r, _ := reg.Retry("payments-api", cfg)

	ctx := retrylog.WithCorrelationID(context.Background(), "req-42")
	calls := 0
	_ = r.Do(ctx, func(context.Context) error {
		calls++
		if calls == 1 {
			return errors.New("connection dropped")
		}
		return nil
	})
	// Output:
	// {"level":"WARN","msg":"retry","event":"retry","name":"payments-api","correlation_id":"req-42","endpoint":"","attempt":1,"max_attempts":2,"elapsed_ms":0,"delay_ms":1,"delay_source":"backoff","error_class":"error","outcome":"retrying"}
	// {"level":"INFO","msg":"retry","event":"retry","name":"payments-api","correlation_id":"req-42","endpoint":"","attempt":2,"max_attempts":2,"elapsed_ms":1,"delay_ms":0,"delay_source":"","error_class":"","outcome":"succeeded"}
}
