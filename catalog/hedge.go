package catalog

// Hedge is the primitive kind of hedged requests (package instrument/hedge): the subsystem of
// the resilience_hedge_* metrics.
const Hedge Primitive = "hedge"

// HedgeOutcome is what became of one hedge — an extra attempt a call started after the hedge
// delay, besides its first — the `outcome` label of resilience_hedge_attempts_total.
type HedgeOutcome uint8

// The hedge outcomes, in exposition order.
const (
	// HedgeWon: the hedge's result was the call's.
	HedgeWon HedgeOutcome = iota
	// HedgeLost: the hedge ended with a result that was not accepted (a failure); the call's
	// answer came from another attempt.
	HedgeLost
	// HedgeCancelled: another attempt's result was accepted while the hedge ran, and the hedge
	// was cancelled — load the dependency served for nothing.
	HedgeCancelled
	// HedgeBudgetDenied: the hedge was due but the budget (the dependency's retry budget in a
	// pipeline) refused it; it never ran.
	HedgeBudgetDenied
	// NumHedgeOutcomes is the number of hedge outcomes.
	NumHedgeOutcomes = 4
)

var hedgeOutcomeNames = []string{"won", "lost", "cancelled", "budget_denied"}

// HedgeOutcomes lists every hedge outcome in exposition order.
var HedgeOutcomes = [NumHedgeOutcomes]HedgeOutcome{HedgeWon, HedgeLost, HedgeCancelled, HedgeBudgetDenied}

// String returns the outcome's label value.
func (o HedgeOutcome) String() string { return name(hedgeOutcomeNames, int(o), "HedgeOutcome") }

// MarshalText returns the label value.
func (o HedgeOutcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// LabelOutcome is the label of what became of a hedge.
const LabelOutcome = "outcome"

// The hedge's catalog entries: 6 series per hedge (calls, four outcomes, the delay), all from the
// start. The extra load hedging adds is the hedges that ran (won, lost, cancelled) per call.
var (
	HedgeCalls = Metric{Hedge, "calls_total", Counter,
		"Calls made through the hedge.",
		UnitCalls, labels(), nil}
	HedgeAttempts = Metric{Hedge, "attempts_total", Counter,
		"Hedges (attempts started after the hedge delay, besides each call's first), by outcome; budget_denied hedges never ran.",
		UnitCalls, labels(Label{LabelOutcome, Names(HedgeOutcomes[:])}), nil}
	HedgeDelay = Metric{Hedge, "delay_seconds", Gauge,
		"Hedge delay in use; 0 while an adaptive hedge is warming up.",
		UnitSeconds, labels(), nil}
)

// hedgeMetrics lists the hedge's entries in catalog order.
func hedgeMetrics() []Metric { return []Metric{HedgeCalls, HedgeAttempts, HedgeDelay} }
