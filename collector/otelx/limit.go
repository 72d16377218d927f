package otelx

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// limitInstruments are the adaptive limiter's and the client-side throttle's instruments: every
// series from the start, as the collector exports them.
type limitInstruments struct {
	limit, minLimit, inflight, queued, baseline, sample metric.Float64ObservableGauge
	calls, rejections, samples                          metric.Int64ObservableCounter
	probability                                         metric.Float64ObservableGauge
	throttleCalls                                       metric.Int64ObservableCounter
}

func newLimitInstruments(gauge func(catalog.Metric) metric.Float64ObservableGauge, counter func(catalog.Metric) metric.Int64ObservableCounter) limitInstruments {
	return limitInstruments{
		limit: gauge(catalog.LimiterLimit), minLimit: gauge(catalog.LimiterMinLimit),
		inflight: gauge(catalog.LimiterInflight), queued: gauge(catalog.LimiterQueued),
		baseline: gauge(catalog.LimiterBaselineLatency), sample: gauge(catalog.LimiterSampleLatency),
		calls: counter(catalog.LimiterCalls), rejections: counter(catalog.LimiterRejections), samples: counter(catalog.LimiterSamples),
		probability: gauge(catalog.ThrottleProbability), throttleCalls: counter(catalog.ThrottleCalls),
	}
}

// limitAttrs are the attribute sets of one limiter or throttle, built when the bridge first sees it.
type limitAttrs struct {
	only       []metric.ObserveOption
	calls      [catalog.NumAdmissions][]metric.ObserveOption
	rejections [catalog.NumLimitReasons][]metric.ObserveOption
	samples    [catalog.NumSampleKinds][]metric.ObserveOption
	throttle   [catalog.NumThrottleKinds][]metric.ObserveOption
}

func newLimitAttrs(name string) *limitAttrs {
	n := attribute.String(catalog.LabelName, name)
	a := &limitAttrs{only: observeOpts(n)}
	for _, k := range catalog.Admissions {
		a.calls[k] = observeOpts(n, attribute.String(catalog.LabelKind, k.String()))
	}
	for _, r := range catalog.LimitReasons {
		a.rejections[r] = observeOpts(n, attribute.String(catalog.LabelReason, r.String()))
	}
	for _, k := range catalog.SampleKinds {
		a.samples[k] = observeOpts(n, attribute.String(catalog.LabelKind, k.String()))
	}
	for _, k := range catalog.ThrottleKinds {
		a.throttle[k] = observeOpts(n, attribute.String(catalog.LabelKind, k.String()))
	}
	return a
}

// observeLimits reports the registry's limiters and throttles. Called with b.mu held.
func (b *Bridge) observeLimits(o metric.Observer, ins *limitInstruments) {
	for _, nl := range b.reg.Limiters() {
		sn := nl.Value.Snapshot()
		a := attrsOf(b.limiters, nl.Value, func() *limitAttrs { return newLimitAttrs(nl.Name) })
		o.ObserveFloat64(ins.limit, float64(sn.Limit), a.only...)
		o.ObserveFloat64(ins.minLimit, float64(sn.MinLimit), a.only...)
		o.ObserveFloat64(ins.inflight, float64(sn.InFlight), a.only...)
		o.ObserveFloat64(ins.queued, float64(sn.Queued), a.only...)
		o.ObserveFloat64(ins.baseline, sn.Baseline.Seconds(), a.only...)
		o.ObserveFloat64(ins.sample, sn.Sample.Seconds(), a.only...)
		for _, k := range catalog.Admissions {
			o.ObserveInt64(ins.calls, int64(sn.Calls[k]), a.calls[k]...)
		}
		for _, r := range catalog.LimitReasons {
			o.ObserveInt64(ins.rejections, int64(sn.Rejections[r]), a.rejections[r]...)
		}
		for _, k := range catalog.SampleKinds {
			o.ObserveInt64(ins.samples, int64(sn.Samples[k]), a.samples[k]...)
		}
	}
	for _, nt := range b.reg.Throttles() {
		sn := nt.Value.Snapshot()
		a := attrsOf(b.throttles, nt.Value, func() *limitAttrs { return newLimitAttrs(nt.Name) })
		o.ObserveFloat64(ins.probability, sn.Probability, a.only...)
		for _, k := range catalog.ThrottleKinds {
			o.ObserveInt64(ins.throttleCalls, int64(sn.Calls[k]), a.throttle[k]...)
		}
	}
}

// limitMaps are the bridge's attribute caches of limiters and throttles.
type limitMaps struct {
	limiters  map[*limit.Limiter]*limitAttrs
	throttles map[*throttle.Throttle]*limitAttrs
}
