package breaker

import (
	"errors"
	"fmt"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// ErrOpen is matched (errors.Is) by every error a breaker returns when it refuses a call: open,
// forced open, or half-open with all probe permits taken. Use errors.As with [*OpenError] for
// the details.
var ErrOpen = errors.New("circuit breaker open")

// OpenError is the error a breaker returns when it refuses a call.
type OpenError struct {
	// Name is the breaker's name.
	Name string
	// State is the breaker's state at the decision: open, forced_open or half_open.
	State catalog.State
	// Remaining is how long the breaker stays open, usable as a Retry-After hint; 0 when
	// unknown (forced open, or half-open with every probe permit taken).
	Remaining time.Duration
}

// Error implements error.
func (e *OpenError) Error() string {
	if e.Remaining > 0 {
		return fmt.Sprintf("circuit breaker %q is %s (%v remaining)", e.Name, e.State, e.Remaining)
	}
	return fmt.Sprintf("circuit breaker %q is %s", e.Name, e.State)
}

// Is makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Rejected reports true: the call was refused by stormwatch itself and never reached the
// dependency. Failure classifiers recognise stormwatch's rejections through
// interface{ Rejected() bool }.
func (e *OpenError) Rejected() bool { return true }

// FallbackCause returns catalog.CauseCircuitOpen, the fallback cause of this rejection (see
// package fallback).
func (e *OpenError) FallbackCause() (catalog.Cause, bool) { return catalog.CauseCircuitOpen, true }
