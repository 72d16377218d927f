package demo

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// The demo's dependencies: each is its own set of primitives and series (the `name` label).
const (
	Payments        = "payments"
	Inventory       = "inventory"
	Recommendations = "recommendations"
)

// Dependencies lists the dependencies the demo's client calls, in display order.
var Dependencies = []string{Payments, Inventory, Recommendations}

// Phase is one step of a scenario's script: from At (demo time since the start) on, the
// downstream endpoints have these faults. A dependency absent from Faults is Steady.
type Phase struct {
	At     time.Duration
	Name   string
	Faults map[string]Fault
}

// Scenario is a named script of faults. The last phase lasts until the run ends.
type Scenario struct {
	Name    string
	Summary string
	Phases  []Phase
	// Limited lists the dependencies whose pipeline gets an adaptive concurrency limiter.
	Limited []string
	// Hedged lists the dependencies whose calls are hedged (see stragglersHedge), each with an
	// unhedged twin for comparison.
	Hedged []string
}

// Steady is the background fault of a healthy dependency: 20–60 ms and one request in 200
// answered 503 (so the retry log has something to show; the retries rescue it).
var Steady = Fault{Latency: 20 * time.Millisecond, Jitter: 40 * time.Millisecond, ErrorRate: 0.005}

// Scenario names.
const (
	ScenarioSteady      = "steady"
	ScenarioOutage      = "outage"
	ScenarioFlapping    = "flapping"
	ScenarioSlow        = "slow"
	ScenarioRateLimited = "rate-limited"
	ScenarioRetryStorm  = "retry-storm"
	ScenarioOverload    = "overload"
	ScenarioStragglers  = "stragglers"
)

// ScenarioNames lists every scenario, retry-storm included.
var ScenarioNames = []string{ScenarioSteady, ScenarioOutage, ScenarioFlapping, ScenarioSlow, ScenarioRateLimited, ScenarioRetryStorm, ScenarioOverload, ScenarioStragglers}

// Fault-script timings of the one-shot scenarios (demo time).
const (
	faultStart = 15 * time.Second
	faultEnd   = 75 * time.Second
)

// Scenarios returns the scripted scenarios by name (retry-storm is not a script of the
// three-dependency client; see RunRetryStorm).
func Scenarios() map[string]Scenario {
	healthy := Phase{At: 0, Name: "healthy"}
	recovered := Phase{At: faultEnd, Name: "recovered"}
	flapping := []Phase{healthy}
	for i := range 4 {
		start := 10*time.Second + time.Duration(i)*20*time.Second
		flapping = append(flapping,
			Phase{At: start, Name: fmt.Sprintf("payments down (%d/4)", i+1), Faults: map[string]Fault{Payments: {ErrorRate: 1, Latency: 5 * time.Millisecond}}},
			Phase{At: start + 8*time.Second, Name: fmt.Sprintf("payments back (%d/4)", i+1)})
	}
	return map[string]Scenario{
		ScenarioSteady: {
			Name:    ScenarioSteady,
			Summary: "every dependency healthy (0.5% errors that retries rescue): no trips, no alerts",
			Phases:  []Phase{{At: 0, Name: "steady"}},
		},
		ScenarioOutage: {
			Name:    ScenarioOutage,
			Summary: "payments goes down (503s, resets, hangs) for 60s: its breaker trips and the fallback answers; inventory turns flaky (retries rescue it) and recommendations slow (its bulkhead queues and rejects)",
			Phases: []Phase{healthy, {
				At:   faultStart,
				Name: "payments down, inventory flaky, recommendations slow",
				Faults: map[string]Fault{
					Payments:        {ErrorRate: 0.6, ResetRate: 0.2, HangRate: 0.2, Latency: 5 * time.Millisecond},
					Inventory:       {ErrorRate: 0.25, Latency: 20 * time.Millisecond, Jitter: 40 * time.Millisecond},
					Recommendations: {Latency: 400 * time.Millisecond, Jitter: 400 * time.Millisecond},
				},
			}, recovered},
		},
		ScenarioSlow: {
			Name:    ScenarioSlow,
			Summary: "payments answers in 1.1–1.5s for 60s: the calls succeed but are slow, and the breaker trips on the slow-call rate",
			Phases: []Phase{healthy, {
				At:     faultStart,
				Name:   "payments slow",
				Faults: map[string]Fault{Payments: {Latency: 1100 * time.Millisecond, Jitter: 400 * time.Millisecond}},
			}, recovered},
		},
		ScenarioRateLimited: {
			Name:    ScenarioRateLimited,
			Summary: "inventory answers 30% of its requests 429 with Retry-After: 1 for 60s: the retries wait as told (delay source retry_after)",
			Phases: []Phase{healthy, {
				At:     faultStart,
				Name:   "inventory rate-limited",
				Faults: map[string]Fault{Inventory: {RateLimitRate: 0.3, RetryAfter: time.Second, Latency: 10 * time.Millisecond}},
			}, recovered},
		},
		ScenarioOverload:   overloadScenario(),
		ScenarioStragglers: stragglersScenario(),
		ScenarioFlapping: {
			Name:    ScenarioFlapping,
			Summary: "payments goes down for 8s every 20s, four times: the breaker trips, probes, closes and trips again",
			Phases:  flapping,
		},
	}
}

