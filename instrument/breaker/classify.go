package breaker

import (
	"github.com/stormwatch-go/stormwatch/catalog"
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
// package classify, so a breaker judges errors the way the retry does:
//   - business errors (marked with classify.Business), the caller's cancellation and
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
	v := classify.ClassifyError(err, true)
	switch {
	case v.BreakerFailure:
		return OutcomeFailure
	case v.Class == catalog.ClassError, // not a breaker failure: a business error
		v.Class == catalog.ClassCanceled, v.Class == catalog.ClassRejected:
		return OutcomeIgnored
	}
	return OutcomeSuccess // an answer: an HTTP status or an error's own verdict that is not a failure
}
