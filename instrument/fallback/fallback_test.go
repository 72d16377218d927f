package fallback

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// The tests use timeouts on a fake clock, whose attempts watch their timer in a goroutine.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Local stand-ins for the breaker's and the retry's errors, implementing the contract.
type openError struct{}

func (openError) Error() string  { return "circuit open" }
func (openError) Rejected() bool { return true }
func (openError) FallbackCause() (catalog.Cause, bool) {
	return catalog.CauseCircuitOpen, true
}

type exhaustedError struct{ last error }

func (e exhaustedError) Error() string { return "retries exhausted: " + e.last.Error() }
func (e exhaustedError) Unwrap() error { return e.last }
func (e exhaustedError) FallbackCause() (catalog.Cause, bool) {
	return catalog.CauseRetriesExhausted, true
}

// oddCauser reports a cause outside the closed set, or (none) no cause at all.
type oddCauser struct {
	err  error
	none bool
}

func (e oddCauser) Error() string { return "odd" }
func (e oddCauser) Unwrap() error { return e.err }
func (e oddCauser) FallbackCause() (catalog.Cause, bool) {
	return catalog.Cause(catalog.NumCauses + 3), !e.none
}

// realErrors returns the errors of stormwatch's own bulkhead and timeout.
func realErrors(t *testing.T) (full, timedOut error) {
	t.Helper()
	b, err := bulkhead.New("dep", bulkhead.Config{MaxConcurrent: 1})
	require.NoError(t, err)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	defer release.Done()
	_, full = b.Acquire(context.Background())
	require.ErrorIs(t, full, bulkhead.ErrFull)

	fake := clock.NewFake(epoch)
	to, err := timeout.New("dep", timeout.Config{Timeout: time.Second, Clock: fake})
	require.NoError(t, err)
	actx, a := to.Start(context.Background())
	fake.Advance(time.Second)
	<-actx.Done()
	timedOut = a.Done(actx.Err())
	require.ErrorIs(t, timedOut, timeout.ErrTimedOut)
	return full, timedOut
}

func TestDefaultClassify(t *testing.T) {
	full, timedOut := realErrors(t)
	plain := errors.New("boom")
	tests := []struct {
		name string
		err  error
		want catalog.Cause
	}{
		{"breaker open", openError{}, catalog.CauseCircuitOpen},
		{"breaker open, wrapped", fmt.Errorf("call: %w", openError{}), catalog.CauseCircuitOpen},
		{"bulkhead full", full, catalog.CauseBulkheadFull},
		{"bulkhead full, wrapped", fmt.Errorf("call: %w", full), catalog.CauseBulkheadFull},
		{"attempt timed out", timedOut, catalog.CauseTimeout},
		{"retries exhausted on timeouts: the outermost cause wins", exhaustedError{last: timedOut}, catalog.CauseRetriesExhausted},
		{"retries exhausted on errors", exhaustedError{last: plain}, catalog.CauseRetriesExhausted},
		{"caller's deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), catalog.CauseTimeout},
		{"joined", errors.Join(plain, fmt.Errorf("x: %w", openError{})), catalog.CauseCircuitOpen},
		{"invalid cause is skipped", oddCauser{err: full}, catalog.CauseBulkheadFull},
		{"invalid cause alone", oddCauser{err: plain}, catalog.CauseError},
		{"no cause is skipped", oddCauser{err: full, none: true}, catalog.CauseBulkheadFull},
		{"plain error", plain, catalog.CauseError},
		{"cancelled", context.Canceled, catalog.CauseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, DefaultClassify(tt.err))
		})
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name, fb string
		cfg      Config
		field    string
		value    any
		want     string
	}{
		{"empty name", "", Config{}, "name", "", `fallback: name = "": must not be empty`},
		{"empty On", "prices", Config{On: []catalog.Cause{}}, "On", []catalog.Cause{}, `fallback "prices": On = []: list at least one cause, or leave it nil for all`},
		{"unknown cause", "prices", Config{On: []catalog.Cause{catalog.CauseTimeout, catalog.Cause(9)}}, "On[1]", catalog.Cause(9), `fallback "prices": On[1] = Cause(9): not a cause (want one of [circuit_open bulkhead_full timeout retries_exhausted error])`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.fb, tt.cfg)
			assert.Nil(t, f)
			var ce *catalog.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, string(catalog.Fallback), ce.Primitive)
			assert.Equal(t, tt.fb, ce.Name)
			assert.Equal(t, tt.field, ce.Field)
			assert.Equal(t, tt.value, ce.Value)
			assert.EqualError(t, err, tt.want)
		})
	}
	f, err := New("prices", Config{On: []catalog.Cause{catalog.CauseCircuitOpen, catalog.CauseBulkheadFull}})
	require.NoError(t, err)
	assert.Equal(t, "prices", f.Name())
	assert.True(t, f.Handles(catalog.CauseCircuitOpen))
	assert.False(t, f.Handles(catalog.CauseError))
	assert.False(t, f.Handles(catalog.Cause(9)))
	all, err := New("all", Config{})
	require.NoError(t, err)
	for _, c := range catalog.Causes {
		assert.True(t, all.Handles(c), c)
	}
}

