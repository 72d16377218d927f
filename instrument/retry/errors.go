package retry

import (
	"fmt"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// Error is returned when a retry decision ended a logical call. It unwraps to the last attempt's
// error and, for a call ended by its context, to the context's error.
type Error struct {
	name    string
	outcome catalog.Outcome
	errs    []error
	cause   error
}

// Error says what ended the call, after how many attempts, and the last attempt's error.
func (e *Error) Error() string {
	n := len(e.errs)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	last := e.errs[n-1]
	switch e.outcome {
	case catalog.OutcomeAborted:
		return fmt.Sprintf("retry %q: aborted after %d attempt%s: %v (last error: %v)", e.name, n, plural, e.cause, last)
	case catalog.OutcomeBudgetExhausted:
		return fmt.Sprintf("retry %q: retry budget exhausted after %d attempt%s: %v", e.name, n, plural, last)
	}
	if e.cause != nil {
		return fmt.Sprintf("retry %q: gave up after %d attempt%s: %v (last error: %v)", e.name, n, plural, e.cause, last)
	}
	return fmt.Sprintf("retry %q: gave up after %d attempt%s: %v", e.name, n, plural, last)
}

// Unwrap returns the last attempt's error and, when the context ended the call, its error.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.errs[len(e.errs)-1], e.cause}
	}
	return []error{e.errs[len(e.errs)-1]}
}

// Attempts returns every attempt's error, in order; its length is the number of attempts made
// and its last element the last attempt's error.
func (e *Error) Attempts() []error { return append([]error(nil), e.errs...) }

// Outcome returns the decision that ended the call: catalog.OutcomeGaveUp,
// catalog.OutcomeBudgetExhausted or catalog.OutcomeAborted.
func (e *Error) Outcome() catalog.Outcome { return e.outcome }

// FallbackCause returns catalog.CauseRetriesExhausted — the fallback cause of a call that gave up
// or was refused a retry by the budget — and false for an aborted call, so that a fallback looks
// further down the chain (see package fallback).
func (e *Error) FallbackCause() (catalog.Cause, bool) {
	if e.outcome == catalog.OutcomeAborted {
		return 0, false
	}
	return catalog.CauseRetriesExhausted, true
}
