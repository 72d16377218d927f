package bench

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

// BenchmarkRetryFirstAttemptSuccess measures a logical call that succeeds on its first attempt —
// the hot path — through each library configured alike: at most 3 attempts, exponential backoff
// from 100 ms with jitter, capped at 10 s. stormwatch also deposits into its retry budget and
// counts the call for the collector (scraped in the background while it runs).
func BenchmarkRetryFirstAttemptSuccess(b *testing.B) {
	ctx := context.Background()

	b.Run("stormwatch/Do", func(b *testing.B) {
		r, err := scrapedRegistry(b).Retry("bench", retry.Config{})
		if err != nil {
			b.Fatal(err)
		}
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Do(ctx, fn); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("stormwatch/Call", func(b *testing.B) {
		r, err := scrapedRegistry(b).Retry("bench", retry.Config{})
		if err != nil {
			b.Fatal(err)
		}
		fn := func(context.Context) (int, error) { return 1, nil }
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Call(ctx, r, fn); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("failsafe-go/retrypolicy", func(b *testing.B) {
		p := retrypolicy.NewBuilder[any]().
			WithMaxAttempts(3).
			WithBackoff(100*time.Millisecond, 10*time.Second).
			WithJitterFactor(0.5).
			Build()
		ex := failsafe.With(p)
		fn := func() error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.Run(fn); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("cenkalti-backoff-v5", func(b *testing.B) {
		op := func() (int, error) { return 1, nil }
		b.ReportAllocs()
		for b.Loop() {
			bo := backoff.NewExponentialBackOff()
			bo.InitialInterval, bo.MaxInterval = 100*time.Millisecond, 10*time.Second
			if _, err := backoff.Retry(ctx, op, backoff.WithBackOff(bo), backoff.WithMaxTries(3)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRetryLogLine measures one retry log record written by the JSON handler (to
// io.Discard), rate limit off so every line is written; and a line dropped by the rate limit.
func BenchmarkRetryLogLine(b *testing.B) {
	ev := events.Retry{
		Context:     retrylog.WithCorrelationID(context.Background(), "c1f8a2e4-6b90-4d3e-9a11-7c5de0f3b842"),
		Name:        "orders-api",
		Endpoint:    "POST api.example.com/api/v2/orders",
		Attempt:     3,
		MaxAttempts: 5,
		Elapsed:     3120 * time.Millisecond,
		Delay:       1740 * time.Millisecond,
		DelaySource: catalog.SourceBackoff,
		ErrorClass:  catalog.ClassTimeout,
		Outcome:     catalog.OutcomeRetrying,
		At:          time.Date(2026, 11, 30, 9, 14, 2, 0, time.UTC),
	}
	b.Run("json", func(b *testing.B) {
		l, err := retrylog.New(slog.NewJSONHandler(io.Discard, nil), retrylog.WithRateLimit(0))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			l.Log(ev)
		}
	})
	b.Run("json-with-status", func(b *testing.B) {
		l, err := retrylog.New(slog.NewJSONHandler(io.Discard, nil), retrylog.WithRateLimit(0))
		if err != nil {
			b.Fatal(err)
		}
		e := ev
		e.HTTPStatus, e.ErrorClass, e.DelaySource = 503, catalog.ClassHTTP5xx, catalog.SourceRetryAfter
		b.ReportAllocs()
		for b.Loop() {
			l.Log(e)
		}
	})
	b.Run("rate-limited", func(b *testing.B) {
		l, err := retrylog.New(slog.NewJSONHandler(io.Discard, nil))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			l.Log(ev)
		}
		l.Flush()
	})
}
