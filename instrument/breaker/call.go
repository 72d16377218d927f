package breaker

import (
	"context"
	"errors"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/events"
	"github.com/stormwatch-go/stormwatch/instrument/classify"
	"github.com/stormwatch-go/stormwatch/instrument/internal/ticks"
)

// Every way of calling through a breaker — Do, Call and Acquire — is Acquire followed by
// Permit.Done (or abandon, when the call panics): Acquire holds the one closed fast path, and
// record is the one place where an outcome is counted and judged.

// Permit is a call admitted by [Breaker.Acquire]. Report its outcome exactly once, with Done.
// The zero Permit is inert.
type Permit struct {
	b     *Breaker
	e     *epoch // the epoch that admitted the call; a half-open one makes it a probe
	start int64  // when the call was admitted (breaker ns, or ticks.Now when b.tsc), if timed
	timed bool   // the breaker measures this call's duration
}

// Acquire is the two-step form of [Breaker.Do], for middleware where a closure cannot fit: it
// asks the breaker to admit one call. On success the caller runs the call and reports
// its outcome with [Permit.Done] — exactly once, also when the call
// panics or is cancelled (report the ctx error: it is ignored and a half-open permit is
// returned). On refusal the error matches [ErrOpen]. Acquire and Permit never allocate on the
// closed path.
func (b *Breaker) Acquire() (Permit, error) {
	if e := b.cur.Load(); e.state == catalog.StateClosed || e.state == catalog.StateMetricsOnly {
		return b.admit(e, b.set.Load()), nil // the closed fast path
	}
	return b.acquireSlow()
}

// admit returns the permit of a call admitted by epoch e.
func (b *Breaker) admit(e *epoch, s *settings) Permit {
	if s.timed || s.outcomes.Active() {
		return Permit{b: b, e: e, start: b.callStart(), timed: true}
	}
	return Permit{b: b, e: e}
}

// callStart reads the clock that measures a call's duration: the time-stamp counter where it
// serves (half the cost of a monotonic read, see package ticks), else the breaker's time.
func (b *Breaker) callStart() int64 {
	if b.tsc {
		return ticks.Now()
	}
	return b.now()
}

// acquireSlow is Acquire in every state but closed and metrics_only: it rejects, admits a
// half-open probe, or first commits what time alone has changed and decides again.
func (b *Breaker) acquireSlow() (Permit, error) {
	s := b.set.Load()
	for {
		e := b.cur.Load()
		switch e.state {
		case catalog.StateClosed, catalog.StateMetricsOnly:
			return b.admit(e, s), nil
		case catalog.StateDisabled:
			return Permit{b: b, e: e}, nil
		case catalog.StateForcedOpen:
			return Permit{}, b.reject(e, -1, s)
		case catalog.StateOpen:
			now := b.now()
			if now < e.until {
				return Permit{}, b.reject(e, now, s)
			}
			b.settle(e, now) // half-open since e.until, or further on if that expired too
		case catalog.StateHalfOpen:
			if s.halfOpenMax > 0 {
				if now := b.now(); now-e.since >= s.halfOpenMax {
					b.settle(e, now) // reopened at the limit
					continue
				}
			}
			if e.probes.Add(1) > s.halfOpen {
				e.probes.Add(-1)
				return Permit{}, b.reject(e, -1, s)
			}
			return b.admit(e, s), nil
		}
	}
}

// Done reports the outcome of the permitted call: a nil error is a success; other errors go
// through the breaker's classifier. When the breaker measures durations (slow-call detection,
// the duration histogram or an outcome listener), the duration runs from Acquire to Done.
func (p Permit) Done(err error) {
	if p.b != nil {
		p.b.record(p, result{err: err})
	}
}

// abandon records a permitted call that ended without an outcome (a panic or runtime.Goexit):
// it is counted as ignored and a half-open permit is returned.
func (p Permit) abandon() {
	if p.b != nil {
		p.b.record(p, result{abandoned: true})
	}
}

// Do runs fn through the breaker: it returns an error matching [ErrOpen] without calling fn
// when the breaker refuses the call, and otherwise fn's error, unchanged. A panic in fn is
// counted as ignored, returns a half-open permit and propagates.
func (b *Breaker) Do(ctx context.Context, fn func(context.Context) error) error {
	p, err := b.Acquire()
	if err != nil {
		return err
	}
	completed := false
	defer func() {
		if !completed {
			p.abandon()
		}
	}()
	err = fn(ctx)
	completed = true
	p.Done(err)
	return err
}

