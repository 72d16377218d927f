package retry

import (
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// defaultMaxAttempts is the number of calls, the first included, of a zero Config.MaxAttempts.
const defaultMaxAttempts = 3

// Config configures a [Retry]. The zero Config is the default configuration: 3 attempts,
// full-jitter backoff (100 ms ×2, cap 10 s), server-requested delays honoured within [0.5 s, 60 s] plus up to
// 20% jitter, a budget of 10% with a floor of one retry per second and a 10 s decay, no
// per-attempt timeout and no MaxDuration, the default classifier, the wall clock and
// clock.Global as the jitter source. Every zero field takes its documented default; a negative
// or impossible value makes [New] return a [*catalog.ConfigError] naming the field and its value.
type Config struct {
	// MaxAttempts bounds the calls per logical call, the first included (3, the default, makes
	// at most two retries; 1 turns retrying off). Negative is an error.
	MaxAttempts int
	// AttemptTimeout bounds each attempt: the attempt function receives a context that expires
	// after it. 0 means no per-attempt bound.
	AttemptTimeout time.Duration
	// MaxDuration bounds the whole logical call, attempts and waits included, on top of the
	// context's own deadline. 0 means only the context's deadline.
	MaxDuration time.Duration
	// MinAttemptTime is the least time an attempt needs to be useful: a retry is given up
	// (outcome gave_up) when the time left before the deadline is less than the next delay plus
	// MinAttemptTime. 0 means AttemptTimeout when set, else 10% of the time left.
	MinAttemptTime time.Duration
	// Backoff sets the delays when the server asks for none. Default: full jitter, 100 ms ×2,
	// cap 10 s.
	Backoff Backoff
	// RetryAfter configures how a delay the server asks for ([classify.RetryAfterHint]: HTTP's
	// Retry-After, gRPC's pushback) sets the delay.
	RetryAfter RetryAfterConfig
	// Idempotent says the operation may run more than once safely. It gates retrying timeouts
	// after the request was sent (and HTTP 504s) for attempts whose error does not report its own
	// idempotency ([classify.IdempotentHint]; httpx's errors carry the request's).
	Idempotent bool
	// Classify overrides the error classifier (default [classify.ClassifyError]). It is not
	// consulted for stormwatch's own rejections and the caller's cancellation.
	Classify func(err error, idempotent bool) classify.Verdict
	// RetryIf, when set, decides whether a failed attempt may be retried, given its error and
	// verdict (return v.Retryable to keep the default). It cannot override the rules that never
	// retry: the caller's cancellation, stormwatch's rejections, an error carrying the
	// do-not-retry signal ([classify.DoNotRetryHint]), a business error (classify.Business), exhausted
	// attempts, the deadline and the budget.
	RetryIf func(err error, v classify.Verdict) bool
	// Budget configures the retry budget (on by default).
	Budget BudgetConfig
	// DisableBudget turns the budget off: every retry the other rules allow is permitted.
	DisableBudget bool
	// DisableRetryAfter ignores the delays servers ask for ([classify.RetryAfterHint]): the
	// backoff strategy always sets the delay.
	DisableRetryAfter bool
	// Clock is the time source for deadlines, waits and the budget. Default: the wall clock.
	// Waits use Clock.NewTimer, so a fake clock sees exactly the waits. The per-attempt timeout
	// and MaxDuration are also enforced through context deadlines, which use the wall clock.
	Clock clock.Clock
	// Rand draws the jitter. Default: clock.Global, math/rand/v2's global source. It must be safe
	// for concurrent use (see clock.Locked).
	Rand clock.Rand
	// Events receives a [events.Retry] for every retry decision, when someone listens.
	Events *events.Hub
}

// named fills in the primitive and the retry's name of a configuration error.
func named(name string, err error) error {
	if ce, ok := err.(*catalog.ConfigError); ok {
		ce.Primitive, ce.Name = string(catalog.Retry), name
	}
	return err
}

func (c Config) validate() error {
	if c.MaxAttempts < 0 {
		return &catalog.ConfigError{Field: "MaxAttempts", Value: c.MaxAttempts, Reason: "must not be negative (0 means the default, 3; 1 turns retrying off)"}
	}
	if c.AttemptTimeout < 0 {
		return &catalog.ConfigError{Field: "AttemptTimeout", Value: c.AttemptTimeout, Reason: "must not be negative"}
	}
	if c.MaxDuration < 0 {
		return &catalog.ConfigError{Field: "MaxDuration", Value: c.MaxDuration, Reason: "must not be negative"}
	}
	if c.MinAttemptTime < 0 {
		return &catalog.ConfigError{Field: "MinAttemptTime", Value: c.MinAttemptTime, Reason: "must not be negative"}
	}
	if err := c.Backoff.validate(); err != nil {
		return err
	}
	if err := c.RetryAfter.validate(); err != nil {
		return err
	}
	if !c.DisableBudget {
		if err := c.Budget.validate(); err != nil {
			return err
		}
	}
	return nil
}
