package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// state packs the permits in use (low 32 bits) and the queued callers (high 32 bits) into one
// word: a value below the limit means "nobody waits and a permit is free".
const (
	waiterOne    = uint64(1) << 32
	waiterDec    = ^(waiterOne - 1) // adding it subtracts one waiter
	inflightMask = waiterOne - 1
)

// Limiter is a named adaptive concurrency limiter. Create it with [New]; it is safe for
// concurrent use.
type Limiter struct {
	name  string
	cfg   Config
	clock clock.Clock
	hub   *events.Hub

	limit atomic.Uint64 // the admission limit (integer part of est, within the bounds)
	state atomic.Uint64 // in-flight and queued, see above

	// The current window, filled by Permit.Done with atomic adds only. It holds the samples
	// (measured and dropped) counted since winStart; the latency of one admitted call in
	// sampleMask+1 is measured and summed.
	winStart   atomic.Uint64 // samples[measured]+samples[dropped] when the window opened
	winSum     atomic.Uint64 // the timed calls' latencies, in nanoseconds
	winTimed   atomic.Uint64 // the timed calls
	winDrops   atomic.Uint64 // dropped samples
	winPeak    atomic.Uint64 // peak in-flight seen at admission
	sampleMask atomic.Uint64 // a call is timed when its scattered admission number & sampleMask == 0

	epoch     time.Time // the clock's reading at New: latencies are read as offsets from it
	realClock bool      // the clock is clock.Real: read its monotonic part alone

	calls      [catalog.NumAdmissions]atomic.Uint64
	rejections [catalog.NumLimitReasons]atomic.Uint64
	samples    [catalog.NumSampleKinds]atomic.Uint64
	baselineNs atomic.Uint64 // published copy of baseline, for Snapshot and the retry hint
	sampleNs   atomic.Uint64 // the last window's average latency

	mu         sync.Mutex // guards the queue, est and baseline
	est        float64    // the limit with its fractional part
	baseline   float64    // no-load latency estimate, in nanoseconds; 0 before the first window
	head, tail *waiter
}

type waiter struct {
	prev, next *waiter
	ready      chan struct{} // closed when the waiter is handed a permit
	granted    bool          // guarded by mu
}

// New returns a limiter called name, configured by cfg (the zero Config is a working default).
// An invalid field is a [*catalog.ConfigError] naming it and its value.
func New(name string, cfg Config) (*Limiter, error) {
	if err := cfg.validate(name); err != nil {
		return nil, err
	}
	l := &Limiter{name: name, cfg: cfg, clock: cfg.Clock, hub: cfg.Events, est: float64(cfg.InitialLimit)}
	_, l.realClock = cfg.Clock.(clock.Real)
	l.epoch = l.clock.Now()
	l.limit.Store(uint64(cfg.InitialLimit))
	l.sampleMask.Store(l.strideMask())
	return l, nil
}

// Name returns the limiter's name.
func (l *Limiter) Name() string { return l.name }

// Config returns the limiter's configuration with defaults applied.
func (l *Limiter) Config() Config { return l.cfg }

// Permit is an admitted call's right to run. Give it back exactly once with [Permit.Done]. The
// zero Permit, returned with an error, is inert.
type Permit struct {
	l     *Limiter
	start int64 // nanoseconds since the limiter's epoch, plus one; 0: the call is not timed
}

// Acquire takes a permit, waiting up to MaxWait (and no longer than ctx allows) in the queue when
// the limit is reached. On failure the Permit is inert and err is a [*LimitedError]
// (errors.Is(err, ErrLimited)) — the limit was reached, the queue was full, MaxWait passed or
// ctx's deadline passed while queued — or the context's error, wrapped, when ctx was cancelled
// while queued (aborted: neither a rejection nor a failure).
func (l *Limiter) Acquire(ctx context.Context) (Permit, error) {
	limit := l.limit.Load()
	for s := l.state.Load(); s < limit; s = l.state.Load() {
		if l.state.CompareAndSwap(s, s+1) {
			return l.admitted(s + 1), nil
		}
	}
	return l.acquireSlow(ctx)
}

func (l *Limiter) admitted(inflight uint64) Permit {
	n := l.calls[catalog.AdmissionPermitted].Add(1)
	if inflight > l.winPeak.Load() {
		l.raisePeak(inflight)
	}
	if (n*fib)>>40&l.sampleMask.Load() != 0 {
		return Permit{l: l}
	}
	return Permit{l: l, start: l.now()}
}

// now reads the clock as nanoseconds since the limiter's epoch, plus one (never 0). The wall
// clock is read through time.Since, which reads only the monotonic clock: half the cost of
// time.Now.
func (l *Limiter) now() int64 {
	if l.realClock {
		return int64(time.Since(l.epoch)) + 1
	}
	return int64(l.clock.Now().Sub(l.epoch)) + 1
}

