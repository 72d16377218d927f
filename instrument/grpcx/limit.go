package grpcx

import (
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// WithLimit gives every key's pipeline an adaptive concurrency limiter configured by cfg (see
// package limit), whatever the order of the options: it replaces PipelineConfig.Limit of
// [WithPipeline]. Each attempt takes a permit while it runs; UNAVAILABLE, RESOURCE_EXHAUSTED and
// DEADLINE_EXCEEDED are overload signals (drops) for the limiter. A rejected call fails with an
// error for which errors.Is(err, limit.ErrLimited) holds and is never retried.
func WithLimit(cfg limit.Config) Option {
	return func(ic *Interceptor) error {
		ic.limit = &cfg
		return nil
	}
}

// WithThrottle gives every key's pipeline a client-side throttle configured by cfg (see package
// throttle), whatever the order of the options: it replaces PipelineConfig.Throttle of
// [WithPipeline]. UNAVAILABLE, RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED count as refused by the
// server; a call shed locally fails with an error for which errors.Is(err, throttle.ErrThrottled)
// holds and is never retried.
func WithThrottle(cfg throttle.Config) Option {
	return func(ic *Interceptor) error {
		ic.throttle = &cfg
		return nil
	}
}
