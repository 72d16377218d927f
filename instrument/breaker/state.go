package breaker

import "fmt"

// State is a circuit breaker state. Its String is the `state` label value of the metrics.
type State int32

// The states, in catalog order.
const (
	// Closed permits calls and counts their outcomes in the window.
	Closed State = iota
	// Open rejects every call until its open period has elapsed.
	Open
	// HalfOpen admits HalfOpenCalls probes and rejects the rest until the probes decide.
	HalfOpen
	// ForcedOpen rejects every call until a manual change ([Breaker.Reset] and friends).
	ForcedOpen
	// Disabled permits every call and records nothing.
	Disabled
	// MetricsOnly permits every call and records outcomes and window rates, but never
	// transitions or rejects (shadow mode, for calibrating thresholds).
	MetricsOnly
)

// NumStates is the number of states.
const NumStates = 6

var stateNames = [NumStates]string{"closed", "open", "half_open", "forced_open", "disabled", "metrics_only"}

// String returns the state's label value: closed, open, half_open, forced_open, disabled or
// metrics_only.
func (s State) String() string {
	if s >= 0 && int(s) < NumStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// States lists every state in catalog order.
func States() []State { return []State{Closed, Open, HalfOpen, ForcedOpen, Disabled, MetricsOnly} }

// CanTransition reports whether a committed transition from → to can occur: the automatic ones
// (closed→open, open→half_open, half_open→closed, half_open→open) and the manual ones, from any
// other state to closed (Reset), forced_open, disabled or metrics_only. The collector exports
// exactly these pairs.
func CanTransition(from, to State) bool {
	if from == to || from < 0 || to < 0 || int(from) >= NumStates || int(to) >= NumStates {
		return false
	}
	switch to {
	case Closed, ForcedOpen, Disabled, MetricsOnly:
		return true
	case Open:
		return from == Closed || from == HalfOpen
	case HalfOpen:
		return from == Open
	}
	return false
}

// CallKind is the outcome kind of a permitted call, the `kind` label of calls_total.
type CallKind int

// The call kinds, in catalog order.
const (
	Successful CallKind = iota
	Failed
	SlowSuccessful
	SlowFailed
	Ignored
)

// NumCallKinds is the number of call kinds.
const NumCallKinds = 5

var kindNames = [NumCallKinds]string{"successful", "failed", "slow_successful", "slow_failed", "ignored"}

// String returns the kind's label value.
func (k CallKind) String() string {
	if k >= 0 && int(k) < NumCallKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("CallKind(%d)", int(k))
}

// CallKinds lists every call kind in catalog order.
func CallKinds() []CallKind {
	return []CallKind{Successful, Failed, SlowSuccessful, SlowFailed, Ignored}
}
