package timeout

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// guard bounds every wait of a wall-clock test.
const guard = 10 * time.Second

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name, tm string
		cfg      Config
		field    string
		value    any
		want     string
	}{
		{"empty name", "", Config{Timeout: time.Second}, "name", "", `timeout: name = "": must not be empty`},
		{"negative", "api", Config{Timeout: -time.Millisecond}, "Timeout", -time.Millisecond, `timeout "api": Timeout = -1ms: must not be negative (0 means the default, 1s)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to, err := New(tt.tm, tt.cfg)
			assert.Nil(t, to)
			var ce *catalog.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, string(catalog.Timeout), ce.Primitive)
			assert.Equal(t, tt.tm, ce.Name)
			assert.Equal(t, tt.field, ce.Field)
			assert.Equal(t, tt.value, ce.Value)
			assert.EqualError(t, err, tt.want)
		})
	}
	to, err := New("api", Config{Timeout: 350 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, "api", to.Name())
	assert.Equal(t, 350*time.Millisecond, to.Config().Timeout)

	zero, err := New("api", Config{})
	require.NoError(t, err, "the zero Config is a working default")
	assert.Equal(t, DefaultTimeout, zero.Config().Timeout)
	assert.Equal(t, time.Second, DefaultTimeout)
}

// waitForDone is an attempt that returns only when its context ends.
func waitForDone(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(guard):
		return errors.New("context never ended")
	}
}

func TestOwnDeadlineOnTheFakeClock(t *testing.T) {
	fake := clock.NewFake(epoch)
	to, err := New("api", Config{Timeout: 350 * time.Millisecond, Clock: fake})
	require.NoError(t, err)

	errc := make(chan error, 1)
	var deadline time.Time
	go func() {
		errc <- to.Do(context.Background(), func(ctx context.Context) error {
			deadline, _ = ctx.Deadline()
			return waitForDone(ctx)
		})
	}()
	require.True(t, fake.WaitForTimers(1, nil))
	fake.Advance(349 * time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("returned before the deadline: %v", err)
	default:
	}
	fake.Advance(time.Millisecond)
	err = <-errc

	assert.Equal(t, epoch.Add(350*time.Millisecond), deadline)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrTimedOut)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.EqualError(t, err, `timeout "api": attempt did not finish within 350ms: context deadline exceeded`)
	var te *TimedOutError
	require.ErrorAs(t, err, &te)
	assert.True(t, te.Timeout())
	cause, ok := te.FallbackCause()
	assert.True(t, ok)
	assert.Equal(t, catalog.CauseTimeout, cause)
	assert.Equal(t, context.DeadlineExceeded, te.Unwrap())
	var rej interface{ Rejected() bool }
	assert.False(t, errors.As(err, &rej), "a timed-out attempt ran: it is not a rejection")
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 1}}, to.Snapshot())
}

func TestOutcomes(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name      string
		parent    func() (context.Context, context.CancelFunc)
		attempt   func(ctx context.Context, fake *clock.Fake, cancelParent func()) error
		wantErr   error // errors.Is; nil for success
		timedOut  bool
		wantStats Snapshot
	}{
		{
			name:      "success",
			attempt:   func(context.Context, *clock.Fake, func()) error { return nil },
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutSuccessful: 1}},
		},
		{
			name:      "error before the deadline",
			attempt:   func(context.Context, *clock.Fake, func()) error { return errBoom },
			wantErr:   errBoom,
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutFailed: 1}},
		},
		{
			name: "result after the deadline fired is still a success",
			attempt: func(ctx context.Context, fake *clock.Fake, _ func()) error {
				fake.Advance(time.Second)
				<-ctx.Done()
				return nil
			},
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutSuccessful: 1}},
		},
		{
			name: "error after the deadline fired",
			attempt: func(ctx context.Context, fake *clock.Fake, _ func()) error {
				fake.Advance(time.Second)
				<-ctx.Done()
				return errBoom
			},
			wantErr:   errBoom,
			timedOut:  true,
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 1}},
		},
		{
			name: "caller cancels during the attempt",
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithCancel(context.Background())
			},
			attempt: func(ctx context.Context, _ *clock.Fake, cancelParent func()) error {
				cancelParent()
				<-ctx.Done()
				return ctx.Err()
			},
			wantErr:   context.Canceled,
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutAborted: 1}},
		},
		{
			name: "caller cancels, the attempt reports an error of its own",
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithCancel(context.Background())
			},
			attempt: func(_ context.Context, _ *clock.Fake, cancelParent func()) error {
				cancelParent()
				return errBoom // e.g. "connection closed" after the cancellation tore it down
			},
			wantErr:   errBoom,
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutAborted: 1}},
		},
		{
			name: "caller cancels after a result",
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithCancel(context.Background())
			},
			attempt: func(_ context.Context, _ *clock.Fake, cancelParent func()) error {
				cancelParent()
				return nil
			},
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutSuccessful: 1}},
		},
		{
			name: "own deadline fired, then the caller cancelled",
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithCancel(context.Background())
			},
			attempt: func(ctx context.Context, fake *clock.Fake, cancelParent func()) error {
				fake.Advance(time.Second)
				<-ctx.Done()
				cancelParent()
				return ctx.Err()
			},
			wantErr:   context.DeadlineExceeded,
			timedOut:  true,
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 1}},
		},
		{
			name: "caller's deadline already passed",
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			},
			attempt: func(ctx context.Context, _ *clock.Fake, _ func()) error {
				<-ctx.Done()
				return ctx.Err()
			},
			wantErr:   context.DeadlineExceeded,
			wantStats: Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutFailed: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := clock.NewFake(epoch)
			to, err := New("api", Config{Timeout: time.Second, Clock: fake})
			require.NoError(t, err)
			parent, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.parent != nil {
				parent, cancel = tt.parent()
			}
			defer cancel()
			err = to.Do(parent, func(ctx context.Context) error { return tt.attempt(ctx, fake, cancel) })
			if tt.wantErr == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.wantErr)
			}
			assert.Equal(t, tt.timedOut, errors.Is(err, ErrTimedOut), "ErrTimedOut")
			if !tt.timedOut && tt.wantErr != nil {
				assert.True(t, err == tt.wantErr, "errors other than timeouts are returned unchanged, got %v", err)
			}
			assert.Equal(t, tt.wantStats, to.Snapshot())
		})
	}
}

// expire moves a wall-clock attempt's own deadline into the past, as if its limit had elapsed
// while nobody watched its context: the deterministic stand-in for waiting on the wall clock.
func expire(t *testing.T, a Attempt) {
	t.Helper()
	require.NotNil(t, a.lazy, "a wall-clock attempt")
	require.False(t, a.lazy.ready.Load(), "nobody watched the context yet")
	a.lazy.at = monoNow() - 1
}

func TestOwnDeadlineOnTheWallClock(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	actx, a := to.Start(context.Background())
	expire(t, a)
	err = a.Done(waitForDone(actx))
	assert.ErrorIs(t, err, ErrTimedOut)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, context.Cause(actx), ErrTimedOut, "the attempt's context names the timeout as its cause")
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutTimedOut: 1}}, to.Snapshot())
}

func TestCallersDeadlineOnTheWallClockIsNotATimeout(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	parent, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	err = to.Do(parent, waitForDone)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ErrTimedOut)
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutFailed: 1}}, to.Snapshot())
}

func TestCallersCancellationOnTheWallClockIsAborted(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Hour})
	require.NoError(t, err)
	parent, cancel := context.WithCancel(context.Background())
	err = to.Do(parent, func(ctx context.Context) error {
		cancel()
		return waitForDone(ctx)
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrTimedOut)
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutAborted: 1}}, to.Snapshot(),
		"the caller's cancellation is never a failure")
}

func TestAttemptContext(t *testing.T) {
	type key struct{}
	fake := clock.NewFake(epoch)
	to, err := New("api", Config{Timeout: time.Second, Clock: fake})
	require.NoError(t, err)

	t.Run("deadline is the earlier of the caller's and the attempt's", func(t *testing.T) {
		parent, cancel := context.WithDeadline(context.Background(), epoch.Add(100*time.Millisecond))
		defer cancel()
		actx, a := to.Start(parent)
		d, ok := actx.Deadline()
		assert.True(t, ok)
		assert.Equal(t, epoch.Add(100*time.Millisecond), d)
		assert.NoError(t, a.Done(nil))
	})

	t.Run("values and derived contexts", func(t *testing.T) {
		parent := context.WithValue(context.Background(), key{}, "v")
		actx, a := to.Start(parent)
		assert.Equal(t, "v", actx.Value(key{}))
		child, cancel := context.WithCancel(actx)
		defer cancel()
		fake.Advance(time.Second)
		<-child.Done()
		assert.Equal(t, context.DeadlineExceeded, actx.Err())
		assert.Equal(t, context.DeadlineExceeded, child.Err(), "a derived context reports the deadline")
		err := a.Done(child.Err())
		assert.ErrorIs(t, err, ErrTimedOut)
	})

	t.Run("finishing ends the context and stops the timer", func(t *testing.T) {
		actx, a := to.Start(context.Background())
		assert.Equal(t, 1, fake.Timers())
		assert.NoError(t, a.Done(nil))
		<-actx.Done()
		assert.Equal(t, context.Canceled, actx.Err())
		assert.Equal(t, 0, fake.Timers())
	})
}

func TestPanicCountsAsFailedAndEndsTheContext(t *testing.T) {
	fake := clock.NewFake(epoch)
	to, err := New("api", Config{Timeout: time.Second, Clock: fake})
	require.NoError(t, err)
	var actx context.Context
	assert.PanicsWithValue(t, "boom", func() {
		_ = to.Do(context.Background(), func(ctx context.Context) error {
			actx = ctx
			panic("boom")
		})
	})
	<-actx.Done()
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = Call(context.Background(), to, func(context.Context) (int, error) { panic("boom") })
	})
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutFailed: 2}}, to.Snapshot())
}

func TestCallPassesTheValue(t *testing.T) {
	to, err := New("api", Config{Timeout: time.Second})
	require.NoError(t, err)
	v, err := Call(context.Background(), to, func(ctx context.Context) (string, error) {
		_, ok := ctx.Deadline()
		assert.True(t, ok)
		return "ok", nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.Equal(t, Snapshot{Calls: [catalog.NumTimeoutKinds]uint64{catalog.TimeoutSuccessful: 1}}, to.Snapshot())
}

func BenchmarkDo(b *testing.B) {
	to, err := New("api", Config{Timeout: time.Second})
	require.NoError(b, err)
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := to.Do(ctx, fn); err != nil {
			b.Fatal(err)
		}
	}
}
