package breaker

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
)

// DefaultClassify is the default Config.Classify. It returns catalog.CallFailed,
// catalog.CallSuccessful or catalog.CallIgnored, and applies the failure classification of
// package classify, so a breaker judges errors the way the retry does:
//   - business errors (marked with classify.Business), the caller's cancellation and
//     stormwatch's own rejections (an open breaker, a full bulkhead) are ignored: they say
//     nothing about the dependency;
//   - an HTTP error status that is not a breaker failure (4xx other than 408 and 429, 501, 505),
//     and an error carrying its own verdict (classify.VerdictError, such as a gRPC NOT_FOUND)
//     that is not a breaker failure, is a success: the dependency answered;
//   - everything else — 5xx, 408, 429, timeouts (context.DeadlineExceeded), connection and TLS
//     failures, any other error — is a failure.
func DefaultClassify(err error) catalog.CallKind {
	if err == nil {
		return catalog.CallSuccessful
	}
	v := classify.ClassifyError(err, true)
	switch {
	case v.BreakerFailure:
		return catalog.CallFailed
	case v.Class == catalog.ClassError, // not a breaker failure: a business error
		v.Class == catalog.ClassCanceled, v.Class == catalog.ClassRejected:
		return catalog.CallIgnored
	}
	return catalog.CallSuccessful // an answer: an HTTP status or an error's own verdict that is not a failure
}
