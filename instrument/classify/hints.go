package classify

import "time"

// The hints a failed attempt's error can carry to the layers above it, besides its HTTP status
// ([StatusError]) and its own verdict ([VerdictError]). Protocol adapters (httpx, grpcx)
// implement those they know; the retry finds each as errors.As would, so an adapter may wrap its
// error and the hints still count.

// RetryAfterHint is implemented by errors that carry a delay the server asked for before the
// next attempt: HTTP's Retry-After, gRPC's grpc-retry-pushback-ms. RetryAfter reports the wait
// and true, or false when the error carries no usable value (the retry then uses its backoff).
// now is the reading of the retry's clock, for values given as a point in time. The retry clamps
// the wait to its RetryAfter configuration's [Min, Max] and adds its jitter; the delay source is
// retry_after.
type RetryAfterHint interface {
	RetryAfter(now time.Time) (time.Duration, bool)
}

// DoNotRetryHint is implemented by errors that may forbid retrying: when DoNotRetry reports
// true, the attempt is not retried, whatever the classifier and the retry's RetryIf say.
// Adapters report with it the upstream's do-not-retry signal and requests that are unsafe to
// repeat.
type DoNotRetryHint interface {
	DoNotRetry() bool
}

// IdempotentHint is implemented by errors that know whether their operation may run twice
// safely (for HTTP: the request's method and Idempotency-Key). Idempotent replaces the retry's
// Config.Idempotent for the attempt; the classifier retries a timeout after the request was sent
// only for an idempotent operation.
type IdempotentHint interface {
	Idempotent() bool
}
