package otelx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// instruments are the observable instruments of one registration: a counter or gauge for every
// catalog metric that is not a histogram.
type instruments struct {
	state, tripped, failureRate, slowRate, failureThreshold, slowThreshold, openDuration metric.Float64ObservableGauge
	transitions, calls, notPermitted                                                     metric.Int64ObservableCounter

	retryCalls, retryAttempts, retryErrors, budgetDenied metric.Int64ObservableCounter
	budgetTokens                                         metric.Float64ObservableGauge

	bhMax, bhInflight, bhWaiting metric.Float64ObservableGauge
	bhCalls                      metric.Int64ObservableCounter

	timeoutCalls, fallbackCalls, overflow, evicted metric.Int64ObservableCounter

	lim limitInstruments // limit.go
	hdg hedgeInstruments // hedge.go
}

// Register creates the bridge's observable instruments on mp's meter of scope [ScopeName] —
// an Int64ObservableCounter for every counter of the catalog, a Float64ObservableGauge for
// every gauge — and one callback that observes them all from the primitives' snapshots when a
// reader collects. Unregister the returned registration to stop observing (the instruments
// then report nothing).
//
// The histograms are not instruments (an observable instrument cannot report a histogram): the
// reader gets them from the bridge as a producer (see [Bridge.Produce]).
func (b *Bridge) Register(mp metric.MeterProvider) (metric.Registration, error) {
	if mp == nil {
		return nil, errors.New("otelx: Register(nil): the meter provider must not be nil")
	}
	m := mp.Meter(ScopeName)
	var ins instruments
	var all []metric.Observable
	var errs []error
	gauge := func(c catalog.Metric) metric.Float64ObservableGauge {
		g, err := m.Float64ObservableGauge(b.Name(c), metric.WithDescription(c.Help), metric.WithUnit(Unit(c)))
		errs = append(errs, err)
		all = append(all, g)
		return g
	}
	counter := func(c catalog.Metric) metric.Int64ObservableCounter {
		ctr, err := m.Int64ObservableCounter(b.Name(c), metric.WithDescription(c.Help), metric.WithUnit(Unit(c)))
		errs = append(errs, err)
		all = append(all, ctr)
		return ctr
	}
	ins.state = gauge(catalog.BreakerState)
	ins.transitions = counter(catalog.BreakerTransitions)
	ins.tripped = gauge(catalog.BreakerTrippedSince)
	ins.calls = counter(catalog.BreakerCalls)
	ins.notPermitted = counter(catalog.BreakerNotPermitted)
	ins.failureRate = gauge(catalog.BreakerFailureRate)
	ins.slowRate = gauge(catalog.BreakerSlowCallRate)
	ins.failureThreshold = gauge(catalog.BreakerFailureRateThreshold)
	ins.slowThreshold = gauge(catalog.BreakerSlowCallRateThreshold)
	ins.openDuration = gauge(catalog.BreakerOpenDuration)
	ins.retryCalls = counter(catalog.RetryCalls)
	ins.retryAttempts = counter(catalog.RetryAttempts)
	ins.retryErrors = counter(catalog.RetryErrors)
	ins.budgetTokens = gauge(catalog.RetryBudgetTokens)
	ins.budgetDenied = counter(catalog.RetryBudgetDenied)
	ins.bhMax = gauge(catalog.BulkheadMaxConcurrent)
	ins.bhInflight = gauge(catalog.BulkheadInflight)
	ins.bhWaiting = gauge(catalog.BulkheadWaiting)
	ins.bhCalls = counter(catalog.BulkheadCalls)
	ins.timeoutCalls = counter(catalog.TimeoutCalls)
	ins.fallbackCalls = counter(catalog.FallbackCalls)
	ins.overflow = counter(catalog.RegistryOverflow)
	ins.evicted = counter(catalog.RegistryEvicted)
	ins.lim = newLimitInstruments(gauge, counter)
	ins.hdg = newHedgeInstruments(gauge, counter)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("otelx: creating the instruments: %w", err)
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		b.observe(o, &ins)
		return nil
	}, all...)
	if err != nil {
		return nil, fmt.Errorf("otelx: registering the callback: %w", err)
	}
	return reg, nil
}

