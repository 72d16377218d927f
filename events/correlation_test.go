package events

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCorrelationID(t *testing.T) {
	ctx := WithCorrelationID(context.Background(), "req-7")
	assert.Equal(t, "req-7", CorrelationID(ctx))
	assert.Empty(t, CorrelationID(context.Background()))
	assert.Empty(t, CorrelationID(nil)) //nolint:staticcheck // a nil context has no id

	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewCorrelationID()
		assert.Regexp(t, uuid, id, "a version 4 UUID")
		assert.False(t, seen[id], "ids are distinct")
		seen[id] = true
	}
}
