package collector

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

// breakerPart exports every circuitbreaker metric of the catalog for every breaker in the
// registry.
//
// Every counter label value that can occur starts at 0: all five call kinds, both duration
// kinds, and the 23 transition pairs for which breaker.CanTransition holds — the automatic
// closed→open, open→half_open, half_open→closed and half_open→open, and the manual moves from
// every other state to closed (Reset), forced_open, disabled and metrics_only. The pairs that
// cannot occur (a state to itself, closed→half_open, and forced_open, disabled or metrics_only
// to open or half_open) are not exported. The duration histogram is exported only while the
// breaker records it (Config.DisableDurationHistogram unset).
//
// Scraping 10,000 breakers is dominated by client_golang's own per-series work, so this part
// keeps its share small: the label pairs and the prometheus.Metric objects of a breaker are
// built once, the first time a scrape sees it, and each scrape only reads the breaker's atomics
// into the dto messages (one allocation per series). Series are sent family by family in label
// order, so the registry's sort finds them already sorted.
type breakerPart struct {
	reg *instrument.Registry

	state, transitions, tripped, calls, notPermitted, duration *prometheus.Desc
	failureRate, slowRate, failureThreshold, slowThreshold     *prometheus.Desc
	openDuration                                               *prometheus.Desc
	bounds                                                     [breaker.NumDurationBuckets]float64

	mu     sync.Mutex
	series map[*breaker.Breaker]*breakerSeries
	// aligned caches the series of the last registry snapshot seen, in its order.
	alignedFor *instrument.Named[*breaker.Breaker]
	alignedLen int
	aligned    []*breakerSeries
}

// Label values in the order the registry sorts them (lexicographic).
var (
	sortedStates    = sortedBy(breaker.States(), func(s breaker.State) string { return s.String() })
	sortedCallKinds = sortedBy(breaker.CallKinds(), func(k breaker.CallKind) string { return k.String() })
)

// durationKinds are the histogram's kinds in label order with the index Breaker.Durations uses.
var durationKinds = []struct {
	label  string
	failed bool
}{{catalog.BreakerFailed, true}, {catalog.BreakerSuccessful, false}}

func sortedBy[T any](xs []T, key func(T) string) []T {
	out := append([]T(nil), xs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && key(out[j]) < key(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func newBreakerPart(c *Collector) *breakerPart {
	p := &breakerPart{
		reg:              c.reg,
		state:            c.desc(catalog.BreakerState),
		transitions:      c.desc(catalog.BreakerTransitions),
		tripped:          c.desc(catalog.BreakerTrippedSince),
		calls:            c.desc(catalog.BreakerCalls),
		notPermitted:     c.desc(catalog.BreakerNotPermitted),
		duration:         c.desc(catalog.BreakerCallDuration),
		failureRate:      c.desc(catalog.BreakerFailureRate),
		slowRate:         c.desc(catalog.BreakerSlowCallRate),
		failureThreshold: c.desc(catalog.BreakerFailureRateThreshold),
		slowThreshold:    c.desc(catalog.BreakerSlowCallRateThreshold),
		openDuration:     c.desc(catalog.BreakerOpenDuration),
		series:           map[*breaker.Breaker]*breakerSeries{},
	}
	for i, d := range breaker.DurationBuckets {
		p.bounds[i] = d.Seconds()
	}
	return p
}

func (p *breakerPart) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.state, p.transitions, p.tripped, p.calls, p.notPermitted,
		p.duration, p.failureRate, p.slowRate, p.failureThreshold, p.slowThreshold, p.openDuration} {
		ch <- d
	}
}

// What a breakerMetric reads.
const (
	readState = iota
	readTransitions
	readTripped
	readCalls
	readNotPermitted
	readDuration
	readFailureRate
	readSlowRate
	readFailureThreshold
	readSlowThreshold
	readOpenDuration
)

// breakerMetric is one series of one breaker: a prometheus.Metric that reads the breaker when
// the registry asks for its value.
type breakerMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	b      *breaker.Breaker
	bounds *[breaker.NumDurationBuckets]float64
	read   uint8
	x, y   uint8 // state, transition from/to, call kind, or failed (duration)
}