// strideMask returns the sampling mask for the current window size: one call in 2^k is timed,
// 2^k the largest power of two (at most 64) that still times MinSamples/2 calls per window.
func (l *Limiter) strideMask() uint64 {
	per := l.windowSize() / uint64(max(l.cfg.MinSamples/2, 1))
	stride := uint64(1)
	for stride*2 <= min(per, maxStride) {
		stride *= 2
	}
	return stride - 1
}

// fib scatters consecutive admission numbers (Fibonacci hashing), so that the timed calls do
// not beat with a periodic pattern of the load.
const fib = 0x9E3779B97F4A7C15

// maxStride bounds the sampling stride: at least one call in 64 is timed.
const maxStride = 64

func (l *Limiter) raisePeak(v uint64) {
	for p := l.winPeak.Load(); v > p; p = l.winPeak.Load() {
		if l.winPeak.CompareAndSwap(p, v) {
			return
		}
	}
}

// Done gives the permit back, exactly once, and teaches the limiter what the call says about
// the dependency, from its error — as the breaker's Permit.Done does:
//   - nil, or an error that is an answer (a business error, a 4xx): the call's latency is a
//     sample;
//   - a sign of overload — a timeout (context.DeadlineExceeded included), 429, 5xx, connection
//     refused, gRPC UNAVAILABLE, RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED: a drop, which shrinks
//     the limit by Backoff (and a fast refusal never passes for a low latency);
//   - a cancellation or one of stormwatch's own refusals (the call never reached the
//     dependency): nothing is learned. Report the context's error when the caller left.
func (p Permit) Done(err error) {
	if err == nil {
		p.finish(catalog.SampleMeasured)
		return
	}
	p.finish(sampleKind(err))
}

// sampleKind classifies a failed call for Done.
func sampleKind(err error) catalog.SampleKind {
	switch classify.ClassifyError(err, true).Class {
	case catalog.ClassCanceled, catalog.ClassRejected:
		return catalog.SampleIgnored
	case catalog.ClassHTTP429, catalog.ClassHTTP5xx, catalog.ClassTimeout, catalog.ClassConnRefused,
		catalog.ClassGRPCUnavailable, catalog.ClassGRPCResourceExhausted, catalog.ClassGRPCDeadline:
		return catalog.SampleDropped
	}
	return catalog.SampleMeasured
}

func (p Permit) finish(kind catalog.SampleKind) {
	l := p.l
	if l == nil {
		return
	}
	var full bool
	switch kind {
	case catalog.SampleMeasured:
		if p.start != 0 {
			l.winSum.Add(uint64(max(l.now()-p.start, 0)))
			l.winTimed.Add(1)
		}
		n := l.samples[kind].Add(1) + l.samples[catalog.SampleDropped].Load()
		full = n-l.winStart.Load() >= l.windowSize()
	case catalog.SampleDropped:
		l.winDrops.Add(1)
		n := l.samples[kind].Add(1) + l.samples[catalog.SampleMeasured].Load()
		full = n-l.winStart.Load() >= l.windowSize()
	default:
		l.samples[kind].Add(1)
	}
	l.releasePermit()
	if full {
		l.update()
	}
}

// Do runs fn under a permit and returns its error, or the admission error without running fn.
// The permit is given back when fn returns (classified by [Permit.Done]; a call whose context
// was cancelled teaches nothing) or panics (ignored).
func (l *Limiter) Do(ctx context.Context, fn func(context.Context) error) error {
	p, err := l.Acquire(ctx)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			p.finish(catalog.SampleIgnored)
		}
	}()
	err = fn(ctx)
	done = true
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		p.Done(ctx.Err()) // the caller left: whatever fn returned says nothing of the dependency
	} else {
		p.Done(err)
	}
	return err
}

