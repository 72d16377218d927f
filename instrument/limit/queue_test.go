package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

func fill(t *testing.T, l *Limiter, n int) []Permit {
	t.Helper()
	var ps []Permit
	for i := 0; i < n; i++ {
		p, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatalf("permit %d: %v", i, err)
		}
		ps = append(ps, p)
	}
	return ps
}

func TestRejectionWithoutQueue(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{InitialLimit: 2})
	ps := fill(t, l, 2)
	_, err := l.Acquire(context.Background())
	var le *LimitedError
	if !errors.Is(err, ErrLimited) || !errors.As(err, &le) || le.Reason != catalog.ReasonLimit || le.Limit != 2 || le.Name != "payments" || !le.Rejected() {
		t.Fatalf("Acquire at the limit = %#v", err)
	}
	ps[0].Done(nil)
	if _, err := l.Acquire(context.Background()); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	sn := l.Snapshot()
	if sn.Calls != [catalog.NumAdmissions]uint64{3, 1, 0} || sn.Rejections[catalog.ReasonLimit] != 1 || sn.InFlight != 2 {
		t.Errorf("snapshot = %+v", sn)
	}
}

// startWaiter starts Acquire in a goroutine and waits (on the fake clock's timer count, not on
// time) until it is queued.
func startWaiter(t *testing.T, clk *clock.Fake, l *Limiter, ctx context.Context, queued int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		p, err := l.Acquire(ctx)
		if err == nil {
			p.Done(context.Canceled)
		}
		done <- err
	}()
	if !clk.WaitForTimers(queued, nil) {
		t.Fatal("waiter did not queue")
	}
	return done
}

func TestQueueIsFIFOAndBounded(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{InitialLimit: 1, MaxWait: time.Second, MaxQueue: 2})
	ps := fill(t, l, 1)
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 1; i <= 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := l.Acquire(context.Background())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			p.Done(nil)
		}()
		if !clk.WaitForTimers(i, nil) {
			t.Fatal("waiter did not queue")
		}
	}
	// The queue holds two: a third caller is refused at once.
	_, err := l.Acquire(context.Background())
	var le *LimitedError
	if !errors.As(err, &le) || le.Reason != catalog.ReasonQueueFull {
		t.Fatalf("third waiter: %v, want queue_full", err)
	}
	if q := l.Snapshot().Queued; q != 2 {
		t.Fatalf("queued = %d, want 2", q)
	}
	ps[0].Done(nil)
	wg.Wait()
	if len(order) != 2 || order[0] != 1 || order[1] != 2 {
		t.Errorf("admission order %v, want [1 2]", order)
	}
	sn := l.Snapshot()
	if sn.InFlight != 0 || sn.Queued != 0 || sn.Calls[catalog.AdmissionPermitted] != 3 {
		t.Errorf("snapshot = %+v", sn)
	}
}

func TestQueueTimeoutDeadlineAndCancellation(t *testing.T) {
	clk := clock.NewFake(t0)
	hub := new(events.Hub)
	var rejections int
	hub.Rejections.Add(func(r events.Rejection) {
		if r.Primitive == catalog.Limiter && r.Name == "payments" {
			rejections++
		}
	})
	l := newLimiter(t, clk, Config{InitialLimit: 1, MaxWait: time.Second, Events: hub})
	fill(t, l, 1)

	// MaxWait passes.
	done := startWaiter(t, clk, l, context.Background(), 1)
	clk.Advance(time.Second)
	var le *LimitedError
	if err := <-done; !errors.As(err, &le) || le.Reason != catalog.ReasonQueueTimeout {
		t.Fatalf("after MaxWait: %v", err)
	}

	// The caller's deadline passes first: a rejection with reason deadline, wrapping the context's error.
	dctx := &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
	done = startWaiter(t, clk, l, dctx, 1)
	dctx.expire()
	if err := <-done; !errors.As(err, &le) || le.Reason != catalog.ReasonDeadline || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline while queued: %v", err)
	}

	// The caller cancels: aborted, neither a rejection nor ErrLimited.
	ctx, cancel2 := context.WithCancel(context.Background())
	done = startWaiter(t, clk, l, ctx, 1)
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, ErrLimited) {
		t.Fatalf("cancelled while queued: %v", err)
	}

	sn := l.Snapshot()
	want := [catalog.NumAdmissions]uint64{1, 2, 1}
	if sn.Calls != want || sn.Rejections[catalog.ReasonQueueTimeout] != 1 || sn.Rejections[catalog.ReasonDeadline] != 1 || sn.Queued != 0 {
		t.Errorf("snapshot = %+v, want calls %v", sn, want)
	}
	if rejections != 2 {
		t.Errorf("%d rejection events, want 2", rejections)
	}
}

// A limit that grows hands permits to queued callers without waiting for a release.
func TestGrowingLimitAdmitsWaiters(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{InitialLimit: 10, MinSamples: 10, MaxWait: time.Minute})
	// One window below the baseline-setting: 10 calls at 50ms set the baseline.
	ps := fill(t, l, 10)
	clk.Advance(service)
	for _, p := range ps[:9] {
		p.Done(nil)
	}
	ps = append(fill(t, l, 9), ps[9])
	done := startWaiter(t, clk, l, context.Background(), 1)
	// The window closes with latency at the baseline: the limit grows (+3·log10(10) = 13) and the
	// waiter is admitted.
	ps[9].Done(nil)
	for _, p := range ps[:9] {
		p.Done(nil)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if lim := l.Snapshot().Limit; lim != 13 {
		t.Errorf("limit = %d, want 13", lim)
	}
}

