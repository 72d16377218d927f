package timeout

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// The wall-clock attempt context is created lazily; these tests check that it behaves like
// context.WithTimeoutCause whether or not anyone watched it.

func TestLazyUnwatchedAttemptPastItsDeadlineIsATimeout(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	actx, a := to.Start(context.Background())
	expire(t, a) // the deadline passes without anyone watching
	assert.Equal(t, context.DeadlineExceeded, actx.Err(), "Err reports the deadline without Done having been called")
	assert.ErrorIs(t, context.Cause(actx), ErrTimedOut)
	<-actx.Done()
	err = a.Done(errors.New("slow"))
	assert.ErrorIs(t, err, ErrTimedOut)
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 1}}, to.Snapshot())

	// Unwatched and not even asked: Done still knows the deadline passed.
	_, a = to.Start(context.Background())
	expire(t, a)
	assert.ErrorIs(t, a.Done(errors.New("slow")), ErrTimedOut)
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 2}}, to.Snapshot())

	// Before its deadline, an unwatched attempt has not ended.
	actx, a = to.Start(context.Background())
	assert.NoError(t, actx.Err())
	assert.NoError(t, a.Done(nil))
}

func TestLazyDerivedContextsAndAfterFunc(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	actx, a := to.Start(context.Background())
	expire(t, a)
	child, cancel := context.WithCancel(actx)
	defer cancel()
	fired := make(chan struct{})
	stop := context.AfterFunc(actx, func() { close(fired) })
	defer stop()
	require.ErrorIs(t, waitForDone(child), context.DeadlineExceeded)
	<-fired
	assert.ErrorIs(t, context.Cause(child), ErrTimedOut, "a derived context carries the timeout as its cause")
	assert.ErrorIs(t, a.Done(child.Err()), ErrTimedOut)
}

func TestLazyParentEndsTheAttempt(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)

	t.Run("cancelled before anyone watched", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		actx, a := to.Start(parent)
		cancel()
		assert.Equal(t, context.Canceled, actx.Err())
		assert.NotErrorIs(t, a.Done(actx.Err()), ErrTimedOut)
	})
	t.Run("cancelled while watched", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		actx, a := to.Start(parent)
		done := actx.Done()
		cancel()
		<-done
		assert.NotErrorIs(t, a.Done(actx.Err()), ErrTimedOut)
	})
	t.Run("the parent's equal deadline is the caller's, not ours", func(t *testing.T) {
		// The parent's deadline has passed; the attempt started exactly limit before it, so its
		// own deadline is the same instant.
		pd := time.Now().Add(-time.Second)
		parent, cancel := context.WithDeadline(context.Background(), pd)
		defer cancel()
		const limit = time.Minute
		c := newLazyCtx(parent, int64(pd.Sub(monoBase))-int64(limit), limit, to.deadline)
		a := Attempt{t: to, ctx: c, lazy: c}
		d, ok := c.Deadline()
		assert.True(t, ok)
		assert.True(t, d.Equal(pd), "the deadline is the parent's")
		err := waitForDone(c)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, context.Cause(c), ErrTimedOut)
		assert.NotErrorIs(t, a.Done(err), ErrTimedOut)
	})
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutAborted: 2, catalog.TimeoutFailed: 1}}, to.Snapshot(),
		"the caller's cancellation is aborted, its deadline failed, neither timed out")
}

func TestLazyReleaseEndsTheContext(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	// Released before anyone watched.
	actx, a := to.Start(context.Background())
	require.NoError(t, a.Done(nil))
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

// ReleaseFunc is Release as a function value: it ends the attempt's context whether or not the
// context was watched, and costs nothing once it was (the inner context's cancel).
func TestReleaseFunc(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)

	actx, a := to.Start(context.Background())
	require.NoError(t, a.Record(nil))
	a.ReleaseFunc()() // never watched
	assert.Equal(t, context.Canceled, actx.Err())
	assert.False(t, a.fired())

	actx, a = to.Start(context.Background())
	done := actx.Done() // watched, as net/http does
	require.NoError(t, a.Record(nil))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = a.ReleaseFunc() }))
	a.ReleaseFunc()()
	<-done
	assert.Equal(t, context.Canceled, actx.Err())
	assert.Equal(t, context.Canceled, context.Cause(actx), "released, not timed out")
	assert.False(t, a.fired())
	a.Release() // releasing twice is harmless

	fake := clock.NewFake(time.Unix(0, 0))
	tf, err := New("api", Config{Timeout: time.Second, Clock: fake})
	require.NoError(t, err)
	fctx, fa := tf.Start(context.Background())
	fa.ReleaseFunc()()
	<-fctx.Done()
	assert.Equal(t, context.Canceled, fctx.Err())
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutSuccessful: 2}}, to.Snapshot())
}
