package instrument

import (
	"context"

	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// The adaptive layers of a pipeline (PipelineConfig.Throttle and PipelineConfig.Limit) wrap each
// attempt between the circuit breaker and the bulkhead:
//
//	Fallback → Retry → CircuitBreaker → Limiter → Throttle → Bulkhead → Timeout → call
//
// Why there: like the bulkhead, the limiter bounds what runs at the dependency now, so every
// attempt takes its own permit and holds it only while it runs — never during a backoff wait, or
// the retry would occupy the limit with sleeping calls. Inside the breaker, because a rejection
// by the limiter says nothing about the dependency's health: the breaker ignores it (it is a
// stormwatch rejection), and an open breaker refuses before a permit is taken. Outside the
// timeout, so that an attempt stopped by its time limit reaches the limiter as what it is — a
// drop, the overload signal that shrinks the limit. The throttle sits inside the limiter, so
// that it counts only the requests that could be sent: a limiter rejection is not a request the
// dependency refused (counting it would make the two layers shed for the same overload twice); a
// request the throttle sheds gives its permit back at once, teaching the limiter nothing.
//
// The retry never retries a rejection by the limiter or the throttle (both are class rejected,
// whatever RetryIf says), and the breaker never counts one as a failure.

// acquireAdaptive takes a limiter permit and passes the throttle. On error nothing is held.
func (p *Pipeline) acquireAdaptive(ctx context.Context) (limit.Permit, error) {
	var lp limit.Permit
	if p.limiter != nil {
		var err error
		if lp, err = p.limiter.Acquire(ctx); err != nil {
			return lp, err
		}
	}
	if p.throttle != nil {
		if err := p.throttle.Allow(ctx); err != nil {
			lp.Done(err) // a refusal of our own: the limiter learns nothing
			return limit.Permit{}, err
		}
	}
	return lp, nil
}

// finishAdaptive reports an attempt's outcome to the limiter and the throttle. An attempt that
// timed out or that the dependency refused as overloaded (429, 5xx, timeouts, connection
// refused, gRPC UNAVAILABLE/RESOURCE_EXHAUSTED/DEADLINE_EXCEEDED) is a drop for the limiter —
// also because a fast refusal must not pass for a low latency; the caller's cancellation
// teaches nothing; any other outcome is a latency sample (limit.Permit.Done).
func (p *Pipeline) finishAdaptive(lp limit.Permit, err error) {
	lp.Done(err)
	if p.throttle != nil {
		p.throttle.Record(err)
	}
}

// Limiter returns the adaptive limiter layer, or nil.
func (p *Pipeline) Limiter() *limit.Limiter { return p.limiter }

// Throttle returns the client-side throttle layer, or nil.
func (p *Pipeline) Throttle() *throttle.Throttle { return p.throttle }