// Call runs fn under a permit of l and returns its result, or the zero value and the admission
// error without running fn.
func Call[T any](ctx context.Context, l *Limiter, fn func(context.Context) (T, error)) (T, error) {
	var v T
	err := l.Do(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

func (l *Limiter) acquireSlow(ctx context.Context) (Permit, error) {
	l.mu.Lock()
	for {
		s := l.state.Load()
		if s < l.limit.Load() {
			if l.state.CompareAndSwap(s, s+1) {
				l.mu.Unlock()
				return l.admitted(s + 1), nil
			}
			continue
		}
		if l.cfg.MaxWait == 0 {
			l.mu.Unlock()
			return Permit{}, l.reject(ctx, catalog.ReasonLimit, nil)
		}
		queueCap := uint64(l.cfg.MaxQueue)
		if queueCap == 0 {
			queueCap = l.limit.Load()
		}
		if s>>32 >= queueCap {
			l.mu.Unlock()
			return Permit{}, l.reject(ctx, catalog.ReasonQueueFull, nil)
		}
		if ctx.Err() != nil {
			l.mu.Unlock()
			return Permit{}, l.abandon(ctx)
		}
		if l.state.CompareAndSwap(s, s+waiterOne) {
			break
		}
	}
	w := &waiter{ready: make(chan struct{})}
	if l.tail == nil {
		l.head, l.tail = w, w
	} else {
		w.prev, l.tail.next, l.tail = l.tail, w, w
	}
	l.mu.Unlock()
	return l.wait(ctx, w)
}

func (l *Limiter) wait(ctx context.Context, w *waiter) (Permit, error) {
	timer := l.clock.NewTimer(l.cfg.MaxWait)
	var ctxDone bool
	select {
	case <-w.ready:
		timer.Stop()
		return l.admitted(l.state.Load() & inflightMask), nil
	case <-timer.C():
	case <-ctx.Done():
		timer.Stop()
		ctxDone = true
	}
	l.mu.Lock()
	if w.granted { // a release handed us a permit while the timer or ctx fired
		l.mu.Unlock()
		if !ctxDone {
			return l.admitted(l.state.Load() & inflightMask), nil
		}
		l.releasePermit()
		return Permit{}, l.abandon(ctx)
	}
	l.unlink(w)
	l.state.Add(waiterDec)
	l.mu.Unlock()
	if ctxDone {
		return Permit{}, l.abandon(ctx)
	}
	return Permit{}, l.reject(ctx, catalog.ReasonQueueTimeout, nil)
}

// unlink removes w from the queue. Called with mu held.
func (l *Limiter) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
}

func (l *Limiter) reject(ctx context.Context, reason catalog.LimitReason, cause error) error {
	l.calls[catalog.AdmissionRejected].Add(1)
	l.rejections[reason].Add(1)
	if l.hub != nil && l.hub.Rejections.Active() {
		l.hub.Rejections.Emit(events.Rejection{Primitive: catalog.Limiter, Name: l.name, At: l.clock.Now(), Context: ctx})
	}
	return &LimitedError{
		Primitive: catalog.Limiter, Name: l.name, Reason: reason, Limit: int(l.limit.Load()),
		RetryAfter: time.Duration(l.baselineNs.Load()), Err: cause,
	}
}

// abandon handles a caller whose context ended while queued: a cancellation is aborted, a
// deadline a rejection (reason deadline).
func (l *Limiter) abandon(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		l.calls[catalog.AdmissionAborted].Add(1)
		return fmt.Errorf("limiter %q: gave up waiting for a permit: %w", l.name, context.Cause(ctx))
	}
	return l.reject(ctx, catalog.ReasonDeadline, context.Cause(ctx))
}

// releasePermit gives a permit back: to the first waiter if anyone waits and the limit allows,
// otherwise to the pool.
func (l *Limiter) releasePermit() {
	for {
		s := l.state.Load()
		if s>>32 != 0 && s&inflightMask <= l.limit.Load() {
			l.mu.Lock()
			if w := l.head; w != nil {
				l.unlink(w)
				l.state.Add(waiterDec) // the permit moves to w: in-flight is unchanged
				w.granted = true
				close(w.ready)
				l.mu.Unlock()
				return
			}
			l.mu.Unlock() // the waiters left meanwhile
			continue
		}
		if s&inflightMask == 0 {
			panic(fmt.Sprintf("limiter %q: permit given back more often than taken", l.name))
		}
		if l.state.CompareAndSwap(s, s-1) {
			return
		}
	}
}

// admitWaiters hands free permits to queued callers after the limit grew. Called with mu held.
func (l *Limiter) admitWaiters() {
	for l.head != nil {
		s := l.state.Load()
		if s&inflightMask >= l.limit.Load() {
			return
		}
		if !l.state.CompareAndSwap(s, s+1+waiterDec) { // one more in flight, one fewer queued
			continue
		}
		w := l.head
		l.unlink(w)
		w.granted = true
		close(w.ready)
	}
}

// windowSize is the number of samples that closes a window: MinSamples, or the limit when
// larger (about one round trip of calls).
func (l *Limiter) windowSize() uint64 { return max(uint64(l.cfg.MinSamples), l.limit.Load()) }