// LookupScenario returns the scripted scenario called name.
func LookupScenario(name string) (Scenario, error) {
	s, ok := Scenarios()[name]
	if !ok {
		return Scenario{}, fmt.Errorf("scenario %q: want one of %s", name, strings.Join(ScenarioNames, "|"))
	}
	return s, nil
}

// OutageScenarios are the one-shot scenarios: one fault window (60s by default, from 15s on),
// then recovery. Config.Outage (--outage) sets the window's length.
var OutageScenarios = []string{ScenarioOutage, ScenarioSlow, ScenarioRateLimited}

// WithOutage returns s with its fault window lasting d (demo time, scaled by --speed like the
// rest of the script) instead of 60s: the recovery phase begins d after the fault. A window
// longer than the run lasts until the end. s must be one of OutageScenarios.
func (s Scenario) WithOutage(d time.Duration) (Scenario, error) {
	if d <= 0 {
		return s, usagef("--outage %v: must be positive", d)
	}
	if !slices.Contains(OutageScenarios, s.Name) || len(s.Phases) != 3 {
		return s, usagef("--outage: scenario %q has no single fault window (--outage applies to %s)", s.Name, strings.Join(OutageScenarios, "|"))
	}
	s.Phases = slices.Clone(s.Phases)
	s.Phases[2].At = s.Phases[1].At + d
	s.Summary = strings.Replace(s.Summary, "for "+fmt.Sprint(int((faultEnd-faultStart).Seconds()))+"s", "for "+d.String(), 1)
	return s, nil
}

// validate checks the script: phases in order, faults valid and for known dependencies.
func (s Scenario) validate() error {
	if len(s.Phases) == 0 || s.Phases[0].At != 0 {
		return fmt.Errorf("demo: scenario %q: the first phase must start at 0", s.Name)
	}
	if !sort.SliceIsSorted(s.Phases, func(i, j int) bool { return s.Phases[i].At < s.Phases[j].At }) {
		return fmt.Errorf("demo: scenario %q: phases must be in time order", s.Name)
	}
	for _, p := range s.Phases {
		for dep, f := range p.Faults {
			if !slices.Contains(Dependencies, dep) {
				return fmt.Errorf("demo: scenario %q, phase %q: unknown dependency %q", s.Name, p.Name, dep)
			}
			if err := f.validate(); err != nil {
				return fmt.Errorf("demo: scenario %q, phase %q, %s: %w", s.Name, p.Name, dep, err)
			}
		}
	}
	return nil
}

// fault returns the fault of dep in phase p.
func (p Phase) fault(dep string) Fault {
	if f, ok := p.Faults[dep]; ok {
		return f
	}
	return Steady
}