func TestDoClassifiesOutcomes(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(t, clk, Config{})
	ctx := context.Background()
	boom := errors.New("boom")
	_ = l.Do(ctx, func(context.Context) error { return nil })
	_ = l.Do(ctx, func(context.Context) error { return boom })
	_ = l.Do(ctx, func(context.Context) error { return context.DeadlineExceeded })
	_ = l.Do(ctx, func(context.Context) error { return context.Canceled })
	func() {
		defer func() { _ = recover() }()
		_ = l.Do(ctx, func(context.Context) error { panic("x") })
	}()
	v, err := Call(ctx, l, func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Fatalf("Call = %d, %v", v, err)
	}
	sn := l.Snapshot()
	want := [catalog.NumSampleKinds]uint64{3, 1, 2}
	if sn.Samples != want || sn.InFlight != 0 {
		t.Errorf("samples = %v (in flight %d), want %v", sn.Samples, sn.InFlight, want)
	}
}

func TestClosedPathDoesNotAllocate(t *testing.T) {
	l := newLimiter(t, clock.Real{}, Config{})
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		p, _ := l.Acquire(ctx)
		p.Done(nil)
	}); n != 0 {
		t.Errorf("Acquire+Release allocates %.1f times", n)
	}
	fn := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(1000, func() { _ = l.Do(ctx, fn) }); n != 0 {
		t.Errorf("Do allocates %.1f times", n)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	l, _ := New("x", Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, _ := l.Acquire(ctx)
		p.Done(nil)
	}
}

func BenchmarkDo(b *testing.B) {
	l, _ := New("x", Config{})
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = l.Do(ctx, fn)
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	l, _ := New("x", Config{MaxLimit: 1000, InitialLimit: 1000})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			p, _ := l.Acquire(ctx)
			p.Done(nil)
		}
	})
}

// deadlineCtx is a context whose deadline the test ends by hand (context.WithDeadline runs on the
// wall clock).
type deadlineCtx struct {
	context.Context
	mu   sync.Mutex
	done chan struct{}
	err  error
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *deadlineCtx) expire() {
	c.mu.Lock()
	c.err = context.DeadlineExceeded
	c.mu.Unlock()
	close(c.done)
}

// tickClock is a clock whose Now costs an atomic add: it isolates the limiter's own cost from
// the platform's clock (time.Now is a vDSO call of ~20–40 ns on most hosts, but a system call on
// some virtual machines).
type tickClock struct{ n atomic.Int64 }

func (c *tickClock) Now() time.Time { return t0.Add(time.Duration(c.n.Add(1000))) }

func (c *tickClock) NewTimer(d time.Duration) clock.Timer { return clock.Real{}.NewTimer(d) }

func BenchmarkAcquireReleaseCheapClock(b *testing.B) {
	l, _ := New("x", Config{Clock: &tickClock{}})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, _ := l.Acquire(ctx)
		p.Done(nil)
	}
}

// countingClock counts the readings of a fake clock.
type countingClock struct {
	*clock.Fake
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time { c.reads.Add(1); return c.Fake.Now() }

// The closed path times one call in a stride (a power of two, at most 64) that still leaves
// MinSamples/2 timed calls per window, and the window's sample is their average latency: the
// clock is read for about one call in four at the default limit of 20, and the latency
// measured is the calls' own.
func TestClosedPathTimesAFractionOfCalls(t *testing.T) {
	clk := &countingClock{Fake: clock.NewFake(t0)}
	l := newLimiter(t, clk, Config{})
	clk.reads.Store(0)
	const calls = 4000
	for i := 0; i < calls; i++ {
		p, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(30 * time.Millisecond)
		p.Done(nil)
	}
	// Two readings per timed call (admission and release); Advance does not read through Now.
	if reads := clk.reads.Load(); reads < 2*calls/4*8/10 || reads > 2*calls/4*12/10 {
		t.Errorf("%d clock readings for %d calls, want about %d (one call in 4 timed)", reads, calls, 2*calls/4)
	}
	sn := l.Snapshot()
	if sn.Sample != 30*time.Millisecond || sn.Baseline != 30*time.Millisecond {
		t.Errorf("sample %v, baseline %v, want 30ms (every call took 30ms)", sn.Sample, sn.Baseline)
	}
	if sn.Samples[catalog.SampleMeasured] != calls || sn.Limit != DefaultInitialLimit {
		t.Errorf("measured samples %d, limit %d: want %d and an unmoved %d (one call at a time)", sn.Samples[catalog.SampleMeasured], sn.Limit, calls, DefaultInitialLimit)
	}

	// At a limit of 640 the stride is capped at 64: 10 timed calls per window of 640.
	l = newLimiter(t, clk, Config{InitialLimit: 640, MaxLimit: 1000})
	clk.reads.Store(0)
	for i := 0; i < 64*100; i++ {
		p, _ := l.Acquire(context.Background())
		p.Done(nil)
	}
	if reads := clk.reads.Load(); reads < 2*100*8/10 || reads > 2*100*12/10 {
		t.Errorf("%d clock readings for 6400 calls at limit 640, want about 200 (one call in 64)", reads)
	}
}

// The wall clock is read through its monotonic part: readings never go back and are never 0
// (0 marks an untimed permit).
func TestRealClockReadingsAreMonotonic(t *testing.T) {
	l := newLimiter(t, clock.Real{}, Config{})
	if !l.realClock {
		t.Fatal("clock.Real not recognised")
	}
	prev := int64(1)
	for i := 0; i < 1000; i++ {
		now := l.now()
		if now < prev || now <= 0 {
			t.Fatalf("reading %d = %d after %d", i, now, prev)
		}
		prev = now
	}
}
