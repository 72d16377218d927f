package retry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func seeded() *rand.Rand { return rand.New(rand.NewPCG(42, 54)) }

// formula computes the documented delay of each strategy from one uniform draw u, independently
// of Backoff.Delay. Values are in nanoseconds.
func formula(s Strategy, n int, prev, u float64) float64 {
	const base, mult, cp, f = float64(100 * time.Millisecond), 2.0, float64(2 * time.Second), 0.5
	e := math.Min(cp, base*math.Pow(mult, float64(n-1)))
	var d float64
	switch s {
	case None:
		return 0
	case Constant:
		d = base
	case Exponential:
		d = e
	case FullJitter:
		d = u * e
	case EqualJitter:
		d = e/2 + u*(e/2)
	case DecorrelatedJitter:
		if prev == 0 {
			prev = base
		}
		d = base + u*(3*prev-base)
	case Randomized:
		d = e*(1-f) + u*(2*f*e)
	}
	return math.Min(cp, d)
}

var testBackoff = Backoff{Base: 100 * time.Millisecond, Multiplier: 2, Cap: 2 * time.Second, Factor: 0.5}

func TestBackoffFirstEightDelaysMatchFormula(t *testing.T) {
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			b := testBackoff
			b.Strategy = s
			draws, oracle := seeded(), seeded()
			var prev, oprev time.Duration
			for n := 1; n <= 8; n++ {
				got := b.Delay(n, prev, draws)
				var u float64
				if s != None && s != Constant && s != Exponential {
					u = oracle.Float64()
				}
				want := time.Duration(formula(s, n, float64(oprev), u))
				assert.InDelta(t, float64(want), float64(got), 1, "retry %d", n)
				prev, oprev = got, want
			}
		})
	}
	// The deterministic strategies, spelled out.
	b := testBackoff
	b.Strategy = Exponential
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, b.Delay(n, 0, nil))
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms, 2000 * ms}, got)
}

func TestBackoffDistribution(t *testing.T) {
	const draws = 100_000
	sec := float64(time.Second)
	// Mean of min(cap, U(lo, hi)) in seconds.
	cappedMean := func(lo, hi, cp float64) float64 {
		if hi <= cp {
			return (lo + hi) / 2
		}
		return ((cp*cp-lo*lo)/2 + cp*(hi-cp)) / (hi - lo)
	}
	cases := []struct {
		strategy Strategy
		n        int
		prev     time.Duration
		lo, hi   float64 // bounds, seconds
		mean     float64 // theory, seconds
	}{
		{FullJitter, 3, 0, 0, 0.4, 0.2},
		{FullJitter, 10, 0, 0, 2, 1}, // e(10) is capped
		{EqualJitter, 3, 0, 0.2, 0.4, 0.3},
		{EqualJitter, 9, 0, 1, 2, 1.5},
		{Randomized, 3, 0, 0.2, 0.6, 0.4},
		// e = cap = 2 s: U(1 s, 3 s) would exceed the cap half of the time.
		{Randomized, 6, 0, 1, 2, cappedMean(1, 3, 2)},
		{DecorrelatedJitter, 2, 400 * time.Millisecond, 0.1, 1.2, 0.65},
		// U(0.1 s, 3 s) would exceed the 2 s cap.
		{DecorrelatedJitter, 5, time.Second, 0.1, 2, cappedMean(0.1, 3, 2)},
		{Exponential, 4, 0, 0.8, 0.8, 0.8},
		{Constant, 4, 0, 0.1, 0.1, 0.1},
		{None, 4, 0, 0, 0, 0},
	}
	for _, c := range cases {
		b := testBackoff
		b.Strategy = c.strategy
		rng := seeded()
		var sum, hi float64
		lo := math.Inf(1)
		for range draws {
			d := float64(b.Delay(c.n, c.prev, rng)) / sec
			sum += d
			lo, hi = math.Min(lo, d), math.Max(hi, d)
		}
		mean := sum / draws
		assert.GreaterOrEqual(t, lo, c.lo-1e-9, "%s n=%d lower bound", c.strategy, c.n)
		assert.LessOrEqual(t, hi, c.hi+1e-9, "%s n=%d upper bound", c.strategy, c.n)
		assert.LessOrEqual(t, hi, 2.0, "%s n=%d: cap exceeded", c.strategy, c.n)
		if c.mean == 0 {
			assert.Zero(t, mean)
			continue
		}
		assert.InEpsilon(t, c.mean, mean, 0.02, "%s n=%d mean", c.strategy, c.n)
	}
}

