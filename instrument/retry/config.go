package retry

import (
	"fmt"
	"time"

	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// DefaultMaxAttempts is the number of calls, the first included, of [DefaultConfig] (RT-09).
const DefaultMaxAttempts = 3

// Config configures a [Retry]. Start from [DefaultConfig]: MaxAttempts must be set (a zero
// MaxAttempts is an error); every other zero field takes its documented default.
type Config struct {
	// MaxAttempts bounds the calls per logical call, the first included (3 makes at most two
	// retries). Less than 1 is an error.
	MaxAttempts int
	// AttemptTimeout bounds each attempt: the attempt function receives a context that expires
	// after it. 0 means no per-attempt bound.
	AttemptTimeout time.Duration
	// MaxDuration bounds the whole logical call, attempts and waits included, on top of the
	// context's own deadline. 0 means only the context's deadline.
	MaxDuration time.Duration
	// MinAttemptTime is the least time an attempt needs to be useful: a retry is given up
	// (outcome gave_up) when the time left before the deadline is less than the next delay plus
	// MinAttemptTime (RT-07). 0 means AttemptTimeout when set, else 10% of the time left.
	MinAttemptTime time.Duration
	// Backoff sets the delays when no Retry-After applies. Default: full jitter, 100 ms ×2, cap 10 s.
	Backoff Backoff
	// RetryAfter configures how Retry-After headers of 429 and 503 responses set the delay.
	RetryAfter RetryAfterConfig
	// Idempotent says the operation may run more than once safely. It gates retrying timeouts
	// after the request was sent and 504s for calls that do not report their own idempotency
	// (an [HTTPError] carries the request's).
	Idempotent bool
	// Classify overrides the error classifier (default [classify.ClassifyError]). It is not
	// consulted for stormwatch's own rejections and the caller's cancellation.
	Classify func(err error, idempotent bool) classify.Verdict
	// RetryIf, when set, decides whether a failed attempt may be retried, given its error and
	// verdict (return v.Retryable to keep the default). It cannot override the rules that never
	// retry: the caller's cancellation, stormwatch's rejections, a response carrying the
	// do-not-retry signal (DoNotRetryHeader), exhausted attempts, the deadline and the budget.
	RetryIf func(err error, v classify.Verdict) bool
	// Budget configures the retry budget (on by default).
	Budget BudgetConfig
	// Clock is the time source for deadlines, waits and the budget. Default: the wall clock.
	// Waits use Clock.NewTimer, so a fake clock sees exactly the waits. The per-attempt timeout
	// and MaxDuration are also enforced through context deadlines, which use the wall clock.
	Clock clock.Clock
	// Rand draws the jitter. Default: math/rand/v2's global source. Must be safe for concurrent
	// use when the Retry is (see [LockedRand]).
	Rand Rand
	// Events receives a [events.Retry] for every retry decision, when someone listens.
	Events *events.Hub
}

// DefaultConfig returns the default configuration: 3 attempts, full-jitter backoff (100 ms ×2,
// cap 10 s), Retry-After honoured within [0.5 s, 60 s], a budget of 10% with a floor of one retry
// per second and a 10 s decay, no per-attempt timeout and no MaxDuration.
func DefaultConfig() Config {
	return Config{MaxAttempts: DefaultMaxAttempts}
}

func (c Config) validate() error {
	if c.MaxAttempts < 1 {
		return fmt.Errorf("MaxAttempts = %d: must be at least 1", c.MaxAttempts)
	}
	if c.AttemptTimeout < 0 {
		return fmt.Errorf("AttemptTimeout = %v: must not be negative", c.AttemptTimeout)
	}
	if c.MaxDuration < 0 {
		return fmt.Errorf("MaxDuration = %v: must not be negative", c.MaxDuration)
	}
	if c.MinAttemptTime < 0 {
		return fmt.Errorf("MinAttemptTime = %v: must not be negative", c.MinAttemptTime)
	}
	if err := c.Backoff.validate(); err != nil {
		return err
	}
	if err := c.RetryAfter.validate(); err != nil {
		return err
	}
	if !c.Budget.Disabled {
		if err := c.Budget.validate(); err != nil {
			return err
		}
	}
	return nil
}
