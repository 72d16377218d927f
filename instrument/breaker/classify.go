package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
)

// Outcome is how a breaker counts a call's error.
type Outcome int

// The outcomes a [Classifier] returns.
const (
	// OutcomeSuccess counts the call as a success (slow_successful when it was slow).
	OutcomeSuccess Outcome = iota
	// OutcomeFailure counts the call as a failure (slow_failed when it was slow).
	OutcomeFailure
	// OutcomeIgnored counts the call as ignored: it enters no window and decides nothing, and
	// a half-open probe that ends ignored returns its permit.
	OutcomeIgnored
)

// Classifier decides the outcome of a call that returned a non-nil error.
type Classifier func(err error) Outcome

// DefaultClassify is the default [Classifier]: errors marked with [Ignore] and context.Canceled
// (the caller gave up, which says nothing about the dependency) are ignored; every other error
// is a failure, including context.DeadlineExceeded (the dependency was too slow).
func DefaultClassify(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeSuccess
	case IsIgnored(err), errors.Is(err, context.Canceled):
		return OutcomeIgnored
	}
	return OutcomeFailure
}

// Ignore marks err as not a failure of the dependency (a business error such as "insufficient
// funds" or "not found"): the default classifier counts it as ignored. The error is returned to
// the caller unchanged apart from the wrapping; errors.Is and errors.As see through it.
// Ignore(nil) is nil.
func Ignore(err error) error {
	if err == nil {
		return nil
	}
	return &ignoredError{err: err}
}

// IsIgnored reports whether err was marked with [Ignore].
func IsIgnored(err error) bool {
	var ie *ignoredError
	return errors.As(err, &ie)
}

type ignoredError struct{ err error }

func (e *ignoredError) Error() string { return e.err.Error() }
func (e *ignoredError) Unwrap() error { return e.err }

func randFloat64() float64 { return rand.Float64() }