func TestCallCountsByCauseAndMarksFallbackResults(t *testing.T) {
	full, timedOut := realErrors(t)
	plain := errors.New("boom")
	type result struct {
		v            string
		fromFallback bool
		err          error
	}
	tests := []struct {
		name      string
		on        []catalog.Cause
		ctx       func() (context.Context, context.CancelFunc)
		callErr   error
		want      result
		wantCause *catalog.Cause // nil when the fallback must not run
	}{
		{name: "success is real data", want: result{v: "real"}},
		{name: "open circuit", callErr: openError{}, want: result{v: "cached", fromFallback: true}, wantCause: ptr(catalog.CauseCircuitOpen)},
		{name: "bulkhead full", callErr: full, want: result{v: "cached", fromFallback: true}, wantCause: ptr(catalog.CauseBulkheadFull)},
		{name: "timeout", callErr: timedOut, want: result{v: "cached", fromFallback: true}, wantCause: ptr(catalog.CauseTimeout)},
		{name: "retries exhausted", callErr: exhaustedError{last: plain}, want: result{v: "cached", fromFallback: true}, wantCause: ptr(catalog.CauseRetriesExhausted)},
		{name: "other error", callErr: plain, want: result{v: "cached", fromFallback: true}, wantCause: ptr(catalog.CauseError)},
		{name: "cause not chosen", on: []catalog.Cause{catalog.CauseCircuitOpen}, callErr: plain, want: result{v: "partial", err: plain}},
		{name: "chosen cause", on: []catalog.Cause{catalog.CauseCircuitOpen}, callErr: openError{}, want: result{v: "cached", fromFallback: true}, wantCause: ptr(catalog.CauseCircuitOpen)},
		{
			name: "caller cancelled: nobody to answer",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, c := context.WithCancel(context.Background())
				c()
				return ctx, c
			},
			callErr: context.Canceled,
			want:    result{v: "partial", err: context.Canceled},
		},
		{
			name:    "business error: the caller gets the answer",
			callErr: classify.Business(plain),
			want:    result{v: "partial", err: classify.Business(plain)},
		},
		{
			name:    "business error wrapped",
			callErr: fmt.Errorf("pay: %w", classify.Business(plain)),
			want:    result{v: "partial", err: fmt.Errorf("pay: %w", classify.Business(plain))},
		},
		{
			name:    "business error behind a rejection's cause",
			on:      []catalog.Cause{catalog.CauseError},
			callErr: errors.Join(openError{}, classify.Business(plain)),
			want:    result{v: "partial", err: errors.Join(openError{}, classify.Business(plain))},
		},
		{
			name:    "the call reports the caller's cancellation: not a fallback cause",
			callErr: fmt.Errorf("query: %w", context.Canceled),
			want:    result{v: "partial", err: fmt.Errorf("query: %w", context.Canceled)},
		},
		{
			name: "caller's deadline passed: degraded answer",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			},
			callErr:   context.DeadlineExceeded,
			want:      result{v: "cached", fromFallback: true},
			wantCause: ptr(catalog.CauseTimeout),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := new(events.Hub)
			var got []events.Fallback
			hub.Fallbacks.Add(func(e events.Fallback) { got = append(got, e) })
			f, err := New("prices", Config{On: tt.on, Clock: clock.NewFake(epoch), Events: hub})
			require.NoError(t, err)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()

			var fbCause catalog.Cause
			var fbErr error
			var fbRan bool
			v, fromFallback, err := Call(ctx, f,
				func(context.Context) (string, error) {
					if tt.callErr != nil {
						return "partial", tt.callErr
					}
					return "real", nil
				},
				func(_ context.Context, cause catalog.Cause, err error) (string, error) {
					fbCause, fbErr, fbRan = cause, err, true
					return "cached", nil
				})
			assert.Equal(t, tt.want, result{v, fromFallback, err})

			st := f.Snapshot()
			var total uint64
			for _, n := range st.Calls {
				total += n
			}
			if tt.wantCause == nil {
				assert.Zero(t, total, "not counted")
				assert.Empty(t, got, "no event")
				assert.False(t, fbRan, "fallback not run")
				return
			}
			want := *tt.wantCause
			assert.Equal(t, uint64(1), total)
			assert.Equal(t, uint64(1), st.Calls[want])
			assert.Equal(t, want, fbCause, "the fallback receives the cause")
			assert.Equal(t, tt.callErr, fbErr, "and the call's error")
			assert.Equal(t, []events.Fallback{{Name: "prices", Cause: want, Err: tt.callErr, At: epoch, Context: ctx}}, got, "the event carries the call's context")
		})
	}
}

