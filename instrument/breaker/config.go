package breaker

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// WindowKind selects how a breaker counts outcomes in the closed state. Its values are the
// configuration file's names; the empty WindowKind is [CountBased].
type WindowKind string

// The window kinds.
const (
	// CountBased keeps the outcomes of the last WindowSize calls (default 100) and trips on the
	// failure or slow-call rate once it holds at least MinCalls outcomes.
	CountBased WindowKind = "count_based"
	// ConsecutiveFailures trips after WindowSize failures in a row (default 5); any success
	// resets the run. With slow-call detection on, WindowSize slow calls in a row trip it too.
	// Rates, minimum calls and rate thresholds do not apply.
	ConsecutiveFailures WindowKind = "consecutive_failures"
	// TimeBased keeps the outcomes of the last WindowDuration (default 60 s) in buckets of
	// BucketDuration (default 1 s) and trips like CountBased.
	TimeBased WindowKind = "time_based"
)

// The defaults of zero Config fields, as documented on each field.
const (
	defaultCountWindowSize       = 100
	defaultConsecutiveFailures   = 5
	defaultWindowDuration        = 60 * time.Second
	defaultBucketDuration        = time.Second
	defaultMinCalls              = 20
	defaultFailureRateThreshold  = 0.5
	defaultSlowCallRateThreshold = 0.8
	defaultHalfOpenCalls         = 3
	defaultOpenDuration          = 30 * time.Second
	defaultOpenJitter            = 0.2
	defaultMaxOpenDurationFactor = 8 // MaxOpenDuration = 8×OpenDuration when growth is on
)

// Limits on configuration values, to keep a breaker's memory bounded; documented on the fields.
const (
	maxWindowSize    = 1 << 20
	maxBuckets       = 3600
	maxHalfOpenCalls = 10000
)

// Config configures a [Breaker]. The zero value is a valid configuration: a count-based window
// of the last 100 calls, at least 20 calls before any evaluation, tripping at a failure rate of
// 0.5 (slow-call detection off, slow-call rate threshold 0.8 once it is turned on), open for
// 30 s ±20% jitter, 3 half-open probes, call-duration histogram on, the wall clock and
// clock.Global as the jitter source.
//
// Zero fields take their defaults. A field that does not apply to the chosen window (for
// example MinCalls with ConsecutiveFailures) must stay zero; a set but unusable or out-of-range
// field makes [New] and [Breaker.Reconfigure] return a [*catalog.ConfigError] naming it and its value.
type Config struct {
	// Window selects the counting scheme (default CountBased).
	Window WindowKind
	// WindowSize is the number of calls a CountBased window holds (default 100), or the number
	// of consecutive failures that trips a ConsecutiveFailures window (default 5); at most
	// 1048576 (2^20). Not used by TimeBased.
	WindowSize int
	// WindowDuration is how much history a TimeBased window holds (default 60 s); it must be a
	// multiple of BucketDuration, of at most 3600 buckets. TimeBased only.
	WindowDuration time.Duration
	// BucketDuration is the granularity of a TimeBased window (default 1 s). TimeBased only.
	BucketDuration time.Duration
	// MinCalls is the number of outcomes a CountBased or TimeBased window must hold before
	// the breaker evaluates its rates (default 20, or WindowSize when that is smaller and
	// MinCalls is unset). Below it the exported rates are NaN.
	MinCalls int
	// FailureRateThreshold trips the breaker when the window's failure rate reaches it
	// (0 < t ≤ 1; default 0.5). Not used by ConsecutiveFailures.
	FailureRateThreshold float64
	// SlowCallDuration turns slow-call detection on: a call taking longer is slow. Slow
	// successes still return their result; they count as slow for the breaker. 0 = off.
	SlowCallDuration time.Duration
	// SlowCallRateThreshold trips the breaker when the window's slow-call rate reaches it
	// (0 < t ≤ 1; default 0.8). It applies only when SlowCallDuration is set. Not used by
	// ConsecutiveFailures.
	SlowCallRateThreshold float64
	// HalfOpenCalls is the number of probes admitted in half-open (default 3, at most 10000).
	// The breaker closes when the probes' failure rate (and slow rate) stay below the
	// thresholds and reopens as soon as they reach them; with ConsecutiveFailures any failed
	// (or slow) probe reopens it.
	HalfOpenCalls int
	// HalfOpenMaxDuration reopens a half-open breaker whose probes have not concluded within
	// it, at that instant, whether or not a call arrives; the new open period counts from it.
	// Probes that conclude afterwards are counted but decide nothing. 0 = no limit.
	HalfOpenMaxDuration time.Duration
	// OpenDuration is the base time a tripped breaker stays open (default 30 s).
	OpenDuration time.Duration
	// OpenJitter spreads each open period uniformly over OpenDuration×[1−j, 1+j), drawn afresh
	// at each trip (0 < j < 1; default 0.2). Set DisableJitter to turn it off.
	OpenJitter float64
	// DisableJitter turns open-duration jitter off.
	DisableJitter bool
	// OpenDurationGrowth multiplies the open duration for each consecutive re-trip from
	// half-open (≥ 1; 0 or 1 = no growth), up to MaxOpenDuration. Jitter is applied after the
	// cap. Closing the breaker resets the growth.
	OpenDurationGrowth float64
	// MaxOpenDuration caps the grown open duration (default 8×OpenDuration when growth is on).
	// Only with OpenDurationGrowth > 1.
	MaxOpenDuration time.Duration
	// Classify decides whether a call's non-nil error is a failure (catalog.CallFailed), a
	// success (catalog.CallSuccessful) or ignored (catalog.CallIgnored); default
	// [DefaultClassify]. A nil error is always a success, and the call's duration alone decides
	// whether it was slow (a slow kind returned counts as its plain kind). Whatever Classify
	// says, a business error (classify.Business), the caller's cancellation (an error matching
	// context.Canceled) and stormwatch's own rejections are ignored: they say nothing about the
	// dependency. Ignored calls are counted in calls_total{kind="ignored"} and nowhere else.
	Classify func(err error) catalog.CallKind
	// DisableDurationHistogram turns the call duration histogram off. With it off and slow-call
	// detection off, a call through a closed breaker with a count-based or consecutive window
	// never reads the clock.
	DisableDurationHistogram bool
	// Clock is the time source (default the wall clock). Reconfigure cannot change it.
	Clock clock.Clock
	// Rand is the jitter source (default clock.Global, math/rand/v2's global source). It must
	// be safe for concurrent use (see clock.Locked).
	Rand clock.Rand
	// Events receives transitions, rejections and, when a listener is registered, call
	// outcomes. nil = no events. A registry sets its own hub.
	Events *events.Hub
}

