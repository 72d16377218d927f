package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// The correlation id ties together the events of one logical call: every retry decision of a
// call carries the same id in its Context, whichever attempt it follows.

type correlationKey struct{}

// WithCorrelationID returns a context carrying id as the correlation id of the logical call:
// every retry event of the call, and so every retry log line, carries it. A retry gives a call
// whose context has none a generated id ([NewCorrelationID]) before its first event.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey{}, id)
}

// CorrelationID returns the correlation id carried by ctx, or "" when there is none.
func CorrelationID(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	id, _ := ctx.Value(correlationKey{}).(string)
	return id
}

// NewCorrelationID returns a random UUID (version 4) string.
func NewCorrelationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
