package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/httpx"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Profile is the resilience configuration of one dependency, in demo time (the client divides
// every duration by the run's speed).
type Profile struct {
	// Retry: attempts per logical call, backoff base and cap, and the deadline of the whole call.
	MaxAttempts         int
	BackoffBase, Cap    time.Duration
	MaxDuration         time.Duration // 0: no deadline of the whole call (wall clock: http.Client.Timeout)
	AttemptTimeout      time.Duration // the timeout primitive's limit for each attempt
	SlowCallDuration    time.Duration // slow-call detection of the breaker
	OpenDuration        time.Duration // base open duration of the breaker (±20% jitter)
	WindowSize          int           // count-based breaker window
	MinCalls            int
	MaxConcurrent       int           // bulkhead permits
	MaxWait             time.Duration // bulkhead wait for a permit
	FallbackDescription string        // what the degraded answer is, for the status line
	// Limit adds an adaptive concurrency limiter to the pipeline (nil: none); the overload
	// scenario sets it for the dependency it overloads.
	Limit *limit.Config
	// NoFallback builds the pipeline without its fallback: a call that fails reaches the caller
	// as an error (Config.NoFallback sets it for every dependency).
	NoFallback bool
	// Hedge hedges every call (nil: none): the pipeline's hedge layer, which spends the
	// dependency's retry budget; the stragglers scenario sets it.
	Hedge *hedge.Config
	// BudgetRatio is the retry budget's ratio (0: the default, 10%): the share of calls that
	// may retry or, with Hedge, be hedged.
	BudgetRatio float64
}

// DefaultProfiles are the demo's dependency configurations (a production setup shrunk to a
// demo: a count window of 50 calls, trips at 50% failures or 80% slow calls over 1s, 5s open,
// one retry layer with a 10% budget, a bulkhead per dependency, a per-attempt time limit).
func DefaultProfiles() map[string]Profile {
	base := Profile{
		MaxAttempts: 3, BackoffBase: 100 * time.Millisecond, Cap: 2 * time.Second,
		MaxDuration: 6 * time.Second, AttemptTimeout: 2500 * time.Millisecond,
		SlowCallDuration: time.Second, OpenDuration: 5 * time.Second,
		WindowSize: 50, MinCalls: 20, MaxConcurrent: 40, MaxWait: 100 * time.Millisecond,
	}
	payments, inventory, recs := base, base, base
	payments.FallbackDescription = "payment pending (check later)"
	inventory.FallbackDescription = "cached stock level"
	recs.MaxConcurrent = 8
	recs.FallbackDescription = "no recommendations"
	return map[string]Profile{Payments: payments, Inventory: inventory, Recommendations: recs}
}

// dependency is one downstream dependency, called through an httpx transport whose pipeline
// (the registry's primitives called name) runs in stormwatch's default order: Fallback → Retry →
// CircuitBreaker → Bulkhead → Timeout → call.
type dependency struct {
	name   string
	url    string
	client *http.Client
	rt     *retry.Retry
	br     *breaker.Breaker
	bh     *bulkhead.Bulkhead
	to     *timeout.Timeout
	fb     *fallback.Fallback
	// hg hedges the calls (nil: not hedged); lat holds the latencies of the (hedged) calls.
	hg  *hedge.Hedge
	lat *latencies
	clk clock.Clock
	tw  *twin // the unhedged twin of a hedged dependency (nil: none)
}

// fallbackCauses are the causes the demo's fallbacks answer: every cause but "error" (a failure
// the demo does not expect). Stopping the demo cancels the calls in flight, which never counts a
// fallback of any cause: the fallback does not answer a caller who has gone.
var fallbackCauses = []catalog.Cause{catalog.CauseCircuitOpen, catalog.CauseBulkheadFull, catalog.CauseTimeout, catalog.CauseRetriesExhausted}

// retryDefaults is the zero retry.Config with its defaults filled in, which the demo scales.
var retryDefaults = func() retry.Config {
	r, err := retry.New("defaults", retry.Config{})
	if err != nil {
		panic(err) // the zero Config is valid
	}
	return r.Config()
}()

