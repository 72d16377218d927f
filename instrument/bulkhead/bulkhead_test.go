package bulkhead

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name  string
		bh    string
		cfg   Config
		field string
		value any
	}{
		{"empty name", "", Config{MaxConcurrent: 1}, "name", ""},
		{"negative permits", "db", Config{MaxConcurrent: -3}, "MaxConcurrent", -3},
		{"too many permits", "db", Config{MaxConcurrent: 1 << 40}, "MaxConcurrent", 1 << 40},
		{"negative wait", "db", Config{MaxConcurrent: 1, MaxWait: -time.Second}, "MaxWait", -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.bh, tt.cfg)
			assert.Nil(t, b)
			var ce *catalog.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, string(catalog.Bulkhead), ce.Primitive)
			assert.Equal(t, tt.bh, ce.Name)
			assert.Equal(t, tt.field, ce.Field)
			assert.Equal(t, tt.value, ce.Value)
		})
	}
	_, err := New("db", Config{MaxWait: -time.Second})
	assert.EqualError(t, err, `bulkhead "db": MaxWait = -1s: must not be negative (0 rejects at once)`)

	b, err := New("db", Config{MaxConcurrent: 3, MaxWait: time.Second})
	require.NoError(t, err)
	assert.Equal(t, "db", b.Name())
	assert.Equal(t, 3, b.Config().MaxConcurrent)
	assert.Equal(t, time.Second, b.Config().MaxWait)
	assert.Equal(t, 3, b.Snapshot().MaxConcurrent)
}

func TestZeroConfigIsAWorkingDefault(t *testing.T) {
	b, err := New("db", Config{})
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxConcurrent, b.Config().MaxConcurrent)
	assert.Equal(t, time.Duration(0), b.Config().MaxWait)
	var releases []Permit
	for range DefaultMaxConcurrent {
		release, err := b.Acquire(context.Background())
		require.NoError(t, err)
		releases = append(releases, release)
	}
	_, err = b.Acquire(context.Background())
	assert.ErrorIs(t, err, ErrFull, "25 permits, rejection at once")
	for _, r := range releases {
		r.Done()
	}
	sn := b.Snapshot()
	assert.Equal(t, [catalog.NumAdmissions]uint64{catalog.AdmissionPermitted: 25, catalog.AdmissionRejected: 1}, sn.Calls)
	assert.Equal(t, uint64(26), sn.Wait.ZeroCount, "every decision was made at once")
}

func TestFullError(t *testing.T) {
	b, err := New("payments", Config{MaxConcurrent: 1})
	require.NoError(t, err)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	defer release.Done()

	_, err = b.Acquire(context.Background())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrFull)
	assert.EqualError(t, err, `bulkhead "payments" full: 1 calls in flight`)
	var rej interface{ Rejected() bool }
	require.ErrorAs(t, err, &rej)
	assert.True(t, rej.Rejected())
	var fc interface{ FallbackCause() (catalog.Cause, bool) }
	require.ErrorAs(t, err, &fc)
	cause, ok := fc.FallbackCause()
	assert.True(t, ok)
	assert.Equal(t, catalog.CauseBulkheadFull, cause)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)

	waiting := &FullError{Name: "x", MaxConcurrent: 2, MaxWait: 100 * time.Millisecond}
	assert.EqualError(t, waiting, `bulkhead "x" full: 2 calls in flight, no permit within 100ms`)
}