// scaleDuration divides d by speed.
func scaleDuration(d time.Duration, speed float64) time.Duration {
	if speed == 1 || d == 0 {
		return d
	}
	return time.Duration(float64(d) / speed)
}

// The overload scenario's downstream: payments serves overloadCapacity requests at a time in
// overloadService each — overloadCapacity / overloadService calls per second (200) — and the
// client offers it a multiple of its rate (20 calls per second by default): half the capacity
// while healthy, then 2× and 3× the capacity, then back.
const (
	overloadCapacity = 20
	overloadService  = 100 * time.Millisecond
)

func overloadScenario() Scenario {
	capacity := float64(overloadCapacity) * float64(time.Second) / float64(overloadService)
	at := func(share float64) Fault {
		return Fault{Latency: overloadService, Capacity: overloadCapacity, Load: share * capacity / DefaultRate}
	}
	return Scenario{
		Name: ScenarioOverload,
		Summary: "offered load on payments (a downstream serving 20 calls at a time, 100ms each: 200 calls/s) rises from half its capacity to 2× and 3× and back, " +
			"through an adaptive concurrency limiter: the limit settles a little above 20 (the downstream's concurrency plus a short queue), latency stays within about 1.3× the 100ms and the excess is rejected at once",
		Limited: []string{Payments},
		Phases: []Phase{
			{At: 0, Name: "payments at 0.5× capacity", Faults: map[string]Fault{Payments: at(0.5)}},
			{At: faultStart, Name: "payments at 2× capacity", Faults: map[string]Fault{Payments: at(2)}},
			{At: faultStart + 20*time.Second, Name: "payments at 3× capacity", Faults: map[string]Fault{Payments: at(3)}},
			{At: faultEnd, Name: "payments back at 0.5× capacity", Faults: map[string]Fault{Payments: at(0.5)}},
		},
	}
}

// The stragglers scenario's inventory: healthy answers in 20–60ms, but one request in 20 is a
// straggler that takes 500ms more. Its calls are hedged after stragglersDelay, which only
// stragglers outlast.
const (
	stragglersDelay   = 100 * time.Millisecond
	stragglersLatency = 500 * time.Millisecond
)

// stragglersHedge is the hedge of the scenario's hedged dependency: one hedge after a fixed
// delay (a p95 adaptive delay would sit on the edge of a 5% tail), spending the retry budget of
// the same dependency, whose ratio is stragglersBudget: room for the 5% of hedges and the
// retries, and while every call outlasts the delay, about half of the calls hedged.
var stragglersHedge = hedge.Config{Delay: stragglersDelay, Idempotent: true}

const stragglersBudget = 0.3

func stragglersScenario() Scenario {
	tail := Steady
	tail.StragglerRate, tail.StragglerLatency = 0.05, stragglersLatency
	return Scenario{
		Name: ScenarioStragglers,
		Summary: "inventory has a 5% straggler tail (+500ms) and its calls are hedged after 100ms: the hedged p99 stays near 150ms while an unhedged twin's is above 500ms, " +
			"for about 5% extra requests; for 60s inventory is slow for everyone (300–400ms): the hedges lose the race and exhaust the 30% budget they share with the retries",
		Hedged: []string{Inventory},
		Phases: []Phase{
			{At: 0, Name: "inventory: 5% stragglers, hedged", Faults: map[string]Fault{Inventory: tail}},
			// No errors while slow: with the budget spent on hedges, a 503 would not be retried and
			// its fallback would keep FallbackSustained's condition up.
			{At: faultStart, Name: "inventory slow for everyone: hedges cannot help", Faults: map[string]Fault{
				Inventory: {Latency: 300 * time.Millisecond, Jitter: 100 * time.Millisecond}}},
			{At: faultEnd, Name: "inventory back to 5% stragglers", Faults: map[string]Fault{Inventory: tail}},
		},
	}
}