// newDependency builds the transport of the dependency called name, its pipeline configured from
// p scaled by speed with its timers on clk (nil: the wall clock), and keeps its primitives for
// the status line.
func newDependency(reg *instrument.Registry, name, url string, base http.RoundTripper, p Profile, speed float64, clk clock.Clock) (*dependency, error) {
	s := func(d time.Duration) time.Duration { return scaleDuration(d, speed) }
	rc := retry.Config{Clock: clk}
	rc.MaxAttempts = p.MaxAttempts
	rc.Backoff = retry.Backoff{Strategy: retry.FullJitter, Base: s(p.BackoffBase), Multiplier: 2, Cap: s(p.Cap)}
	ra := retryDefaults.RetryAfter
	rc.RetryAfter = retry.RetryAfterConfig{Min: s(ra.Min), Max: s(ra.Max), Jitter: ra.Jitter}
	rc.Budget.DecayWindow = s(retryDefaults.Budget.DecayWindow)
	rc.Budget.Ratio = p.BudgetRatio
	cfg := instrument.PipelineConfig{
		Retry: &rc,
		Breaker: &breaker.Config{
			Window: breaker.CountBased, WindowSize: p.WindowSize, MinCalls: p.MinCalls,
			SlowCallDuration: s(p.SlowCallDuration), OpenDuration: s(p.OpenDuration), Clock: clk,
		},
		Bulkhead: &bulkhead.Config{MaxConcurrent: p.MaxConcurrent, MaxWait: s(p.MaxWait), Clock: clk},
		Timeout:  &timeout.Config{Timeout: s(p.AttemptTimeout), Clock: clk},
		Fallback: &fallback.Config{On: fallbackCauses, Clock: clk},
	}
	if p.Limit != nil {
		lc := *p.Limit
		lc.Clock = clk
		cfg.Limit = &lc
	}
	if p.Hedge != nil {
		// The pipeline's hedge layer, between the retry and the breaker: it spends the retry's
		// budget, and every hedge passes the breaker, bulkhead and timeout like any attempt.
		hc := *p.Hedge
		hc.Delay, hc.MinDelay, hc.Clock = s(hc.Delay), s(hc.MinDelay), clk // GETs: httpx marks them idempotent
		cfg.Hedge = &hc
	}
	degraded := p.FallbackDescription
	opts := []httpx.Option{httpx.WithRegistry(reg), httpx.WithKey(func(*http.Request) string { return name })}
	if p.NoFallback {
		cfg.Fallback = nil
	} else {
		opts = append(opts, httpx.WithFallback(func(req *http.Request, _ catalog.Cause, _ error) (*http.Response, error) {
			return &http.Response{
				StatusCode: http.StatusOK, Header: http.Header{}, Request: req,
				Body: io.NopCloser(strings.NewReader(degraded)), ContentLength: int64(len(degraded)),
			}, nil
		}))
	}
	tr, err := httpx.NewTransport(base, append(opts, httpx.WithPipeline(cfg))...)
	if err != nil {
		return nil, err
	}
	pl, err := tr.Pipeline(name)
	if err != nil {
		return nil, err
	}
	d := &dependency{
		// The client's timeout is the deadline of the whole call, attempts and waits included.
		name: name, url: url, client: &http.Client{Transport: tr, Timeout: s(p.MaxDuration)},
		rt: pl.Retry(), br: pl.Breaker(), bh: pl.Bulkhead(), to: pl.Timeout(), fb: pl.Fallback(),
		hg: pl.Hedge(), lat: newLatencies(latencyWindow), clk: clock.Or(clk),
	}
	return d, nil
}

// do sends req (hedged by the pipeline when the dependency has a hedge) and records the call's
// latency.
func (d *dependency) do(req *http.Request) (*http.Response, error) {
	start := d.clk.Now()
	defer func() { d.lat.add(d.clk.Now().Sub(start)) }()
	return d.client.Do(req)
}

// Call makes one logical call. It returns the answer and whether it came from the fallback, or
// the error when neither the call nor the fallback produced an answer.
func (d *dependency) Call(ctx context.Context) (string, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		return "", false, err
	}
	resp, err := d.do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", false, err
	}
	if _, ok := httpx.FromFallback(resp); ok {
		return string(b), true, nil
	}
	if resp.StatusCode >= 400 {
		return "", false, fmt.Errorf("%s: %s", d.name, resp.Status)
	}
	return string(b), false, nil
}

// load drives calls at a fixed rate (open loop: arrivals do not wait for answers, as users do
// not), at most maxInFlight at a time, until ctx ends. Arrival i is due at start + i/rate on the
// clock; a late wake-up makes the missed arrivals at once, so the number of calls per second of
// the script does not depend on the machine's load. It waits for the calls in flight, which
// see ctx's end as their caller's cancellation.
type load struct {
	rate        float64 // calls per second, wall time
	maxInFlight int
	// mult, when set, multiplies the rate from one call to the next (the scenario's Load).
	mult func() float64
}

func (l load) run(ctx context.Context, clk clock.Clock, start time.Time, call func(context.Context), shed func()) {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, l.maxInFlight)
	interval := float64(time.Second) / l.rate
	due := start
	for {
		step := interval
		if l.mult != nil {
			if m := l.mult(); m > 0 {
				step = interval / m
			}
		}
		due = due.Add(time.Duration(step))
		if wait := due.Sub(clk.Now()); wait > 0 {
			t := clk.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		} else if ctx.Err() != nil {
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			shed()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			call(ctx)
		}()
	}
}
