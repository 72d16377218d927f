package retry

import (
	"context"
	"errors"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
)

// The hints a failed attempt's error can carry to the retry are package classify's
// (classify.RetryAfterHint, classify.DoNotRetryHint, classify.IdempotentHint; see "Protocol
// adapters" in the package documentation). The retry finds each as errors.As would, so an
// adapter may wrap its error and the hints still count.

// attemptInfo is what the retry learnt about a failed attempt.
type attemptInfo struct {
	never   bool // a rule that RetryIf cannot override forbids retrying
	verdict classify.Verdict
	status  int // the HTTP status of classify.StatusError; 0 without one
}

// classify classifies a failed attempt's error with the hints it carries. The rules that never
// retry — the caller's cancellation, stormwatch's rejections, the do-not-retry signal, a business
// error (classify.Business) — hold
// whatever Config.Classify says.
func (r *Retry) classify(err error) attemptInfo {
	var info attemptInfo
	idempotent := r.cfg.Idempotent
	if h, ok := findHint[classify.IdempotentHint](err); ok {
		idempotent = h.Idempotent()
	}
	info.verdict = r.verdict(err, idempotent)
	if h, ok := findHint[classify.StatusError](err); ok {
		info.status = h.HTTPStatus()
	}
	switch {
	case rejected(err):
		info.verdict, info.never = classify.Verdict{Class: catalog.ClassRejected}, true
	case errors.Is(err, context.Canceled):
		info.verdict, info.never = classify.Verdict{Class: catalog.ClassCanceled}, true
	case !info.verdict.Class.Valid(): // ClassNone or outside the closed set
		info.verdict.Class = catalog.ClassError
	}
	if h, ok := findHint[classify.DoNotRetryHint](err); ok && h.DoNotRetry() {
		info.verdict.Retryable, info.never = false, true
	}
	if classify.IsBusiness(err) { // a business error is an answer, never worth repeating
		info.verdict.Retryable, info.never = false, true
	}
	return info
}

// verdict classifies err with Config.Classify, else as classify.ClassifyError does. A bare status
// error — an HTTP response that failed, wrapping nothing — has the verdict of its status alone
// (classify.Status), which is what ClassifyError gives it too, without searching a chain there is
// not: failures are the retry's busy path when a dependency is down.
func (r *Retry) verdict(err error, idempotent bool) classify.Verdict {
	if r.cfg.Classify != nil {
		return r.cfg.Classify(err, idempotent)
	}
	if se, ok := err.(classify.StatusError); ok && se.HTTPStatus() >= 400 && bare(err) {
		return classify.Status(se.HTTPStatus(), idempotent)
	}
	return classify.ClassifyError(err, idempotent)
}

// bare reports whether errors.Is and errors.As see err alone: it wraps nothing and has no Is or
// As method.
func bare(err error) bool {
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		if e.Unwrap() != nil {
			return false
		}
	case interface{ Unwrap() []error }:
		if len(e.Unwrap()) > 0 {
			return false
		}
	}
	_, is := err.(interface{ Is(error) bool })
	_, as := err.(interface{ As(any) bool })
	return !is && !as
}

// rejected reports whether err is one of stormwatch's own rejections (classify.Rejection).
func rejected(err error) bool {
	h, ok := findHint[classify.Rejection](err)
	return ok && h.Rejected()
}

// findHint returns the first error in err's tree that implements H, as errors.As does (an
// error's As method included) but without moving a target to the heap: a failed attempt
// looks for several hints.
func findHint[H any](err error) (H, bool) {
	var zero H
	for err != nil {
		if h, ok := err.(H); ok {
			return h, true
		}
		if x, ok := err.(interface{ As(any) bool }); ok {
			var h H
			if x.As(&h) {
				return h, true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if h, ok := findHint[H](e); ok {
					return h, true
				}
			}
			return zero, false
		default:
			return zero, false
		}
	}
	return zero, false
}
