package grpcx

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
)

func TestParsePushback(t *testing.T) {
	for _, tt := range []struct {
		vals       []string
		d          time.Duration
		ok, refuse bool
	}{
		{nil, 0, false, false},
		{[]string{"0"}, 0, true, false},
		{[]string{"250"}, 250 * time.Millisecond, true, false},
		{[]string{"007"}, 7 * time.Millisecond, true, false},
		{[]string{"2147483647"}, 2147483647 * time.Millisecond, true, false},
		{[]string{"2147483648"}, 0, false, true},
		{[]string{"99999999999"}, 0, false, true},
		{[]string{"-1"}, 0, false, true},
		{[]string{"-0"}, 0, false, true},
		{[]string{"-"}, 0, false, true},
		{[]string{"+5"}, 0, false, true},
		{[]string{""}, 0, false, true},
		{[]string{" 5"}, 0, false, true},
		{[]string{"5ms"}, 0, false, true},
		{[]string{"1.5"}, 0, false, true},
		{[]string{"1e3"}, 0, false, true},
		{[]string{"5", "5"}, 0, false, true},
	} {
		d, ok, refuse := parsePushback(tt.vals)
		assert.Equal(t, tt.d, d, "%q", tt.vals)
		assert.Equal(t, tt.ok, ok, "%q ok", tt.vals)
		assert.Equal(t, tt.refuse, refuse, "%q refuse", tt.vals)
	}
}

func FuzzParsePushback(f *testing.F) {
	for _, s := range []string{"0", "250", "-1", "abc", "2147483648", "1.5", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok, refuse := parsePushback([]string{s})
		if ok == refuse {
			t.Fatalf("%q: exactly one of ok (%v) and refuse (%v)", s, ok, refuse)
		}
		if d < 0 || d > maxPushback*time.Millisecond || (!ok && d != 0) {
			t.Fatalf("%q: delay %v", s, d)
		}
	})
}

func TestClassifyEveryCode(t *testing.T) {
	for c := codes.Code(0); c <= 20; c++ {
		for _, idem := range []bool{false, true} {
			v := Classify(c, idem)
			if c == codes.OK {
				assert.False(t, v.Failed())
				continue
			}
			assert.True(t, v.Class.Valid(), "%v: a class of the closed set", c)
			if !v.BreakerFailure {
				assert.False(t, v.Retryable, "%v: what is not a breaker failure is never retried", c)
			}
		}
	}
	assert.Equal(t, Classify(codes.Unknown, true), Classify(codes.Code(99), true), "undefined codes are UNKNOWN")
	assert.Equal(t, Classify(codes.Unknown, false), Classify(codes.Code(99), false))
}

func TestErrorHints(t *testing.T) {
	st := status.Error(codes.ResourceExhausted, "quota")
	e := newError(context.Background(), "/s.S/M", st, metadata.Pairs(PushbackKey, "1500", RetryDisabledKey, " TRUE "), true)
	d, ok := e.RetryAfter(time.Time{})
	assert.True(t, ok)
	assert.Equal(t, 1500*time.Millisecond, d)
	assert.True(t, e.DoNotRetry(), "the signal")
	assert.True(t, e.Idempotent())
	assert.Equal(t, codes.ResourceExhausted, e.Code())
	assert.Equal(t, st.Error(), e.Error())
	assert.ErrorIs(t, e, st, "the status error is in the chain")
	assert.Equal(t, codes.ResourceExhausted, status.Code(fmt.Errorf("x: %w", e)))
	assert.Equal(t, classify.Verdict{Retryable: true, BreakerFailure: true, Class: catalog.ClassGRPCResourceExhausted}, classify.ClassifyError(e, false))
	assert.Equal(t, catalog.CauseError, fallback.DefaultClassify(e))

	e = newError(context.Background(), "/s.S/M", status.Error(codes.DeadlineExceeded, "slow"), nil, false)
	assert.False(t, e.DoNotRetry())
	_, ok = e.RetryAfter(time.Time{})
	assert.False(t, ok)
	assert.Equal(t, catalog.CauseTimeout, fallback.DefaultClassify(e))
	assert.Equal(t, catalog.CallFailed, breaker.DefaultClassify(e))
	assert.Equal(t, catalog.CallSuccessful, breaker.DefaultClassify(newError(context.Background(), "/s.S/M", status.Error(codes.NotFound, "no"), nil, false)))

	// CANCELED is the caller's only when the caller's context was cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	canceled := status.Error(codes.Canceled, "context canceled")
	assert.ErrorIs(t, newError(ctx, "/s.S/M", canceled, nil, true), context.Canceled)
	assert.NotErrorIs(t, newError(context.Background(), "/s.S/M", canceled, nil, true), context.Canceled)
	assert.Equal(t, catalog.CallIgnored, breaker.DefaultClassify(newError(ctx, "/s.S/M", canceled, nil, true)),
		"the caller's cancellation is ignored")
	server := newError(context.Background(), "/s.S/M", canceled, nil, true)
	assert.Equal(t, catalog.CallFailed, breaker.DefaultClassify(server), "a server's CANCELED is a failure")
	assert.Equal(t, classify.Verdict{BreakerFailure: true, Class: catalog.ClassError}, server.Verdict(true), "and never retried")
}

func TestWithStatus(t *testing.T) {
	assert.NoError(t, withStatus(nil))
	ge := newError(context.Background(), "/s.S/M", status.Error(codes.Unavailable, "down"), nil, false)
	wrapped := fmt.Errorf("retry: %w", ge)
	assert.Same(t, wrapped, withStatus(wrapped), "errors with a status are returned as they are")
	for _, tt := range []struct {
		err  error
		code codes.Code
	}{
		{&breaker.OpenError{Name: "x"}, codes.Unavailable},
		{&bulkhead.FullError{Name: "x"}, codes.ResourceExhausted},
		{fmt.Errorf("x: %w", context.Canceled), codes.Canceled},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{&retryPolicyError{method: "/s.S/M"}, codes.FailedPrecondition},
		{errors.New("other"), codes.Unknown},
	} {
		err := withStatus(tt.err)
		assert.Equal(t, tt.code, status.Code(err), "%v", tt.err)
		assert.ErrorIs(t, err, tt.err)
		assert.Equal(t, tt.err.Error(), err.Error())
	}
}