// settings is a validated Config with defaults applied, in the form the hot path reads.
type settings struct {
	cfg Config // defaults applied; what Breaker.Config returns

	window   WindowKind
	size     int   // count window length or consecutive-failure run
	bucket   int64 // time window bucket, ns
	buckets  int   // time window bucket count
	minCalls int64
	failThr  float64
	slowThr  float64
	slowNs   int64 // 0 = slow-call detection off

	// The thresholds Snapshot exports, comparable with the window's rates: failThr and
	// slowThr for the rate windows, 1 for a consecutive window (whose rates are its runs
	// relative to WindowSize).
	expFailThr, expSlowThr float64

	halfOpen    int32
	halfOpenMax int64 // ns; 0 = none
	failNeeded  int32 // failed probes that reopen a half-open breaker
	slowNeeded  int32 // slow probes that reopen it (slowNs > 0)

	openBase int64 // ns
	jitter   float64
	growth   float64
	maxOpen  int64 // ns

	classify func(error) catalog.CallKind
	hist     bool
	timed    bool // every permitted call measures its duration
	rnd      clock.Rand
	hub      *events.Hub
	outcomes *events.Listeners[events.CallOutcome] // nil when hub is nil
}

// sameShape reports whether a window built for s can keep serving t.
func (s *settings) sameShape(t *settings) bool {
	return s.window == t.window && s.size == t.size && s.bucket == t.bucket && s.buckets == t.buckets
}

func (s *settings) newWindow() window {
	switch s.window {
	case ConsecutiveFailures:
		return newConsecutiveWindow(s.size)
	case TimeBased:
		return newTimeWindow(s.bucket, s.buckets)
	default:
		return newCountWindow(s.size)
	}
}

