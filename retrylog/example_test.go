package retrylog_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

// instantClock's timers fire at once and move its time forward by their duration, so that the
// example runs instantly and prints stable numbers. (Not safe for concurrent use.)
type instantClock struct{ now time.Time }

func (c *instantClock) Now() time.Time { return c.now }

func (c *instantClock) NewTimer(d time.Duration) clock.Timer {
	c.now = c.now.Add(d)
	return clock.Real{}.NewTimer(0)
}

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

	cfg := retry.Config{}
	cfg.MaxAttempts = 2
	cfg.Backoff = retry.Backoff{Strategy: retry.Constant, Base: 250 * time.Millisecond}
	cfg.Clock = &instantClock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
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
	// {"level":"WARN","msg":"retry","event":"retry","name":"payments-api","correlation_id":"req-42","endpoint":"","attempt":1,"max_attempts":2,"elapsed_ms":0,"delay_ms":250,"delay_source":"backoff","error_class":"error","outcome":"retrying"}
	// {"level":"INFO","msg":"retry","event":"retry","name":"payments-api","correlation_id":"req-42","endpoint":"","attempt":2,"max_attempts":2,"elapsed_ms":250,"delay_ms":0,"outcome":"succeeded"}
}
