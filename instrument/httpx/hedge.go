package httpx

import (
	"context"
	"net/http"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// WithHedge hedges the requests that may be sent twice (package hedge): when an attempt has not
// answered after the hedge delay, the transport sends the request again, returns the first
// acceptable response and cancels the other attempt. It sets PipelineConfig.Hedge, whatever
// [WithPipeline] says; a pipeline's Hedge does the same.
//
// Only a request that [IsIdempotent] calls idempotent — by its method (GET, HEAD, OPTIONS,
// TRACE, PUT, DELETE) or the Idempotency-Key header the caller set — and whose body is absent
// or can be rewound (Request.GetBody, set by http.NewRequest for in-memory bodies) is hedged;
// hedge.Config.Idempotent does not apply here. A POST made idempotent by
// [WithIdempotencyKeys] is retried but never hedged: two copies of it would be in flight at
// once. Every attempt sends its own copy of the request (a hedge rewinds the body with
// GetBody); the responses of the attempts that lose are drained and closed, and the caller's
// response stays readable until its body is closed.
func WithHedge(cfg hedge.Config) Option {
	return func(t *Transport) error {
		t.hedge = &cfg
		return nil
	}
}

// hedgeContext marks the call's context with whether its request may be hedged, when the
// pipeline hedges.
func (s *call) hedgeContext(ctx context.Context, p *instrument.Pipeline) context.Context {
	if p.Hedge() == nil {
		return ctx
	}
	return hedge.WithIdempotent(ctx, hedgeable(s.orig))
}

// hedgeable reports whether req may have two attempts in flight at once.
func hedgeable(req *http.Request) bool {
	return IsIdempotent(req) && (req.Body == nil || req.Body == http.NoBody || req.GetBody != nil)
}