// breakerSeries holds a breaker's metrics, grouped for family-by-family emission.
type breakerSeries struct {
	state       [breaker.NumStates]breakerMetric    // in sortedStates order
	transitions [breaker.NumStates][]breakerMetric  // by position of from in sortedStates; to in label order
	calls       [breaker.NumCallKinds]breakerMetric // in sortedCallKinds order
	duration    [2]breakerMetric                    // failed, successful
	single      [7]breakerMetric                    // tripped, not permitted, rates, thresholds, open duration
}

func (p *breakerPart) newSeries(name string, b *breaker.Breaker) *breakerSeries {
	s := &breakerSeries{}
	nameLabel := labelPair(catalog.LabelName, name)
	// Every label slice of the breaker is cut from one backing array (at most 3 labels for
	// each of its 44 metrics).
	backing := make([]*dto.LabelPair, 0, 3*44)
	m := func(desc *prometheus.Desc, read uint8, x, y uint8, extra ...*dto.LabelPair) breakerMetric {
		// Label pairs sorted by label name, as client_golang expects: from < kind < name <
		// state < to.
		start := len(backing)
		labels := backing
		for _, l := range extra {
			if l.GetName() < catalog.LabelName {
				labels = append(labels, l)
			}
		}
		labels = append(labels, nameLabel)
		for _, l := range extra {
			if l.GetName() > catalog.LabelName {
				labels = append(labels, l)
			}
		}
		backing = labels
		labels = labels[start:len(labels):len(labels)]
		return breakerMetric{desc: desc, labels: labels, b: b, bounds: &p.bounds, read: read, x: x, y: y}
	}
	for i, st := range sortedStates {
		s.state[i] = m(p.state, readState, uint8(st), 0, stateLabels[catalog.LabelState][st])
	}
	for i, from := range sortedStates {
		for _, to := range sortedStates {
			if breaker.CanTransition(from, to) {
				s.transitions[i] = append(s.transitions[i], m(p.transitions, readTransitions, uint8(from), uint8(to),
					stateLabels[catalog.LabelFrom][from], stateLabels[catalog.LabelTo][to]))
			}
		}
	}
	for i, k := range sortedCallKinds {
		s.calls[i] = m(p.calls, readCalls, uint8(k), 0, kindLabels[k])
	}
	for i, dk := range durationKinds {
		var failed uint8
		if dk.failed {
			failed = 1
		}
		s.duration[i] = m(p.duration, readDuration, failed, 0, durationKindLabels[i])
	}
	s.single = [7]breakerMetric{
		m(p.tripped, readTripped, 0, 0),
		m(p.notPermitted, readNotPermitted, 0, 0),
		m(p.failureRate, readFailureRate, 0, 0),
		m(p.slowRate, readSlowRate, 0, 0),
		m(p.failureThreshold, readFailureThreshold, 0, 0),
		m(p.slowThreshold, readSlowThreshold, 0, 0),
		m(p.openDuration, readOpenDuration, 0, 0),
	}
	return s
}

// Shared, immutable label pairs of the closed label sets.
var (
	stateLabels = func() map[string][breaker.NumStates]*dto.LabelPair {
		out := map[string][breaker.NumStates]*dto.LabelPair{}
		for _, l := range []string{catalog.LabelState, catalog.LabelFrom, catalog.LabelTo} {
			var pairs [breaker.NumStates]*dto.LabelPair
			for _, st := range breaker.States() {
				pairs[st] = labelPair(l, st.String())
			}
			out[l] = pairs
		}
		return out
	}()
	kindLabels = func() (out [breaker.NumCallKinds]*dto.LabelPair) {
		for _, k := range breaker.CallKinds() {
			out[k] = labelPair(catalog.LabelKind, k.String())
		}
		return out
	}()
	durationKindLabels = [2]*dto.LabelPair{
		labelPair(catalog.LabelKind, durationKinds[0].label),
		labelPair(catalog.LabelKind, durationKinds[1].label),
	}
)

// labelPair returns a label pair whose name and value live in one allocation.
func labelPair(name, value string) *dto.LabelPair {
	bx := &labelBox{name: name, value: value}
	bx.p.Name, bx.p.Value = &bx.name, &bx.value
	return &bx.p
}

type labelBox struct {
	p           dto.LabelPair
	name, value string
}