// TestThousandCallers is the acceptance test: 1,000 goroutines against 10 permits. The
// first ten callers admitted wait for each other inside the call, so the maximum is reached for
// certain; the test checks it is never exceeded and every caller is counted once.
func TestThousandCallers(t *testing.T) {
	tests := []struct {
		name          string
		maxWait       time.Duration
		clock         clock.Clock
		wantPermitted int // -1: any
	}{
		{"reject at once", 0, nil, 10},
		{"wait for a permit (timer never fires)", time.Hour, clock.NewFake(epoch), 1000},
		{"wait briefly on the wall clock", time.Millisecond, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const callers, permits = 1000, 10
			b, err := New("dep", Config{MaxConcurrent: permits, MaxWait: tt.maxWait, Clock: tt.clock})
			require.NoError(t, err)

			var cur, peak atomic.Int64
			var firstWave sync.WaitGroup
			firstWave.Add(permits)
			var entered atomic.Int64
			var permitted, rejected atomic.Int64

			// With MaxWait 0 the first wave must not leave before every caller has been decided,
			// or later callers would find free permits; `decided` tracks that.
			var decided sync.WaitGroup
			decided.Add(callers)
			holdFirstWave := tt.wantPermitted == permits

			var wg sync.WaitGroup
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := b.Do(context.Background(), func(context.Context) error {
						decided.Done()
						n := cur.Add(1)
						for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
						}
						if entered.Add(1) <= permits {
							firstWave.Done()
							firstWave.Wait()
							if holdFirstWave {
								decided.Wait()
							}
						}
						cur.Add(-1)
						return nil
					})
					if err != nil {
						decided.Done()
						assert.ErrorIs(t, err, ErrFull)
						rejected.Add(1)
						return
					}
					permitted.Add(1)
				}()
			}
			wg.Wait()

			assert.Equal(t, int64(permits), peak.Load(), "in-flight maximum")
			assert.Equal(t, int64(callers), permitted.Load()+rejected.Load())
			if tt.wantPermitted >= 0 {
				assert.Equal(t, int64(tt.wantPermitted), permitted.Load())
			}
			st := b.Snapshot()
			assert.Equal(t, uint64(permitted.Load()), st.Calls[catalog.AdmissionPermitted])
			assert.Equal(t, uint64(rejected.Load()), st.Calls[catalog.AdmissionRejected])
			assert.Equal(t, 0, st.InFlight)
			assert.Equal(t, 0, st.Waiting)
			assert.Equal(t, uint64(callers), st.Wait.Count, "one wait observation per decision")
		})
	}
}

// queue starts n callers that each wait for a permit of b (whose clock is fake) and returns a
// channel receiving each caller's index as it is admitted; it returns only once all n are
// queued, in index order.
func queue(t *testing.T, b *Bulkhead, fake *clock.Fake, n int, wg *sync.WaitGroup) chan int {
	t.Helper()
	admitted := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, b.Do(context.Background(), func(context.Context) error {
				admitted <- i
				return nil
			}))
		}()
		require.True(t, fake.WaitForTimers(i+1, nil), "caller %d queued", i)
	}
	return admitted
}

func TestWaitersAreAdmittedInFIFOOrder(t *testing.T) {
	fake := clock.NewFake(epoch)
	b, err := New("dep", Config{MaxConcurrent: 1, MaxWait: time.Hour, Clock: fake})
	require.NoError(t, err)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)

	const n = 20
	var wg sync.WaitGroup
	admitted := queue(t, b, fake, n, &wg)
	assert.Equal(t, n, b.Snapshot().Waiting)
	assert.Equal(t, 1, b.Snapshot().InFlight)

	fake.Advance(30 * time.Millisecond) // every waiter has waited 30ms when admitted
	release.Done()
	wg.Wait()
	close(admitted)
	var order []int
	for i := range admitted {
		order = append(order, i)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, order)

	st := b.Snapshot()
	assert.Equal(t, uint64(n+1), st.Calls[catalog.AdmissionPermitted])
	assert.Equal(t, 0, st.InFlight)
	assert.Equal(t, 0, st.Waiting)
	// One decision at once (the zero bucket), twenty after 30ms (le=0.03125 …).
	cum := st.Wait.Cumulative(catalog.WaitBuckets)
	assert.Equal(t, uint64(1), st.Wait.ZeroCount)
	assert.Equal(t, uint64(1), cum[0.015625])
	assert.Equal(t, uint64(n+1), cum[0.03125])
	assert.Equal(t, uint64(n+1), st.Wait.Count)
	assert.InDelta(t, 0.6, st.Wait.Sum, 1e-9)
}

func TestNewcomersDoNotOvertakeWaiters(t *testing.T) {
	fake := clock.NewFake(epoch)
	b, err := New("dep", Config{MaxConcurrent: 2, MaxWait: time.Hour, Clock: fake})
	require.NoError(t, err)
	r1, err := b.Acquire(context.Background())
	require.NoError(t, err)
	r2, err := b.Acquire(context.Background())
	require.NoError(t, err)

	var wg sync.WaitGroup
	admittedWaiter := make(chan struct{})
	holdWaiter := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		assert.NoError(t, b.Do(context.Background(), func(context.Context) error {
			close(admittedWaiter)
			<-holdWaiter
			return nil
		}))
	}()
	require.True(t, fake.WaitForTimers(1, nil))

	r1.Done() // handed to the waiter, not freed
	<-admittedWaiter
	st := b.Snapshot()
	assert.Equal(t, 2, st.InFlight)
	assert.Equal(t, 0, st.Waiting)

	// A newcomer finds no free permit: the released one went to the waiter. (A free permit would
	// be taken without looking at the context; this one can only queue, and its context is over.)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)

	close(holdWaiter)
	wg.Wait()
	r2.Done()
	assert.Equal(t, 0, b.Snapshot().InFlight)
}

