package breaker

import "github.com/stormwatch-go/stormwatch/catalog"

// A breaker's states are catalog.State values (catalog.StateClosed, catalog.StateOpen,
// catalog.StateHalfOpen, catalog.StateForcedOpen, catalog.StateDisabled, catalog.StateMetricsOnly);
// its call kinds are catalog.CallKind values; its trips carry a catalog.TripCause. Their String
// methods give the metric label values.

// CanTransition reports whether a committed transition from → to can occur: the automatic ones
// (closed→open, open→half_open, half_open→closed, half_open→open) and the manual ones, from any
// other state to closed (Reset), forced_open, disabled or metrics_only. The collector exports
// exactly these pairs.
func CanTransition(from, to catalog.State) bool {
	if from == to || from >= catalog.NumStates || to >= catalog.NumStates {
		return false
	}
	switch to {
	case catalog.StateClosed, catalog.StateForcedOpen, catalog.StateDisabled, catalog.StateMetricsOnly:
		return true
	case catalog.StateOpen:
		return from == catalog.StateClosed || from == catalog.StateHalfOpen
	case catalog.StateHalfOpen:
		return from == catalog.StateOpen
	}
	return false
}