// Call runs fn through b and returns its value: like [Breaker.Do] for functions with a result.
// A slow success still returns its value; it only counts as slow for the breaker.
func Call[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (T, error) {
	p, err := b.Acquire()
	if err != nil {
		var zero T
		return zero, err
	}
	completed := false
	defer func() {
		if !completed {
			p.abandon()
		}
	}()
	v, err := fn(ctx)
	completed = true
	p.Done(err)
	return v, err
}

// result is how a permitted call ended.
type result struct {
	err       error
	d         int64 // the call's duration (ns), when given
	given     bool  // d is known
	abandoned bool  // the call ended by panic or runtime.Goexit: no outcome
}

// record counts the outcome of the call admitted by p and lets it decide what it may: the
// window of a closed epoch, the probe verdict of a half-open one. A result from an epoch that is
// no longer current is counted but decides nothing. Every call's outcome goes through here, in
// four steps.
func (b *Breaker) record(p Permit, r result) {
	e := p.e
	if e.state == catalog.StateDisabled {
		return
	}
	s := b.set.Load()
	end := int64(-1) // when the call ended (breaker ns), once read
	if p.timed && !r.given {
		if b.tsc {
			r.d, r.given = int64(ticks.Duration(p.start, ticks.Now())), true
		} else {
			end = b.now()
			r.d, r.given = end-p.start, true
		}
	}

	// 1. The kind of call: its error through the classifier, its duration against the
	// slow-call duration.
	k := catalog.CallSuccessful
	switch {
	case r.abandoned:
		k = catalog.CallIgnored
	case r.err != nil:
		k = s.errKind(r.err)
	}
	if r.given && s.slowNs > 0 && r.d > s.slowNs {
		k = slowKind(k)
	}

	// 2. The metrics. A new per-call metric is a field of Breaker, a line here and one in
	// Snapshot.
	b.calls[k].Add(1)
	if r.given && s.hist && k != catalog.CallIgnored {
		if isFailed(k) {
			b.hist[catalog.CallFailed].Observe(time.Duration(r.d))
		} else {
			b.hist[catalog.CallSuccessful].Observe(time.Duration(r.d))
		}
	}

	// 3. The decision.
	switch {
	case k == catalog.CallIgnored:
		if e.state == catalog.StateHalfOpen {
			e.probes.Add(-1) // an ignored probe returns its permit
		}
	case e.state == catalog.StateHalfOpen:
		b.recordProbe(e, k, s, end)
	default:
		if end < 0 && e.winTime {
			end = b.now()
		}
		if e.win.record(k, end, s) && e.state == catalog.StateClosed {
			b.tripFromClosed(e)
		}
	}

	// 4. The outcome listeners.
	if s.outcomes.Active() {
		o := events.CallOutcome{Name: b.name, Kind: k, Duration: time.Duration(r.d)}
		if !r.abandoned {
			o.Err = r.err
		}
		s.outcomes.Emit(o)
	}
}

// errKind classifies a call that returned err: successful, failed or ignored. The errors that
// say nothing about the dependency are ignored whatever the classifier says (see
// [Config.Classify]); the classifier decides the others.
func (s *settings) errKind(err error) catalog.CallKind {
	if neverFailure(err) {
		return catalog.CallIgnored
	}
	switch s.classify(err) {
	case catalog.CallFailed, catalog.CallSlowFailed:
		return catalog.CallFailed
	case catalog.CallIgnored:
		return catalog.CallIgnored
	}
	return catalog.CallSuccessful
}

// neverFailure reports the errors a breaker ignores whatever its classifier says: a business
// error (classify.Business: the dependency answered), the caller's cancellation (an error
// matching context.Canceled: the caller left) and stormwatch's own rejections (the call never
// reached the dependency: a full bulkhead must never trip a breaker).
func neverFailure(err error) bool {
	var rej classify.Rejection
	return classify.IsBusiness(err) || errors.Is(err, context.Canceled) || (errors.As(err, &rej) && rej.Rejected())
}

// slowKind is k for a slow call: successful and failed calls become their slow kinds.
func slowKind(k catalog.CallKind) catalog.CallKind {
	switch k {
	case catalog.CallSuccessful:
		return catalog.CallSlowSuccessful
	case catalog.CallFailed:
		return catalog.CallSlowFailed
	}
	return k
}

// isFailed reports whether k is a failure, slow or not.
func isFailed(k catalog.CallKind) bool { return k == catalog.CallFailed || k == catalog.CallSlowFailed }

// isSlow reports whether k is a slow call, failed or not.
func isSlow(k catalog.CallKind) bool {
	return k == catalog.CallSlowSuccessful || k == catalog.CallSlowFailed
}