// seriesFor returns the series of every breaker in list, in list's order, building those of
// breakers not seen before. The result is cached for as long as the registry hands out the
// same snapshot.
func (p *breakerPart) seriesFor(list []instrument.Named[*breaker.Breaker]) []*breakerSeries {
	if len(list) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.alignedFor == &list[0] && p.alignedLen == len(list) {
		return p.aligned
	}
	out := make([]*breakerSeries, len(list))
	for i, nb := range list {
		s, ok := p.series[nb.Value]
		if !ok {
			s = p.newSeries(nb.Name, nb.Value)
			p.series[nb.Value] = s
		}
		out[i] = s
	}
	p.alignedFor, p.alignedLen, p.aligned = &list[0], len(list), out
	return out
}

func (p *breakerPart) collect(ch chan<- prometheus.Metric) {
	all := p.seriesFor(p.reg.Breakers())
	for _, s := range all {
		for i := range s.state {
			ch <- &s.state[i]
		}
	}
	for i := range sortedStates {
		for _, s := range all {
			for j := range s.transitions[i] {
				ch <- &s.transitions[i][j]
			}
		}
	}
	for i := range sortedCallKinds {
		for _, s := range all {
			ch <- &s.calls[i]
		}
	}
	for i := range durationKinds {
		for _, s := range all {
			if s.duration[i].b.DurationHistogramEnabled() {
				ch <- &s.duration[i]
			}
		}
	}
	for i := range 7 {
		for _, s := range all {
			ch <- &s.single[i]
		}
	}
}

// Desc implements prometheus.Metric.
func (m *breakerMetric) Desc() *prometheus.Desc { return m.desc }

// Write implements prometheus.Metric: it reads the breaker now.
func (m *breakerMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	b := m.b
	switch m.read {
	case readState:
		v := 0.0
		if b.State() == breaker.State(m.x) {
			v = 1
		}
		out.Gauge = gaugeOf(v)
	case readTransitions:
		out.Counter = counterOf(float64(b.Transitions(breaker.State(m.x), breaker.State(m.y))))
	case readTripped:
		v := 0.0
		if t := b.TrippedSince(); !t.IsZero() {
			v = float64(t.UnixNano()) / 1e9
		}
		out.Gauge = gaugeOf(v)
	case readCalls:
		out.Counter = counterOf(float64(b.Calls(breaker.CallKind(m.x))))
	case readNotPermitted:
		out.Counter = counterOf(float64(b.NotPermitted()))
	case readDuration:
		out.Histogram = histogramOf(b.Durations(m.x == 1), m.bounds)
	case readFailureRate:
		f, _ := b.Rates()
		out.Gauge = gaugeOf(f)
	case readSlowRate:
		_, s := b.Rates()
		out.Gauge = gaugeOf(s)
	case readFailureThreshold:
		f, _, _ := b.Thresholds()
		out.Gauge = gaugeOf(f)
	case readSlowThreshold:
		_, s, _ := b.Thresholds()
		out.Gauge = gaugeOf(s)
	case readOpenDuration:
		_, _, d := b.Thresholds()
		out.Gauge = gaugeOf(d.Seconds())
	}
	return nil
}

// Value boxes: the dto message and the value it points to in one allocation.
type gaugeBox struct {
	g dto.Gauge
	v float64
}

type counterBox struct {
	c dto.Counter
	v float64
}

func gaugeOf(v float64) *dto.Gauge {
	bx := &gaugeBox{v: v}
	bx.g.Value = &bx.v
	return &bx.g
}

func counterOf(v float64) *dto.Counter {
	bx := &counterBox{v: v}
	bx.c.Value = &bx.v
	return &bx.c
}

type histogramBox struct {
	h       dto.Histogram
	count   uint64
	sum     float64
	buckets [breaker.NumDurationBuckets]dto.Bucket
	ptrs    [breaker.NumDurationBuckets]*dto.Bucket
	cum     [breaker.NumDurationBuckets]uint64
}

func histogramOf(d breaker.DurationHistogram, bounds *[breaker.NumDurationBuckets]float64) *dto.Histogram {
	bx := &histogramBox{}
	var cum uint64
	for i := range breaker.NumDurationBuckets {
		cum += d.Counts[i]
		bx.cum[i] = cum
		bx.buckets[i].CumulativeCount = &bx.cum[i]
		bx.buckets[i].UpperBound = &bounds[i]
		bx.ptrs[i] = &bx.buckets[i]
	}
	bx.count = cum + d.Counts[breaker.NumDurationBuckets]
	bx.sum = d.Sum.Seconds()
	bx.h.SampleCount = &bx.count
	bx.h.SampleSum = &bx.sum
	bx.h.Bucket = bx.ptrs[:]
	return &bx.h
}
