package retry

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Retry-After defaults (RA-06, RA-07).
const (
	DefaultMinRetryAfter    = 500 * time.Millisecond
	DefaultMaxRetryAfter    = 60 * time.Second
	DefaultRetryAfterJitter = 0.2
)

// RetryAfterConfig configures how a Retry-After header on a 429 or 503 response sets the delay.
// Zero fields take their defaults: Min 0.5 s, Max 60 s, Jitter 0.2.
type RetryAfterConfig struct {
	// Disabled ignores Retry-After: the backoff strategy always sets the delay.
	Disabled bool
	// Min and Max clamp the server's value: Retry-After: 0 waits Min, Retry-After: 86400 waits Max.
	Min, Max time.Duration
	// Jitter adds up to this fraction of the clamped value, without leaving [Min, Max].
	Jitter float64
}

func (c RetryAfterConfig) withDefaults() RetryAfterConfig {
	c.Min = cmp.Or(c.Min, DefaultMinRetryAfter)
	c.Max = cmp.Or(c.Max, DefaultMaxRetryAfter)
	c.Jitter = cmp.Or(c.Jitter, DefaultRetryAfterJitter)
	return c
}

func (c RetryAfterConfig) validate() error {
	c = c.withDefaults()
	switch {
	case c.Min < 0:
		return &ConfigError{Field: "RetryAfter.Min", Value: c.Min, Reason: "must not be negative"}
	case c.Max < c.Min:
		return &ConfigError{Field: "RetryAfter.Max", Value: c.Max, Reason: fmt.Sprintf("must be at least Min (%v)", c.Min)}
	case math.IsNaN(c.Jitter) || c.Jitter < 0 || c.Jitter > 1:
		return &ConfigError{Field: "RetryAfter.Jitter", Value: c.Jitter, Reason: "must be in (0, 1]"}
	}
	return nil
}

// Delay turns a parsed Retry-After wait into the delay to use: the wait clamped to [Min, Max],
// plus a uniform jitter of up to Jitter×wait that never leaves the clamp.
func (c RetryAfterConfig) Delay(wait time.Duration, rnd clock.Rand) time.Duration {
	c = c.withDefaults()
	w := min(max(wait, c.Min), c.Max)
	hi := min(float64(w)*(1+c.Jitter), float64(c.Max))
	return w + time.Duration(rnd.Float64()*(hi-float64(w)))
}

// maxSeconds bounds delta-seconds before conversion so that huge values cannot overflow.
const maxSeconds = 1 << 32

// ParseRetryAfter parses a Retry-After header value (RA-03, RA-04): delta-seconds — a
// non-negative decimal number, surrounding spaces allowed ("30", "30.0", " 30") — or an HTTP-date,
// which yields the time from now until then (0 for a date in the past). It reports false for an
// absent or invalid value ("-1", "abc", "1e3"), in which case the caller falls back to its backoff:
// an invalid value never means "retry at once".
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	s := strings.TrimSpace(v)
	if s == "" {
		return 0, false
	}
	if isDecimal(s) {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(secs) || secs < 0 {
			return 0, false
		}
		if secs > maxSeconds {
			secs = maxSeconds
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// isDecimal reports whether s is digits with at most one '.', and at least one digit.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}