func TestFallbackOwnErrorIsReturned(t *testing.T) {
	f, err := New("prices", Config{})
	require.NoError(t, err)
	errNoCache := errors.New("no cached prices")
	v, fromFallback, err := Call(context.Background(), f,
		func(context.Context) (int, error) { return 0, openError{} },
		func(context.Context, catalog.Cause, error) (int, error) { return 0, errNoCache })
	assert.Zero(t, v)
	assert.True(t, fromFallback, "the fallback ran")
	assert.Same(t, errNoCache, err)
	assert.Equal(t, uint64(1), f.Snapshot().Calls[catalog.CauseCircuitOpen])
}

func TestDo(t *testing.T) {
	f, err := New("audit", Config{On: []catalog.Cause{catalog.CauseBulkheadFull}})
	require.NoError(t, err)
	full, _ := realErrors(t)
	queued := 0
	fb := func(_ context.Context, cause catalog.Cause, _ error) error {
		assert.Equal(t, catalog.CauseBulkheadFull, cause)
		queued++
		return nil
	}
	fromFallback, err := f.Do(context.Background(), func(context.Context) error { return full }, fb)
	assert.True(t, fromFallback)
	assert.NoError(t, err)
	fromFallback, err = f.Do(context.Background(), func(context.Context) error { return nil }, fb)
	assert.False(t, fromFallback)
	assert.NoError(t, err)
	plain := errors.New("boom")
	fromFallback, err = f.Do(context.Background(), func(context.Context) error { return plain }, fb)
	assert.False(t, fromFallback)
	assert.Same(t, plain, err)
	assert.Equal(t, 1, queued)
	assert.Equal(t, Snapshot{Calls: [catalog.NumCauses]uint64{catalog.CauseBulkheadFull: 1}}, f.Snapshot())
}

func TestCustomClassify(t *testing.T) {
	errStale := errors.New("stale")
	f, err := New("prices", Config{Classify: func(err error) catalog.Cause {
		if errors.Is(err, errStale) {
			return catalog.CauseTimeout
		}
		return catalog.Cause(200)
	}})
	require.NoError(t, err)
	cause, ok := f.Decide(context.Background(), errStale)
	assert.True(t, ok)
	assert.Equal(t, catalog.CauseTimeout, cause)
	cause, ok = f.Decide(context.Background(), openError{})
	assert.True(t, ok)
	assert.Equal(t, catalog.CauseError, cause, "an invalid cause counts as error")
	_, ok = f.Decide(context.Background(), nil)
	assert.False(t, ok, "nil errors have no fallback")
	_, ok = f.Decide(context.Background(), classify.Business(errStale))
	assert.False(t, ok, "a business error is never a fallback cause, whatever the classifier says")
	_, ok = f.Decide(context.Background(), fmt.Errorf("x: %w", context.Canceled))
	assert.False(t, ok, "nor is the caller's cancellation")
	assert.Equal(t, Snapshot{Calls: [catalog.NumCauses]uint64{catalog.CauseTimeout: 1, catalog.CauseError: 1}}, f.Snapshot())
}

func TestValue(t *testing.T) {
	f, err := New("prices", Config{})
	require.NoError(t, err)
	v, fromFallback, err := Call(context.Background(), f,
		func(context.Context) ([]string, error) { return nil, errors.New("down") },
		Value([]string{"default"}))
	require.NoError(t, err)
	assert.True(t, fromFallback)
	assert.Equal(t, []string{"default"}, v)
}

func ptr[T any](v T) *T { return &v }