func TestBackoffDefaultsAndValidation(t *testing.T) {
	d := Backoff{}.withDefaults()
	assert.Equal(t, Backoff{Strategy: FullJitter, Base: 100 * time.Millisecond, Multiplier: 2, Cap: 10 * time.Second, Factor: 0.5}, d)
	// The exponent cannot overflow into a negative or infinite delay.
	assert.Equal(t, 10*time.Second, Backoff{Strategy: Exponential}.Delay(10_000, 0, nil))

	bad := []struct {
		b     Backoff
		field string
		value any
	}{
		{Backoff{Strategy: "linear"}, "Backoff.Strategy", "linear"},
		{Backoff{Base: -time.Second}, "Backoff.Base", -time.Second},
		{Backoff{Multiplier: 0.5}, "Backoff.Multiplier", 0.5},
		{Backoff{Base: time.Second, Cap: 500 * time.Millisecond}, "Backoff.Cap", 500 * time.Millisecond},
		{Backoff{Factor: 1.5}, "Backoff.Factor", 1.5},
	}
	for _, c := range bad {
		cfg := Config{}
		cfg.Backoff = c.b
		_, err := New("x", cfg)
		requireConfigError(t, err, "x", c.field, c.value)
	}
	cfg := Config{}
	cfg.Backoff = Backoff{Multiplier: math.NaN()}
	_, err := New("x", cfg)
	ce := requireConfigError(t, err, "x", "Backoff.Multiplier", nil)
	assert.True(t, math.IsNaN(ce.Value.(float64)))
	assert.EqualError(t, err, `retry "x": Backoff.Multiplier = NaN: must be a finite number ≥ 1`)
}

type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

func TestRetryAfterDelayClampAndJitter(t *testing.T) {
	c := RetryAfterConfig{}
	s := time.Second
	assert.Equal(t, 30*s, c.delay(30*s, fixedRand(0)))
	assert.Equal(t, 60*s, c.delay(86400*s, fixedRand(0)), "clamped to the maximum")
	assert.Equal(t, 500*time.Millisecond, c.delay(0, fixedRand(0)), "clamped to the minimum")
	assert.Equal(t, 36*s, c.delay(30*s, fixedRand(1)), "+20% jitter")
	assert.Equal(t, 60*s, c.delay(55*s, fixedRand(1)), "jitter stays inside the clamp")
	assert.Equal(t, 60*s, c.delay(86400*s, fixedRand(0.999)))
	assert.Equal(t, 60*s, c.delay(math.MaxInt64, fixedRand(0.5)), "the longest wait there is")
	assert.Equal(t, 500*time.Millisecond, c.delay(-time.Hour, fixedRand(0)), "a negative wait waits Min")

	rng := seeded()
	for _, w := range []time.Duration{0, 100 * time.Millisecond, 30 * s, 55 * s, 86400 * s} {
		for range 10_000 {
			d := c.delay(w, rng)
			require.GreaterOrEqual(t, d, 500*time.Millisecond)
			require.LessOrEqual(t, d, 60*s)
			require.GreaterOrEqual(t, d, min(max(w, 500*time.Millisecond), 60*s))
		}
	}

	bad := []struct {
		c     RetryAfterConfig
		field string
		value any
	}{
		{RetryAfterConfig{Min: -s}, "RetryAfter.Min", -s},
		{RetryAfterConfig{Min: 10 * s, Max: 5 * s}, "RetryAfter.Max", 5 * s},
		{RetryAfterConfig{Jitter: 2}, "RetryAfter.Jitter", 2.0},
	}
	for _, b := range bad {
		cfg := Config{}
		cfg.RetryAfter = b.c
		_, err := New("x", cfg)
		requireConfigError(t, err, "x", b.field, b.value)
	}
}
