package otelx

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// hedgeInstruments are the hedge's instruments: every series from the start (calls, the four
// outcomes, the delay), as the collector exports them.
type hedgeInstruments struct {
	calls, attempts metric.Int64ObservableCounter
	delay           metric.Float64ObservableGauge
}

func newHedgeInstruments(gauge func(catalog.Metric) metric.Float64ObservableGauge, counter func(catalog.Metric) metric.Int64ObservableCounter) hedgeInstruments {
	return hedgeInstruments{calls: counter(catalog.HedgeCalls), attempts: counter(catalog.HedgeAttempts), delay: gauge(catalog.HedgeDelay)}
}

// hedgeAttrs are the attribute sets of one hedge, built when the bridge first sees it.
type hedgeAttrs struct {
	only     []metric.ObserveOption
	outcomes [catalog.NumHedgeOutcomes][]metric.ObserveOption
}

func newHedgeAttrs(name string) *hedgeAttrs {
	n := attribute.String(catalog.LabelName, name)
	a := &hedgeAttrs{only: observeOpts(n)}
	for _, o := range catalog.HedgeOutcomes {
		a.outcomes[o] = observeOpts(n, attribute.String(catalog.LabelOutcome, o.String()))
	}
	return a
}

// observeHedges reports the registry's hedges. Called with b.mu held.
func (b *Bridge) observeHedges(o metric.Observer, ins *hedgeInstruments) {
	for _, nh := range b.reg.Hedges() {
		sn := nh.Value.Snapshot()
		a := attrsOf(b.hedges, nh.Value, func() *hedgeAttrs { return newHedgeAttrs(nh.Name) })
		o.ObserveInt64(ins.calls, int64(sn.Calls), a.only...)
		for _, oc := range catalog.HedgeOutcomes {
			o.ObserveInt64(ins.attempts, int64(sn.Hedges[oc]), a.outcomes[oc]...)
		}
		o.ObserveFloat64(ins.delay, sn.Delay.Seconds(), a.only...)
	}
}

// hedgeMaps is the bridge's attribute cache of hedges.
type hedgeMaps struct {
	hedges map[*hedge.Hedge]*hedgeAttrs
}