func TestMaxWaitRejectsWhenTheFakeClockPassesIt(t *testing.T) {
	fake := clock.NewFake(epoch)
	hub := new(events.Hub)
	var got []events.Rejection
	hub.Rejections.Add(func(e events.Rejection) { got = append(got, e) })
	b, err := New("dep", Config{MaxConcurrent: 1, MaxWait: 200 * time.Millisecond, Clock: fake, Events: hub})
	require.NoError(t, err)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	defer release.Done()

	type key struct{}
	callCtx := context.WithValue(context.Background(), key{}, "the caller's")
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(callCtx)
		errc <- err
	}()
	require.True(t, fake.WaitForTimers(1, nil))
	fake.Advance(199 * time.Millisecond)
	assert.Equal(t, 1, b.Snapshot().Waiting, "still waiting 1ms before MaxWait")
	fake.Advance(time.Millisecond)
	err = <-errc
	require.ErrorIs(t, err, ErrFull)
	assert.EqualError(t, err, `bulkhead "dep" full: 1 calls in flight, no permit within 200ms`)

	st := b.Snapshot()
	assert.Equal(t, 0, st.Waiting)
	assert.Equal(t, 1, st.InFlight)
	assert.Equal(t, uint64(1), st.Calls[catalog.AdmissionPermitted])
	assert.Equal(t, uint64(1), st.Calls[catalog.AdmissionRejected])
	cum := st.Wait.Cumulative(catalog.WaitBuckets)
	assert.Equal(t, uint64(1), cum[0.125], "the permitted caller did not wait")
	assert.Equal(t, uint64(2), cum[0.25], "the rejected caller waited 200ms")
	assert.InDelta(t, 0.2, st.Wait.Sum, 1e-9)
	require.Len(t, got, 1)
	assert.Equal(t, events.Rejection{Primitive: catalog.Bulkhead, Name: "dep", At: epoch.Add(200 * time.Millisecond), Context: callCtx}, got[0],
		"the event carries the refused call's context")
}

func TestWaitingStopsWhenTheContextEnds(t *testing.T) {
	// The caller's cancellation is aborted — never a rejection, no Rejection event; its deadline
	// passing while it waits is a rejection (the saturation cost the caller its deadline).
	tests := []struct {
		name   string
		cancel func(context.Context) (context.Context, func())
		want   error
		kind   catalog.Admission
	}{
		{"cancelled", func(p context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancel(p)
			return ctx, cancel
		}, context.Canceled, catalog.AdmissionAborted},
		{"cause", func(p context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(p)
			return ctx, func() { cancel(errShutdown) }
		}, errShutdown, catalog.AdmissionAborted},
		{"deadline", func(context.Context) (context.Context, func()) {
			ctx := newDeadlineCtx()
			return ctx, ctx.expire
		}, context.DeadlineExceeded, catalog.AdmissionRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := clock.NewFake(epoch)
			hub := new(events.Hub)
			var rejections []events.Rejection
			hub.Rejections.Add(func(e events.Rejection) { rejections = append(rejections, e) })
			b, err := New("dep", Config{MaxConcurrent: 1, MaxWait: time.Hour, Clock: fake, Events: hub})
			require.NoError(t, err)
			release, err := b.Acquire(context.Background())
			require.NoError(t, err)

			ctx, cancel := tt.cancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				errc <- b.Do(ctx, func(context.Context) error {
					t.Error("must not run")
					return nil
				})
			}()
			require.True(t, fake.WaitForTimers(1, nil))
			fake.Advance(10 * time.Millisecond)
			cancel()
			err = <-errc
			require.ErrorIs(t, err, tt.want)
			var rej interface{ Rejected() bool }
			if tt.kind == catalog.AdmissionRejected {
				// Refused without running, like a MaxWait expiry: stormwatch's own rejection.
				assert.ErrorIs(t, err, ErrFull)
				require.ErrorAs(t, err, &rej)
				assert.True(t, rej.Rejected())
				assert.EqualError(t, err, `bulkhead "dep" full: 1 calls in flight, no permit before the caller's deadline: context deadline exceeded`)
			} else {
				assert.NotErrorIs(t, err, ErrFull)
				assert.False(t, errors.As(err, &rej), "a cancellation is not a rejection")
				assert.Contains(t, err.Error(), `bulkhead "dep": gave up waiting for a permit`)
			}
			assert.Equal(t, 0, fake.Timers(), "the MaxWait timer is stopped")

			st := b.Snapshot()
			assert.Equal(t, 0, st.Waiting)
			assert.Equal(t, 1, st.InFlight)
			want := [catalog.NumAdmissions]uint64{catalog.AdmissionPermitted: 1}
			want[tt.kind]++
			assert.Equal(t, want, st.Calls)
			assert.Equal(t, uint64(2), st.Wait.Count, "every admission observed once")
			if tt.kind == catalog.AdmissionRejected {
				assert.Len(t, rejections, 1)
			} else {
				assert.Empty(t, rejections, "the caller's cancellation is not a rejection")
			}
			release.Done()
			assert.Equal(t, 0, b.Snapshot().InFlight, "the permit went back to the pool, not to the gone waiter")
		})
	}
}

