package retry

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Defaults of a zero RetryAfterConfig.
const (
	defaultMinRetryAfter    = 500 * time.Millisecond
	defaultMaxRetryAfter    = 60 * time.Second
	defaultRetryAfterJitter = 0.2
)

// RetryAfterConfig configures how a delay the server asked for ([classify.RetryAfterHint]: HTTP's
// Retry-After, gRPC's pushback) sets the delay before the next attempt. Zero fields take their
// defaults: Min 0.5 s, Max 60 s, Jitter 0.2.
type RetryAfterConfig struct {
	// Min and Max clamp the server's value: a wait of 0 waits Min, a wait of a day (or of a
	// 400-digit number of seconds) waits Max.
	Min, Max time.Duration
	// Jitter adds up to this fraction of the clamped value, without leaving [Min, Max].
	Jitter float64
}

func (c RetryAfterConfig) withDefaults() RetryAfterConfig {
	c.Min = cmp.Or(c.Min, defaultMinRetryAfter)
	c.Max = cmp.Or(c.Max, defaultMaxRetryAfter)
	c.Jitter = cmp.Or(c.Jitter, defaultRetryAfterJitter)
	return c
}

func (c RetryAfterConfig) validate() error {
	c = c.withDefaults()
	switch {
	case c.Min < 0:
		return &catalog.ConfigError{Field: "RetryAfter.Min", Value: c.Min, Reason: "must not be negative"}
	case c.Max < c.Min:
		return &catalog.ConfigError{Field: "RetryAfter.Max", Value: c.Max, Reason: fmt.Sprintf("must be at least Min (%v)", c.Min)}
	case math.IsNaN(c.Jitter) || c.Jitter < 0 || c.Jitter > 1:
		return &catalog.ConfigError{Field: "RetryAfter.Jitter", Value: c.Jitter, Reason: "must be in (0, 1]"}
	}
	return nil
}

// delay turns the wait a server asked for into the delay to use: the wait clamped to [Min, Max],
// plus a uniform jitter of up to Jitter×wait that never leaves the clamp.
func (c RetryAfterConfig) delay(wait time.Duration, rnd clock.Rand) time.Duration {
	c = c.withDefaults()
	w := min(max(wait, c.Min), c.Max)
	hi := min(float64(w)*(1+c.Jitter), float64(c.Max))
	return w + time.Duration(rnd.Float64()*(hi-float64(w)))
}
