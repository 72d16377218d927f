package retry

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Strategy names a backoff strategy.
type Strategy string

// The backoff strategies. n is the retry number (n ≥ 1: the first retry is n = 1) and
// e(n) = min(Cap, Base·Multiplier^(n−1)). U(a, b) is a uniform draw from the Rand.
const (
	// None waits 0.
	None Strategy = "none"
	// Constant waits Base.
	Constant Strategy = "constant"
	// Exponential waits e(n).
	Exponential Strategy = "exponential"
	// FullJitter waits U(0, e(n)). The default: the widest spread.
	FullJitter Strategy = "full_jitter"
	// EqualJitter waits e(n)/2 + U(0, e(n)/2): at least half of e(n).
	EqualJitter Strategy = "equal_jitter"
	// DecorrelatedJitter waits d(n) = min(Cap, U(Base, 3·d(n−1))) with d(0) = Base.
	DecorrelatedJitter Strategy = "decorrelated_jitter"
	// Randomized waits U(e(n)·(1−Factor), e(n)·(1+Factor)).
	Randomized Strategy = "randomized"
)

// strategies lists every strategy.
var strategies = []Strategy{None, Constant, Exponential, FullJitter, EqualJitter, DecorrelatedJitter, Randomized}

// Defaults of a zero Backoff.
const (
	defaultBase       = 100 * time.Millisecond
	defaultMultiplier = 2.0
	defaultCap        = 10 * time.Second
	defaultFactor     = 0.5
)

// Backoff configures how long to wait before a retry when the server asks for no delay.
// Zero fields take their defaults: strategy full_jitter, base 100 ms, multiplier 2, cap 10 s,
// factor 0.5.
//
// Every strategy applies the cap last — after the jitter — so the cap is a true ceiling; the retry
// then clamps the delay to the time remaining before its deadline.
type Backoff struct {
	Strategy   Strategy
	Base       time.Duration // first delay (constant: every delay)
	Multiplier float64       // growth per retry, ≥ 1
	Cap        time.Duration // ceiling of every delay, ≥ Base
	Factor     float64       // randomized only: spread around e(n), in (0, 1]
}

func (b Backoff) withDefaults() Backoff {
	b.Strategy = cmp.Or(b.Strategy, FullJitter)
	b.Base = cmp.Or(b.Base, defaultBase)
	b.Multiplier = cmp.Or(b.Multiplier, defaultMultiplier)
	b.Cap = cmp.Or(b.Cap, defaultCap)
	b.Factor = cmp.Or(b.Factor, defaultFactor)
	return b
}

func (b Backoff) validate() error {
	b = b.withDefaults()
	known := false
	for _, s := range strategies {
		known = known || s == b.Strategy
	}
	switch {
	case !known:
		return &catalog.ConfigError{Field: "Backoff.Strategy", Value: string(b.Strategy), Reason: fmt.Sprintf("unknown (want one of %v)", strategies)}
	case b.Base < 0:
		return &catalog.ConfigError{Field: "Backoff.Base", Value: b.Base, Reason: "must not be negative"}
	case math.IsNaN(b.Multiplier) || b.Multiplier < 1 || math.IsInf(b.Multiplier, 0):
		return &catalog.ConfigError{Field: "Backoff.Multiplier", Value: b.Multiplier, Reason: "must be a finite number ≥ 1"}
	case b.Cap < b.Base:
		return &catalog.ConfigError{Field: "Backoff.Cap", Value: b.Cap, Reason: fmt.Sprintf("must be at least Base (%v)", b.Base)}
	case math.IsNaN(b.Factor) || b.Factor < 0 || b.Factor > 1:
		return &catalog.ConfigError{Field: "Backoff.Factor", Value: b.Factor, Reason: "must be in (0, 1]"}
	}
	return nil
}

// exp returns e(n) = min(Cap, Base·Multiplier^(n−1)) in nanoseconds, without jitter.
func (b Backoff) exp(n int) float64 {
	c := float64(b.Cap)
	e := float64(b.Base) * math.Pow(b.Multiplier, float64(n-1))
	if e > c || math.IsInf(e, 0) || math.IsNaN(e) {
		return c
	}
	return e
}

// Delay returns the delay before retry n (n ≥ 1) drawn from rnd. prev is the delay this strategy
// returned before the previous retry of the same call (0 before the first retry); only
// decorrelated_jitter uses it. Zero fields of b take their defaults.
func (b Backoff) Delay(n int, prev time.Duration, rnd clock.Rand) time.Duration {
	b = b.withDefaults()
	if n < 1 {
		n = 1
	}
	c := float64(b.Cap)
	var d float64
	switch b.Strategy {
	case None:
		return 0
	case Constant:
		d = float64(b.Base)
	case Exponential:
		d = b.exp(n)
	case FullJitter:
		d = rnd.Float64() * b.exp(n)
	case EqualJitter:
		e := b.exp(n)
		d = e/2 + rnd.Float64()*(e/2)
	case DecorrelatedJitter:
		p := float64(prev)
		if p <= 0 {
			p = float64(b.Base)
		}
		lo, hi := float64(b.Base), 3*p
		d = lo + rnd.Float64()*(hi-lo)
	case Randomized:
		e := b.exp(n)
		lo, hi := e*(1-b.Factor), e*(1+b.Factor)
		d = lo + rnd.Float64()*(hi-lo)
	default:
		d = rnd.Float64() * b.exp(n)
	}
	if d > c { // the cap is applied last, after the jitter
		d = c
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d)
}