var errShutdown = errors.New("shutting down")

// deadlineCtx is a caller's context whose deadline passes when expire is called.
type deadlineCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *deadlineCtx) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Deadline() (time.Time, bool) { return epoch.Add(time.Hour), true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestAlreadyEndedContextDoesNotQueue(t *testing.T) {
	fake := clock.NewFake(epoch)
	b, err := New("dep", Config{MaxConcurrent: 1, MaxWait: time.Hour, Clock: fake})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	// A free permit is taken without looking at ctx (the call itself will).
	release, err := b.Acquire(ctx)
	require.NoError(t, err)
	_, err = b.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, fake.Timers())
	release.Done()
	st := b.Snapshot()
	assert.Equal(t, uint64(1), st.Calls[catalog.AdmissionPermitted])
	assert.Equal(t, uint64(1), st.Calls[catalog.AdmissionAborted], "a cancelled caller is aborted, not rejected")
	assert.Equal(t, uint64(0), st.Calls[catalog.AdmissionRejected])
	assert.Equal(t, uint64(2), st.Wait.ZeroCount, "neither decision waited")
}

func TestPermitIsReleasedOnPanicAndCancellation(t *testing.T) {
	b, err := New("dep", Config{MaxConcurrent: 2})
	require.NoError(t, err)

	for range 5 {
		assert.PanicsWithValue(t, "boom", func() {
			_ = b.Do(context.Background(), func(context.Context) error { panic("boom") })
		})
		assert.PanicsWithValue(t, "boom", func() {
			_, _ = Call(context.Background(), b, func(context.Context) (int, error) { panic("boom") })
		})
	}
	assert.Equal(t, 0, b.Snapshot().InFlight)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 2)
	started := make(chan struct{}, 2)
	for range 2 {
		go func() {
			errc <- b.Do(ctx, func(ctx context.Context) error {
				started <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			})
		}()
	}
	<-started
	<-started
	assert.Equal(t, 2, b.Snapshot().InFlight)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.ErrorIs(t, <-errc, context.Canceled)
	st := b.Snapshot()
	assert.Equal(t, 0, st.InFlight)
	assert.Equal(t, uint64(12), st.Calls[catalog.AdmissionPermitted])
	assert.Equal(t, uint64(0), st.Calls[catalog.AdmissionRejected])
}

func TestCallReturnsTheValue(t *testing.T) {
	b, err := New("dep", Config{MaxConcurrent: 1})
	require.NoError(t, err)
	v, err := Call(context.Background(), b, func(context.Context) (string, error) { return "ok", nil })
	require.NoError(t, err)
	assert.Equal(t, "ok", v)

	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	v, err = Call(context.Background(), b, func(context.Context) (string, error) {
		t.Error("must not run")
		return "ran", nil
	})
	require.ErrorIs(t, err, ErrFull)
	assert.Empty(t, v)
	release.Done()
}

func TestReleaseMoreThanAcquiredPanics(t *testing.T) {
	b, err := New("dep", Config{MaxConcurrent: 1})
	require.NoError(t, err)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	release.Done()
	assert.PanicsWithValue(t, `bulkhead "dep": release called more often than a permit was acquired`, release.Done)

	_, err = b.Acquire(context.Background())
	require.NoError(t, err)
	noopRelease, err := b.Acquire(context.Background())
	require.ErrorIs(t, err, ErrFull)
	assert.NotPanics(t, noopRelease.Done, "the Permit returned with an error is inert")
	assert.Equal(t, 1, b.Snapshot().InFlight)
}