// update closes the window when it is full and moves the limit. Only one caller does the work;
// the others carry on.
func (l *Limiter) update() {
	if !l.mu.TryLock() {
		return
	}
	defer l.mu.Unlock()
	total := l.samples[catalog.SampleMeasured].Load() + l.samples[catalog.SampleDropped].Load()
	if total-l.winStart.Load() < l.windowSize() {
		return // another caller closed this window
	}
	l.winStart.Store(total)
	drops := l.winDrops.Swap(0)
	sum, timed := l.winSum.Swap(0), l.winTimed.Swap(0)
	peak := float64(l.winPeak.Swap(l.state.Load() & inflightMask))
	if timed > 0 {
		l.observe(float64(sum)/float64(timed), peak)
	}
	switch {
	case drops > 0:
		l.est *= l.cfg.Backoff
	case timed > 0:
		l.est = l.next(float64(sum)/float64(timed), peak)
	}
	l.est = min(max(l.est, float64(l.cfg.MinLimit)), float64(l.cfg.MaxLimit))
	l.limit.Store(uint64(l.est))
	l.sampleMask.Store(l.strideMask())
	l.admitWaiters()
}

// observe moves the baseline with a window's average latency: down at once, up slowly and only
// when the limiter's own concurrency cannot explain the latency. Called with mu held.
func (l *Limiter) observe(sample, peak float64) {
	l.sampleNs.Store(uint64(sample))
	switch {
	case l.baseline == 0 || sample < l.baseline:
		l.baseline = sample
	case peak*2 < l.est:
		l.baseline += (sample - l.baseline) / 8
	}
	l.baselineNs.Store(uint64(l.baseline))
}

// Vegas's thresholds, in units of log10(limit): below vegasAlpha calls queued at the dependency
// the limit grows (by vegasGrow while at most one unit queues, else by one unit), above
// vegasBeta it shrinks by one unit. The band keeps a short queue at the dependency — long
// enough that its servers do not idle while our callers pause, short enough that latency stays
// near the baseline — and the modest growth step keeps the limit from overshooting after a
// lull. (Netflix's Vegas uses 3, 6 and 6: in a model with jittered service times and pauses in
// the arrivals its p99 was 3–6 % higher at the same goodput.)
const (
	vegasAlpha = 2.5
	vegasBeta  = 5
	vegasGrow  = 3
)

// next returns the new limit for a window without drops. Called with mu held.
func (l *Limiter) next(sample, peak float64) float64 {
	est := l.est
	if peak*2 < est {
		return est // the caller set the pace: latency says nothing about the limit
	}
	if l.cfg.Algorithm == AIMD {
		if sample > l.cfg.Tolerance*l.baseline {
			return est * l.cfg.Backoff
		}
		return est + 1
	}
	lg := max(1, math.Log10(est))
	queued := est * (1 - l.baseline/sample)
	switch {
	case queued > vegasBeta*lg:
		return est - lg
	case queued <= lg:
		return est + vegasGrow*lg
	case queued < vegasAlpha*lg:
		return est + lg
	}
	return est
}

// Snapshot is a point-in-time reading of a limiter. Taking one allocates nothing and never blocks
// calls.
type Snapshot struct {
	Limit              int           // the current limit
	MinLimit, MaxLimit int           // its bounds
	InFlight           int           // permits in use
	Queued             int           // callers waiting for a permit
	Baseline           time.Duration // the no-load latency estimate; 0 before the first window
	Sample             time.Duration // the last window's average latency; 0 before the first window
	// Calls counts admission decisions, indexed by catalog.Admission: permitted, rejected (see
	// Rejections) and aborted (the caller cancelled while queued).
	Calls [catalog.NumAdmissions]uint64
	// Rejections counts rejected calls by reason, indexed by catalog.LimitReason.
	Rejections [catalog.NumLimitReasons]uint64
	// Samples counts the permits given back, indexed by catalog.SampleKind: measured, dropped
	// (timed out or refused as overloaded) and ignored (the caller left).
	Samples [catalog.NumSampleKinds]uint64
}

// Snapshot reads the limiter's state now.
func (l *Limiter) Snapshot() Snapshot {
	s := l.state.Load()
	sn := Snapshot{
		Limit: int(l.limit.Load()), MinLimit: l.cfg.MinLimit, MaxLimit: l.cfg.MaxLimit,
		InFlight: int(s & inflightMask), Queued: int(s >> 32),
		Baseline: time.Duration(l.baselineNs.Load()), Sample: time.Duration(l.sampleNs.Load()),
	}
	for i := range l.calls {
		sn.Calls[i] = l.calls[i].Load()
	}
	for i := range l.rejections {
		sn.Rejections[i] = l.rejections[i].Load()
	}
	for i := range l.samples {
		sn.Samples[i] = l.samples[i].Load()
	}
	return sn
}
