package httpx

import (
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// WithLimit gives every key's pipeline an adaptive concurrency limiter configured by cfg (see
// package limit), whatever the order of the options: it replaces PipelineConfig.Limit of
// [WithPipeline]. Each attempt takes a permit while it runs; a response with status 429 or 5xx,
// or an attempt that timed out, is an overload signal (a drop) for the limiter. A rejected
// request fails with an error for which errors.Is(err, limit.ErrLimited) holds and is never
// retried.
func WithLimit(cfg limit.Config) Option {
	return func(t *Transport) error {
		t.limit = &cfg
		return nil
	}
}

// WithThrottle gives every key's pipeline a client-side throttle configured by cfg (see package
// throttle), whatever the order of the options: it replaces PipelineConfig.Throttle of
// [WithPipeline]. Responses with status 429 or 5xx and timeouts count as refused by the
// dependency; a request shed locally fails with an error for which
// errors.Is(err, throttle.ErrThrottled) holds and is never retried.
func WithThrottle(cfg throttle.Config) Option {
	return func(t *Transport) error {
		t.throttle = &cfg
		return nil
	}
}
