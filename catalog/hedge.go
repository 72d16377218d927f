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