// newSettings validates cfg for the breaker called name and applies defaults.
func newSettings(name string, cfg Config) (*settings, error) {
	bad := func(field string, value any, reason string) error {
		return &catalog.ConfigError{Primitive: string(catalog.CircuitBreaker), Name: name, Field: field, Value: value, Reason: reason}
	}
	if name == "" {
		return nil, bad("name", "", "must not be empty")
	}
	s := &settings{}
	c := cfg
	c.Window = cmp.Or(c.Window, CountBased)
	switch c.Window {
	case CountBased, ConsecutiveFailures, TimeBased:
	default:
		return nil, bad("Window", string(c.Window), fmt.Sprintf("unknown window kind (want %s, %s or %s)", CountBased, ConsecutiveFailures, TimeBased))
	}
	s.window = c.Window

	if c.WindowSize < 0 || c.WindowSize > maxWindowSize {
		return nil, bad("WindowSize", c.WindowSize, fmt.Sprintf("must be between 1 and %d", maxWindowSize))
	}
	if c.WindowDuration < 0 {
		return nil, bad("WindowDuration", c.WindowDuration, "must not be negative")
	}
	if c.BucketDuration < 0 {
		return nil, bad("BucketDuration", c.BucketDuration, "must not be negative")
	}
	if c.MinCalls < 0 {
		return nil, bad("MinCalls", c.MinCalls, "must not be negative")
	}
	if c.FailureRateThreshold < 0 || c.FailureRateThreshold > 1 || math.IsNaN(c.FailureRateThreshold) {
		return nil, bad("FailureRateThreshold", c.FailureRateThreshold, "must be in (0, 1]")
	}
	if c.SlowCallRateThreshold < 0 || c.SlowCallRateThreshold > 1 || math.IsNaN(c.SlowCallRateThreshold) {
		return nil, bad("SlowCallRateThreshold", c.SlowCallRateThreshold, "must be in (0, 1]")
	}
	if c.SlowCallDuration < 0 {
		return nil, bad("SlowCallDuration", c.SlowCallDuration, "must not be negative (0 turns slow-call detection off)")
	}

	if c.HalfOpenCalls < 0 || c.HalfOpenCalls > maxHalfOpenCalls {
		return nil, bad("HalfOpenCalls", c.HalfOpenCalls, fmt.Sprintf("must be between 1 and %d", maxHalfOpenCalls))
	}
	if c.HalfOpenCalls == 0 {
		c.HalfOpenCalls = defaultHalfOpenCalls
	}
	s.halfOpen = int32(c.HalfOpenCalls)
	if c.HalfOpenMaxDuration < 0 {
		return nil, bad("HalfOpenMaxDuration", c.HalfOpenMaxDuration, "must not be negative (0 = no limit)")
	}
	s.halfOpenMax = int64(c.HalfOpenMaxDuration)

	// What depends on the window kind.
	switch c.Window {
	case CountBased:
		if c.WindowDuration != 0 {
			return nil, bad("WindowDuration", c.WindowDuration, "only used by a TimeBased window")
		}
		if c.BucketDuration != 0 {
			return nil, bad("BucketDuration", c.BucketDuration, "only used by a TimeBased window")
		}
		if c.WindowSize == 0 {
			c.WindowSize = defaultCountWindowSize
		}
		if c.MinCalls == 0 {
			c.MinCalls = min(defaultMinCalls, c.WindowSize)
		}
		if c.MinCalls > c.WindowSize {
			return nil, bad("MinCalls", c.MinCalls, fmt.Sprintf("exceeds WindowSize %d: the breaker could never trip", c.WindowSize))
		}
		s.size = c.WindowSize
		s.rateRules(&c)
	case ConsecutiveFailures:
		if c.WindowDuration != 0 {
			return nil, bad("WindowDuration", c.WindowDuration, "only used by a TimeBased window")
		}
		if c.BucketDuration != 0 {
			return nil, bad("BucketDuration", c.BucketDuration, "only used by a TimeBased window")
		}
		if c.MinCalls != 0 {
			return nil, bad("MinCalls", c.MinCalls, "not used by a ConsecutiveFailures window")
		}
		if c.FailureRateThreshold != 0 {
			return nil, bad("FailureRateThreshold", c.FailureRateThreshold, "not used by a ConsecutiveFailures window")
		}
		if c.SlowCallRateThreshold != 0 {
			return nil, bad("SlowCallRateThreshold", c.SlowCallRateThreshold, "not used by a ConsecutiveFailures window")
		}
		if c.WindowSize == 0 {
			c.WindowSize = defaultConsecutiveFailures
		}
		s.size = c.WindowSize
		s.expFailThr, s.expSlowThr = 1, 1
		s.failNeeded, s.slowNeeded = 1, 1 // any failed (or slow) probe reopens
	case TimeBased:
		if c.WindowSize != 0 {
			return nil, bad("WindowSize", c.WindowSize, "not used by a TimeBased window (set WindowDuration)")
		}
		if c.BucketDuration == 0 {
			c.BucketDuration = defaultBucketDuration
		}
		if c.WindowDuration == 0 {
			c.WindowDuration = defaultWindowDuration
		}
		if c.WindowDuration%c.BucketDuration != 0 {
			return nil, bad("WindowDuration", c.WindowDuration, fmt.Sprintf("must be a multiple of BucketDuration %v", c.BucketDuration))
		}
		n := int64(c.WindowDuration / c.BucketDuration)
		if n > maxBuckets {
			return nil, bad("WindowDuration", c.WindowDuration, fmt.Sprintf("makes %d buckets of %v; at most %d", n, c.BucketDuration, maxBuckets))
		}
		if c.MinCalls == 0 {
			c.MinCalls = defaultMinCalls
		}
		s.bucket = int64(c.BucketDuration)
		s.buckets = int(n)
		s.rateRules(&c)
	}
	s.slowNs = int64(c.SlowCallDuration)

	if c.OpenDuration < 0 {
		return nil, bad("OpenDuration", c.OpenDuration, "must be positive")
	}
	if c.OpenDuration == 0 {
		c.OpenDuration = defaultOpenDuration
	}
	s.openBase = int64(c.OpenDuration)
	if c.OpenJitter < 0 || c.OpenJitter >= 1 || math.IsNaN(c.OpenJitter) {
		return nil, bad("OpenJitter", c.OpenJitter, "must be in (0, 1); set DisableJitter to turn jitter off")
	}
	if c.DisableJitter && c.OpenJitter != 0 {
		return nil, bad("OpenJitter", c.OpenJitter, "contradicts DisableJitter")
	}
	if !c.DisableJitter && c.OpenJitter == 0 {
		c.OpenJitter = defaultOpenJitter
	}
	s.jitter = c.OpenJitter
	if c.OpenDurationGrowth < 0 || (c.OpenDurationGrowth > 0 && c.OpenDurationGrowth < 1) || c.OpenDurationGrowth > 100 || math.IsNaN(c.OpenDurationGrowth) {
		return nil, bad("OpenDurationGrowth", c.OpenDurationGrowth, "must be 0 (off) or between 1 and 100")
	}
	if c.MaxOpenDuration < 0 {
		return nil, bad("MaxOpenDuration", c.MaxOpenDuration, "must not be negative")
	}
	if c.OpenDurationGrowth > 1 {
		if c.MaxOpenDuration == 0 {
			c.MaxOpenDuration = defaultMaxOpenDurationFactor * c.OpenDuration
		}
		if c.MaxOpenDuration < c.OpenDuration {
			return nil, bad("MaxOpenDuration", c.MaxOpenDuration, fmt.Sprintf("is below OpenDuration %v", c.OpenDuration))
		}
		s.growth = c.OpenDurationGrowth
		s.maxOpen = int64(c.MaxOpenDuration)
	} else if c.MaxOpenDuration != 0 {
		return nil, bad("MaxOpenDuration", c.MaxOpenDuration, "only used with OpenDurationGrowth > 1")
	}

	if c.Classify == nil {
		s.classify = DefaultClassify
	} else {
		s.classify = c.Classify
	}
	s.hist = !c.DisableDurationHistogram
	s.timed = s.hist || s.slowNs > 0
	s.rnd = clock.RandOr(c.Rand)
	s.hub = c.Events
	if s.hub != nil {
		s.outcomes = &s.hub.Outcomes
	}
	s.cfg = c
	return s, nil
}

// rateRules applies the threshold defaults of the rate windows (CountBased, TimeBased) to c
// and the rules they share to s.
func (s *settings) rateRules(c *Config) {
	if c.FailureRateThreshold == 0 {
		c.FailureRateThreshold = defaultFailureRateThreshold
	}
	if c.SlowCallRateThreshold == 0 {
		c.SlowCallRateThreshold = defaultSlowCallRateThreshold
	}
	s.minCalls = int64(c.MinCalls)
	s.failThr, s.slowThr = c.FailureRateThreshold, c.SlowCallRateThreshold
	s.expFailThr, s.expSlowThr = s.failThr, s.slowThr
	s.failNeeded = probesNeeded(s.failThr, s.halfOpen)
	s.slowNeeded = probesNeeded(s.slowThr, s.halfOpen)
}

// probesNeeded returns the smallest number of the n probes whose ratio reaches thr.
func probesNeeded(thr float64, n int32) int32 {
	k := int32(math.Ceil(thr*float64(n) - 1e-9))
	return max(k, 1)
}
