package retrysignal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/internal/retrysignal"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

type otherKey struct{}

func TestWithCarriesOneFlagPerRequest(t *testing.T) {
	parent := context.WithValue(context.Background(), otherKey{}, "kept")
	ctx, sig := retrysignal.With(parent)
	require.NotNil(t, sig)
	assert.Same(t, sig, retrysignal.From(ctx))
	assert.Equal(t, "kept", ctx.Value(otherKey{}), "the parent's values pass through")
	assert.False(t, sig.Raised())
	assert.False(t, retrysignal.Raised(ctx))

	// Contexts derived from the request's, as clients make them, carry the same flag.
	derived, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	require.True(t, retrysignal.Mark(derived))
	assert.True(t, sig.Raised())
	assert.True(t, retrysignal.Raised(ctx))
	assert.Nil(t, retrysignal.From(parent), "the parent carries no flag")

	// A second server layer for the same request keeps the flag: one request, one flag.
	again, sig2 := retrysignal.With(derived)
	assert.Same(t, sig, sig2)
	assert.Equal(t, derived, again, "no new context")
}

func TestWithoutAFlag(t *testing.T) {
	var nilCtx context.Context
	for name, ctx := range map[string]context.Context{"background": context.Background(), "nil": nilCtx} {
		assert.Nil(t, retrysignal.From(ctx), name)
		assert.False(t, retrysignal.Mark(ctx), name)
		assert.False(t, retrysignal.Raised(ctx), name)
		assert.False(t, retrysignal.Note(ctx, errors.New("x")), name)
	}
}

// A handler may fan its downstream calls out: marking and reading concurrently is safe (run
// with -race).
func TestConcurrentMarks(t *testing.T) {
	ctx, sig := retrysignal.With(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = retrysignal.Raised(ctx)
			retrysignal.Mark(ctx)
		}()
	}
	wg.Wait()
	assert.True(t, sig.Raised())
}

// retryErrors returns the errors of retries (3 attempts at most, on a still clock) by what ended
// the call, each checked to be what its name says.
func retryErrors(t *testing.T) map[string]error {
	t.Helper()
	newRetry := func(budget bool, edit func(*retry.Config)) *retry.Retry {
		cfg := retry.Config{MaxAttempts: 3, Clock: clock.NewFake(time.Now())}
		cfg.Backoff = retry.Backoff{Strategy: retry.None}
		cfg.DisableBudget = !budget
		if edit != nil {
			edit(&cfg)
		}
		r, err := retry.New("x", cfg)
		require.NoError(t, err)
		return r
	}
	fails := func(context.Context) error { return errors.New("down") }
	errs := map[string]error{}

	errs["gave up after 3 attempts"] = newRetry(false, nil).Do(context.Background(), fails)
	// The next delay leaves no useful time before MaxDuration: the retry gives up after one attempt.
	errs["gave up after 1 attempt"] = newRetry(false, func(c *retry.Config) {
		c.MaxDuration = time.Second
		c.Backoff = retry.Backoff{Strategy: retry.Constant, Base: time.Second}
	}).Do(context.Background(), fails)
	errs["one attempt, not retryable"] = newRetry(false, nil).Do(context.Background(), func(context.Context) error {
		return classify.Business(errors.New("insufficient funds"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	errs["aborted by the caller"] = newRetry(false, nil).Do(ctx, func(context.Context) error {
		cancel()
		return errors.New("down")
	})
	r := newRetry(true, nil)
	for i := 0; i < 10 && errs["budget exhausted"] == nil; i++ { // the floor's retries run out on a still clock
		var re *retry.Error
		if err := r.Do(context.Background(), fails); errors.As(err, &re) && re.Outcome() == catalog.OutcomeBudgetExhausted {
			errs["budget exhausted"] = err
		}
	}
	require.Error(t, errs["budget exhausted"], "the budget refused a retry")

	for name, want := range map[string]struct {
		outcome  catalog.Outcome
		attempts int
	}{
		"gave up after 3 attempts": {catalog.OutcomeGaveUp, 3},
		"gave up after 1 attempt":  {catalog.OutcomeGaveUp, 1},
		"aborted by the caller":    {catalog.OutcomeAborted, 1},
	} {
		var re *retry.Error
		require.ErrorAs(t, errs[name], &re, name)
		require.Equal(t, want.outcome, re.Outcome(), name)
		require.Len(t, re.Attempts(), want.attempts, name)
	}
	var re *retry.Error
	require.False(t, errors.As(errs["one attempt, not retryable"], &re), "returned unchanged")
	return errs
}

func TestExhaustedAndNote(t *testing.T) {
	errs := retryErrors(t)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not a retry error", errors.New("down"), false},
		{"gave up after 3 attempts", errs["gave up after 3 attempts"], true},
		{"wrapped", fmt.Errorf("charging: %w", errs["gave up after 3 attempts"]), true},
		{"joined", errors.Join(errors.New("other"), errs["gave up after 3 attempts"]), true},
		{"budget exhausted", errs["budget exhausted"], true},
		{"gave up after 1 attempt", errs["gave up after 1 attempt"], false},
		{"one attempt, not retryable", errs["one attempt, not retryable"], false},
		{"aborted by the caller", errs["aborted by the caller"], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, retrysignal.Exhausted(tt.err))
			ctx, sig := retrysignal.With(context.Background())
			assert.Equal(t, tt.want, retrysignal.Note(ctx, tt.err))
			assert.Equal(t, tt.want, sig.Raised())
		})
	}
}
