package retry

import (
	"cmp"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// Defaults of a zero BudgetConfig.
const (
	defaultBudgetRatio         = 0.1
	defaultBudgetCapacity      = 100
	defaultMinRetriesPerSecond = 1
	defaultBudgetDecay         = 10 * time.Second
)

// maxBudgetCapacity bounds the token store (one timestamp per token).
const maxBudgetCapacity = 1 << 20

// BudgetConfig configures a retry's budget: a token bucket that caps retries at a fraction of
// the traffic. Every first attempt deposits Ratio of a token — with integer accounting, one whole
// token per round(1/Ratio) first attempts, so 100 first attempts at ratio 0.1 fund exactly 10
// retries. A retry takes one token; with none left it may still run under the floor of
// MinRetriesPerSecond, else it is denied (outcome budget_exhausted). Tokens older than
// DecayWindow expire, so savings from a healthy hour cannot fund a storm. A registry shares a
// retry — and so its budget — by name, so the budget is per dependency.
//
// Zero fields take their defaults: Ratio 0.1, Capacity 100, MinRetriesPerSecond 1, DecayWindow
// 10 s. A new budget holds no tokens.
type BudgetConfig struct {
	// Ratio is the fraction of first attempts that may be retried, in (0, 1].
	Ratio float64
	// Capacity is the most tokens the bucket holds (≥ 1).
	Capacity int
	// MinRetriesPerSecond lets this many retries per clock second run when no token is left, so
	// services with little traffic can still retry (≥ 0; 0 takes the default; see DisableFloor).
	MinRetriesPerSecond int
	// DisableFloor removes the floor: without tokens, every retry is denied.
	DisableFloor bool
	// DecayWindow is how long a token lives (0 takes the default; see DisableDecay).
	DecayWindow time.Duration
	// DisableDecay keeps tokens until they are spent.
	DisableDecay bool
}

func (c BudgetConfig) withDefaults() BudgetConfig {
	c.Ratio = cmp.Or(c.Ratio, defaultBudgetRatio)
	c.Capacity = cmp.Or(c.Capacity, defaultBudgetCapacity)
	if c.MinRetriesPerSecond == 0 && !c.DisableFloor {
		c.MinRetriesPerSecond = defaultMinRetriesPerSecond
	}
	if c.DisableFloor {
		c.MinRetriesPerSecond = 0
	}
	if c.DecayWindow == 0 && !c.DisableDecay {
		c.DecayWindow = defaultBudgetDecay
	}
	if c.DisableDecay {
		c.DecayWindow = 0
	}
	return c
}

func (c BudgetConfig) validate() error {
	switch {
	case math.IsNaN(c.Ratio) || c.Ratio < 0 || c.Ratio > 1:
		return &catalog.ConfigError{Field: "Budget.Ratio", Value: c.Ratio, Reason: "must be in (0, 1]"}
	case c.Capacity < 0 || c.Capacity > maxBudgetCapacity:
		return &catalog.ConfigError{Field: "Budget.Capacity", Value: c.Capacity, Reason: fmt.Sprintf("must be in [1, %d]", maxBudgetCapacity)}
	case c.MinRetriesPerSecond < 0:
		return &catalog.ConfigError{Field: "Budget.MinRetriesPerSecond", Value: c.MinRetriesPerSecond, Reason: "must not be negative (use DisableFloor)"}
	case c.DecayWindow < 0:
		return &catalog.ConfigError{Field: "Budget.DecayWindow", Value: c.DecayWindow, Reason: "must not be negative (use DisableDecay)"}
	}
	return nil
}

// budget is a retry budget (see [BudgetConfig]); a Retry owns one, and its Snapshot reports the
// tokens and denials. It is safe for concurrent use: a first attempt costs one atomic add (and,
// once per round(1/Ratio) calls, a short lock to store a token).
type budget struct {
	perToken uint64 // first attempts per token: round(1/Ratio)
	capacity int
	floor    int
	window   time.Duration
	clk      clock.Clock

	credits atomic.Uint64
	denied  atomic.Uint64

	mu        sync.Mutex
	tokens    []int64 // ring of deposit times (UnixNano), oldest first
	head, n   int
	floorSec  int64
	floorUsed int
}

// newBudget returns an empty budget for a validated configuration.
func newBudget(cfg BudgetConfig, clk clock.Clock) *budget {
	cfg = cfg.withDefaults()
	per := uint64(math.Round(1 / cfg.Ratio))
	if per < 1 {
		per = 1
	}
	return &budget{
		perToken: per,
		capacity: cfg.Capacity,
		floor:    cfg.MinRetriesPerSecond,
		window:   cfg.DecayWindow,
		clk:      clock.Or(clk),
		tokens:   make([]int64, cfg.Capacity),
		floorSec: math.MinInt64,
	}
}

// deposit records one first attempt. Every round(1/Ratio)-th deposit adds a token.
func (b *budget) deposit() {
	if b.credits.Add(1)%b.perToken != 0 {
		return
	}
	now := b.clk.Now().UnixNano()
	b.mu.Lock()
	b.expire(now)
	if b.n == b.capacity {
		if b.window == 0 {
			b.mu.Unlock()
			return
		}
		b.pop() // full: a fresh token replaces the oldest, which would expire first
	}
	b.tokens[(b.head+b.n)%b.capacity] = now
	b.n++
	b.mu.Unlock()
}

// tryRetry takes a token for one retry, or a slot of the per-second floor when no token is left.
// It reports false — and counts a denial — when neither is available.
func (b *budget) tryRetry() bool {
	if b.take() {
		return true
	}
	b.denied.Add(1)
	return false
}

// take takes a token, or a slot of the per-second floor when no token is left, and reports
// whether it got one. It counts nothing.
func (b *budget) take() bool {
	now := b.clk.Now()
	ns := now.UnixNano()
	b.mu.Lock()
	b.expire(ns)
	if b.n > 0 {
		b.pop()
		b.mu.Unlock()
		return true
	}
	if b.floor > 0 {
		sec := floorDiv(ns, int64(time.Second))
		if sec != b.floorSec {
			b.floorSec, b.floorUsed = sec, 0
		}
		if b.floorUsed < b.floor {
			b.floorUsed++
			b.mu.Unlock()
			return true
		}
	}
	b.mu.Unlock()
	return false
}

// available returns the number of tokens available now. It does not change the budget.
func (b *budget) available() int {
	now := b.clk.Now().UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.window == 0 {
		return b.n
	}
	live := b.n
	for i := 0; i < b.n && b.expired(b.tokens[(b.head+i)%b.capacity], now); i++ {
		live--
	}
	return live
}

// refused returns how many retries the budget has refused.
func (b *budget) refused() uint64 { return b.denied.Load() }

func (b *budget) expired(at, now int64) bool {
	return b.window > 0 && now-at >= int64(b.window)
}

// expire drops tokens older than the window. Called with mu held.
func (b *budget) expire(now int64) {
	for b.n > 0 && b.expired(b.tokens[b.head], now) {
		b.pop()
	}
}

// pop removes the oldest token. Called with mu held and n > 0.
func (b *budget) pop() {
	b.head = (b.head + 1) % b.capacity
	b.n--
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}
