package timeout

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
)

// The wall-clock attempt context is created lazily; these tests check that it behaves like
// context.WithTimeoutCause whether or not anyone watched it.

func TestLazyUnwatchedAttemptPastItsDeadlineIsATimeout(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Millisecond})
	require.NoError(t, err)
	actx, a := to.Start(context.Background())
	start := time.Now()
	for time.Since(start) <= 2*time.Millisecond { // spin past the deadline without watching
	}
	assert.Equal(t, context.DeadlineExceeded, actx.Err(), "Err reports the deadline without Done having been called")
	assert.ErrorIs(t, context.Cause(actx), ErrTimedOut)
	<-actx.Done()
	err = a.Finish(errors.New("slow"))
	assert.ErrorIs(t, err, ErrTimedOut)
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 1}}, to.Snapshot())

	// Unwatched and not even asked: Finish still knows the deadline passed.
	_, a = to.Start(context.Background())
	start = time.Now()
	for time.Since(start) <= 2*time.Millisecond {
	}
	assert.ErrorIs(t, a.Finish(errors.New("slow")), ErrTimedOut)
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 2}}, to.Snapshot())
}

func TestLazyDerivedContextsAndAfterFunc(t *testing.T) {
	to, err := New("api", Config{Timeout: 5 * time.Millisecond})
	require.NoError(t, err)
	actx, a := to.Start(context.Background())
	child, cancel := context.WithCancel(actx)
	defer cancel()
	fired := make(chan struct{})
	stop := context.AfterFunc(actx, func() { close(fired) })
	defer stop()
	require.ErrorIs(t, waitForDone(child), context.DeadlineExceeded)
	<-fired
	assert.ErrorIs(t, context.Cause(child), ErrTimedOut, "a derived context carries the timeout as its cause")
	assert.ErrorIs(t, a.Finish(child.Err()), ErrTimedOut)
}

func TestLazyParentEndsTheAttempt(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)

	t.Run("cancelled before anyone watched", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		actx, a := to.Start(parent)
		cancel()
		assert.Equal(t, context.Canceled, actx.Err())
		assert.NotErrorIs(t, a.Finish(actx.Err()), ErrTimedOut)
	})
	t.Run("cancelled while watched", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		actx, a := to.Start(parent)
		done := actx.Done()
		cancel()
		<-done
		assert.NotErrorIs(t, a.Finish(actx.Err()), ErrTimedOut)
	})
	t.Run("the parent's equal deadline is the caller's, not ours", func(t *testing.T) {
		short, err := New("short", Config{Timeout: time.Millisecond})
		require.NoError(t, err)
		parent, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		actx, a := short.Start(parent)
		pd, _ := parent.Deadline()
		d, ok := actx.Deadline()
		assert.True(t, ok)
		if !d.Equal(pd) { // the parent's deadline was the earlier one
			assert.True(t, d.Before(pd))
		}
		err = waitForDone(actx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		if d.Equal(pd) {
			assert.NotErrorIs(t, a.Finish(err), ErrTimedOut)
		} else {
			a.Release()
		}
	})
	assert.Equal(t, uint64(0), to.Snapshot().Calls[catalog.TimeoutTimedOut])
}

func TestLazyReleaseEndsTheContext(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	// Released before anyone watched.
	actx, a := to.Start(context.Background())
	require.NoError(t, a.Finish(nil))
	<-actx.Done()
	assert.Equal(t, context.Canceled, actx.Err())
	// Watched, then released.
	actx, a = to.Start(context.Background())
	done := actx.Done()
	a.Release()
	<-done
	assert.Equal(t, context.Canceled, actx.Err())
	a.Release() // twice is harmless
}

func TestRecordKeepsTheContextAliveUntilRelease(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	actx, a := to.Start(context.Background())
	require.NoError(t, a.Record(nil))
	assert.NoError(t, actx.Err(), "the result is still being read under the attempt's context")
	a.Release()
	assert.Equal(t, context.Canceled, actx.Err())
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutSuccessful: 1}}, to.Snapshot())
}

func TestLazyValues(t *testing.T) {
	type key struct{}
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	actx, a := to.Start(context.WithValue(context.Background(), key{}, "v"))
	defer a.Release()
	assert.Equal(t, "v", actx.Value(key{}))
	_ = actx.Done()
	assert.Equal(t, "v", actx.Value(key{}))
}

func TestDoOnTheWallClockAllocatesOnce(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	assert.Equal(t, 1.0, testing.AllocsPerRun(1000, func() { _ = to.Do(ctx, fn) }),
		"an attempt that does not watch its context costs one allocation and no timer")
}