func TestRejectionEventsOnlyWhenListened(t *testing.T) {
	hub := new(events.Hub)
	b, err := New("dep", Config{MaxConcurrent: 1, Events: hub})
	require.NoError(t, err)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	defer release.Done()
	_, err = b.Acquire(context.Background()) // no listener: nothing to observe, nothing breaks
	require.ErrorIs(t, err, ErrFull)

	var n int
	remove := hub.Rejections.Add(func(e events.Rejection) {
		n++
		assert.Equal(t, catalog.Bulkhead, e.Primitive)
		assert.Equal(t, "dep", e.Name)
		assert.Empty(t, e.State)
	})
	_, err = b.Acquire(context.Background())
	require.ErrorIs(t, err, ErrFull)
	remove()
	_, err = b.Acquire(context.Background())
	require.ErrorIs(t, err, ErrFull)
	assert.Equal(t, 1, n)
	assert.Equal(t, uint64(3), b.Snapshot().Calls[catalog.AdmissionRejected])
}

func TestLongWaitsCountAboveTheLastBound(t *testing.T) {
	fake := clock.NewFake(epoch)
	b, err := New("dep", Config{MaxConcurrent: 1, MaxWait: 10 * time.Second, Clock: fake})
	require.NoError(t, err)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(context.Background())
		errc <- err
	}()
	require.True(t, fake.WaitForTimers(1, nil))
	fake.Advance(10 * time.Second) // beyond the last classic bound (8 s): only in +Inf
	require.ErrorIs(t, <-errc, ErrFull)
	release.Done()
	st := b.Snapshot()
	last := catalog.WaitBuckets[len(catalog.WaitBuckets)-1]
	assert.Equal(t, uint64(1), st.Wait.Cumulative(catalog.WaitBuckets)[last])
	assert.Equal(t, uint64(2), st.Wait.Count)
	assert.InDelta(t, 10.0, st.Wait.Sum, 1e-9)
}

func TestUncontendedAcquireReleaseDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	b, err := New("dep", Config{MaxConcurrent: 4})
	require.NoError(t, err)
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	allocs := testing.AllocsPerRun(1000, func() {
		release, err := b.Acquire(ctx)
		if err != nil {
			panic(err)
		}
		release.Done()
		_ = b.Do(ctx, fn)
	})
	assert.Zero(t, allocs)
	// Rejections reuse the bulkhead's FullError.
	full, err := New("full", Config{MaxConcurrent: 1})
	require.NoError(t, err)
	release, err := full.Acquire(ctx)
	require.NoError(t, err)
	defer release.Done()
	allocs = testing.AllocsPerRun(1000, func() { _, _ = full.Acquire(ctx) })
	assert.Zero(t, allocs)
}

func BenchmarkAcquireRelease(b *testing.B) {
	bh, err := New("dep", Config{MaxConcurrent: 1 << 20})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		release, err := bh.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		release.Done()
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	bh, err := New("dep", Config{MaxConcurrent: 1 << 20})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			release, err := bh.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			release.Done()
		}
	})
}

// TestStressWaitersTimersAndCancellations mixes every path — fast admissions, hand-offs, MaxWait
// expiries and cancelled waits — and checks the invariants afterwards.
func TestStressWaitersTimersAndCancellations(t *testing.T) {
	const permits, workers, rounds = 3, 64, 60
	b, err := New("dep", Config{MaxConcurrent: permits, MaxWait: time.Millisecond})
	require.NoError(t, err)
	var cur, peak atomic.Int64
	var admitted, refused, cancelled atomic.Uint64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				ctx, cancel := context.WithCancel(context.Background())
				if (w+i)%7 == 0 {
					go cancel() // races with the wait
				}
				err := b.Do(ctx, func(context.Context) error {
					n := cur.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					for range (w + i) % 5 {
						runtime.Gosched()
					}
					cur.Add(-1)
					return nil
				})
				cancel()
				if err != nil {
					switch {
					case errors.Is(err, ErrFull):
						refused.Add(1)
					case errors.Is(err, context.Canceled):
						cancelled.Add(1)
					default:
						t.Errorf("unexpected error %v", err)
					}
					continue
				}
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("permitted %d, rejected %d, aborted %d", admitted.Load(), refused.Load(), cancelled.Load())
	assert.LessOrEqual(t, peak.Load(), int64(permits))
	st := b.Snapshot()
	assert.Equal(t, admitted.Load(), st.Calls[catalog.AdmissionPermitted])
	assert.Equal(t, refused.Load(), st.Calls[catalog.AdmissionRejected])
	assert.Equal(t, cancelled.Load(), st.Calls[catalog.AdmissionAborted])
	assert.Equal(t, uint64(workers*rounds), st.Calls[catalog.AdmissionPermitted]+st.Calls[catalog.AdmissionRejected]+st.Calls[catalog.AdmissionAborted])
	assert.Equal(t, 0, st.InFlight)
	assert.Equal(t, 0, st.Waiting)
	assert.Equal(t, uint64(workers*rounds), st.Wait.Count)
}
