package catalog

// CanTransition reports whether a circuit breaker's committed transition from → to can occur:
// the automatic ones (closed→open, open→half_open, half_open→closed, half_open→open) and the
// manual ones, from any other state to closed (a reset), forced_open, disabled or metrics_only.
// The exporters export exactly these pairs.
func CanTransition(from, to State) bool {
	if from == to || from >= NumStates || to >= NumStates {
		return false
	}
	switch to {
	case StateClosed, StateForcedOpen, StateDisabled, StateMetricsOnly:
		return true
	case StateOpen:
		return from == StateClosed || from == StateHalfOpen
	case StateHalfOpen:
		return from == StateOpen
	}
	return false
}