// observe reports every counter and gauge of every primitive in the registry, the series that
// the bridge's collector.Policy selects for its snapshot.
func (b *Bridge) observe(o metric.Observer, ins *instruments) {
	now := b.clk.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range catalog.Primitives {
		o.ObserveInt64(ins.overflow, int64(b.reg.OverflowCount(p)), b.overflow[i]...)
		o.ObserveInt64(ins.evicted, int64(b.reg.Evicted(p)), b.overflow[i]...)
	}
	b.observeLimits(o, &ins.lim)
	b.observeHedges(o, &ins.hdg)
	for _, nb := range b.reg.Breakers() {
		sn := nb.Value.Snapshot()
		ser := b.policy.Breaker(&sn)
		a := b.breakerAttrs(nb, now)
		for _, st := range catalog.States {
			if ser.States[st] {
				v := 0.0
				if sn.State == st {
					v = 1
				}
				o.ObserveFloat64(ins.state, v, a.states[st]...)
			}
			for _, to := range catalog.States {
				if ser.Transitions[st][to] {
					o.ObserveInt64(ins.transitions, int64(sn.Transitions[st][to]), a.transitions[st][to]...)
				}
			}
		}
		b.observeTripped(o, ins, a, &sn.TrippedSince, sn.TripCause, now)
		for _, k := range catalog.CallKinds {
			if ser.Calls[k] {
				o.ObserveInt64(ins.calls, int64(sn.Calls[k]), a.calls[k]...)
			}
		}
		o.ObserveInt64(ins.notPermitted, int64(sn.NotPermitted), a.only...)
		o.ObserveFloat64(ins.failureRate, sn.FailureRate, a.only...)
		if ser.SlowCallRate {
			o.ObserveFloat64(ins.slowRate, sn.SlowCallRate, a.only...)
		}
		if ser.FailureRateThreshold {
			o.ObserveFloat64(ins.failureThreshold, sn.FailureRateThreshold, a.only...)
		}
		if ser.SlowCallRateThreshold {
			o.ObserveFloat64(ins.slowThreshold, sn.SlowCallRateThreshold, a.only...)
		}
		if ser.OpenDuration {
			o.ObserveFloat64(ins.openDuration, sn.OpenDuration.Seconds(), a.only...)
		}
	}
	for _, nr := range b.reg.Retries() {
		sn := nr.Value.Snapshot()
		ser := b.policy.Retry(&sn)
		a := b.retryAttrs(nr, now)
		for _, k := range catalog.RetryKinds {
			if ser.Calls[k] {
				o.ObserveInt64(ins.retryCalls, int64(sn.Calls[k]), a.calls[k]...)
			}
		}
		o.ObserveInt64(ins.retryAttempts, int64(sn.Retries), a.only...)
		for _, c := range catalog.Classes {
			if ser.Errors[c] {
				o.ObserveInt64(ins.retryErrors, int64(sn.Errors[c]), a.errors[c]...)
			}
		}
		o.ObserveFloat64(ins.budgetTokens, float64(sn.BudgetTokens), a.only...)
		o.ObserveInt64(ins.budgetDenied, int64(sn.BudgetDenied), a.only...)
	}
	for _, nb := range b.reg.Bulkheads() {
		sn := nb.Value.Snapshot()
		ser := b.policy.Bulkhead(&sn)
		a := b.bulkheadAttrs(nb, now)
		o.ObserveFloat64(ins.bhMax, float64(sn.MaxConcurrent), a.only...)
		o.ObserveFloat64(ins.bhInflight, float64(sn.InFlight), a.only...)
		if ser.Waiting {
			o.ObserveFloat64(ins.bhWaiting, float64(sn.Waiting), a.only...)
		}
		for _, k := range catalog.Admissions {
			if ser.Calls[k] {
				o.ObserveInt64(ins.bhCalls, int64(sn.Calls[k]), a.calls[k]...)
			}
		}
	}
	for _, nt := range b.reg.Timeouts() {
		sn := nt.Value.Snapshot()
		ser := b.policy.Timeout(&sn)
		a := b.timeoutAttrs(nt)
		for _, k := range catalog.TimeoutKinds {
			if ser.Calls[k] {
				o.ObserveInt64(ins.timeoutCalls, int64(sn.Calls[k]), a.calls[k]...)
			}
		}
	}
	for _, nf := range b.reg.Fallbacks() {
		sn := nf.Value.Snapshot()
		a := b.fallbackAttrs(nf)
		for _, c := range catalog.Causes {
			o.ObserveInt64(ins.fallbackCalls, int64(sn.Calls[c]), a.calls[c]...)
		}
	}
}

// observeTripped reports tripped_since_timestamp_seconds: the Unix time of the trip with its
// cause while the breaker is in a not-closed episode, 0 without a cause otherwise (as the
// Prometheus collector does), and at 0 the cause series of the trips that ended less than the
// retired hold ago.
func (b *Bridge) observeTripped(o metric.Observer, ins *instruments, a *breakerAttrs, since *time.Time, cause catalog.TripCause, now time.Time) {
	v, at := 0.0, catalog.TripCause(catalog.NumTripCauses)
	if !since.IsZero() && cause < catalog.NumTripCauses {
		v, at = float64(since.UnixNano())/1e9, cause
	}
	if a.observed && a.lastAt != at && a.lastAt < catalog.NumTripCauses && a.last != 0 && b.hold > 0 {
		a.retired[a.lastAt] = now.Add(b.hold)
	}
	a.observed, a.lastAt, a.last = true, at, v
	if at < catalog.NumTripCauses {
		a.retired[at] = time.Time{}
		o.ObserveFloat64(ins.tripped, v, a.causes[at]...)
	} else {
		o.ObserveFloat64(ins.tripped, 0, a.only...)
	}
	for c := range a.retired {
		if until := a.retired[c]; !until.IsZero() {
			if now.Before(until) {
				o.ObserveFloat64(ins.tripped, 0, a.causes[c]...)
			} else {
				a.retired[c] = time.Time{}
			}
		}
	}
}
