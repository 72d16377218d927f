package httpx

import (
	"net/http"

	"github.com/stormwatch-go/stormwatch/instrument/classify"
)

// The HTTP mapping of package classify, which knows no protocol: package grpcx holds gRPC's the
// same way.

// IsIdempotent reports whether req may be sent more than once without changing the outcome:
// GET, HEAD, OPTIONS, PUT and DELETE are idempotent; POST and PATCH only when the request carries
// an Idempotency-Key header (the server then returns the first result for a repeated key). Other
// methods are not. A nil request is not idempotent.
func IsIdempotent(req *http.Request) bool {
	if req == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPost, http.MethodPatch:
		return req.Header.Get(IdempotencyKeyHeader) != ""
	}
	return false
}

// Classify classifies an HTTP call from its response and transport error. idempotent says
// whether the request may be repeated safely (see [IsIdempotent]); it gates retrying a 504 and a
// timeout after the request was sent.
//
// A non-nil err wins over resp (classify.ClassifyError). With no error, responses with a status
// below 400 succeed (zero Verdict), and 4xx/5xx statuses are classified by classify.Status.
func Classify(resp *http.Response, err error, idempotent bool) classify.Verdict {
	if err != nil {
		return classify.ClassifyError(err, idempotent)
	}
	if resp == nil {
		return classify.Verdict{}
	}
	return classify.Status(resp.StatusCode, idempotent)
}
