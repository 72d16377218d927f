package breaker

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
)

// verdictErr carries its own verdict (classify.VerdictError), as a gRPC adapter's error does.
type verdictErr classify.Verdict

func (v verdictErr) Error() string                 { return "rpc: " + v.Class.String() }
func (v verdictErr) Verdict(bool) classify.Verdict { return classify.Verdict(v) }

func TestDefaultClassifyHonoursAnErrorsOwnVerdict(t *testing.T) {
	unavailable := verdictErr{Retryable: true, BreakerFailure: true, Class: catalog.ClassGRPCUnavailable}
	notFound := verdictErr{Class: catalog.ClassGRPCPermanent}
	tests := []struct {
		name string
		err  error
		want catalog.CallKind
	}{
		{"a failure", unavailable, catalog.CallFailed},
		{"wrapped failure", fmt.Errorf("get: %w", unavailable), catalog.CallFailed},
		{"not a failure: the dependency answered", fmt.Errorf("get: %w", notFound), catalog.CallSuccessful},
		{"business", classify.Business(notFound), catalog.CallIgnored},
		{"class canceled", verdictErr{Class: catalog.ClassCanceled}, catalog.CallIgnored},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, DefaultClassify(tt.err), tt.name)
	}

	b, _, _ := newTest(t, Config{WindowSize: 10, MinCalls: 1})
	for i := 0; i < 5; i++ {
		_ = b.Do(context.Background(), func(context.Context) error { return notFound })
	}
	assert.Equal(t, catalog.StateClosed, b.State(), "answers that are not failures never trip the breaker")
	assert.Equal(t, uint64(5), b.Snapshot().Calls[catalog.CallSuccessful])
	for i := 0; i < 6; i++ {
		_ = b.Do(context.Background(), func(context.Context) error { return unavailable })
	}
	assert.Equal(t, catalog.StateOpen, b.State(), "6 failures in 11 calls: above the 50% threshold")
}
