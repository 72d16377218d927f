package breaker

import (
	"errors"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
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

// DefaultClassify is the default [Classifier]. It applies the failure classification of
// package classify (SPEC §2), so a breaker judges errors the same way the retry does:
//   - nil is a success;
//   - errors marked with [Ignore] or classify.Business, the caller's cancellation, and
//     stormwatch's own rejections (an open breaker, a full bulkhead) are ignored: they say
//     nothing about the dependency;
//   - an HTTP error status that is not a breaker failure (4xx other than 408 and 429, 501, 505),
//     and an error carrying its own verdict (classify.VerdictError, such as a gRPC NOT_FOUND)
//     that is not a breaker failure, is a success: the dependency answered;
//   - everything else — 5xx, 408, 429, timeouts (context.DeadlineExceeded), connection and TLS
//     failures, any other error — is a failure.
func DefaultClassify(err error) Outcome {
	if err == nil {
		return OutcomeSuccess
	}
	if IsIgnored(err) {
		return OutcomeIgnored
	}
	v := classify.ClassifyError(err, true)
	if v.BreakerFailure {
		return OutcomeFailure
	}
	var se classify.StatusError
	var ve classify.VerdictError
	if v.Class != catalog.ClassRejected && v.Class != catalog.ClassCanceled && !classify.IsBusiness(err) &&
		((errors.As(err, &se) && se.HTTPStatus() >= 400) || errors.As(err, &ve)) {
		return OutcomeSuccess
	}
	return OutcomeIgnored
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
