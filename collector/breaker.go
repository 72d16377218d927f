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
	descs                                                      [numReads]*prometheus.Desc // by read kind
	bounds                                                     [breaker.NumDurationBuckets]float64

	mu     sync.Mutex
	series map[*breaker.Breaker]*breakerSeries
	// aligned caches the series of the last registry snapshot seen (alignedFor, kept
	// referenced so that its array cannot be reused by a later snapshot), in its order.
	alignedFor []instrument.Named[*breaker.Breaker]
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
}{{catalog.CallFailed.String(), true}, {catalog.CallSuccessful.String(), false}}

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
	p.descs = [numReads]*prometheus.Desc{
		readState: p.state, readTransitions: p.transitions, readTripped: p.tripped, readCalls: p.calls,
		readNotPermitted: p.notPermitted, readDuration: p.duration, readFailureRate: p.failureRate,
		readSlowRate: p.slowRate, readFailureThreshold: p.failureThreshold,
		readSlowThreshold: p.slowThreshold, readOpenDuration: p.openDuration,
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
	numReads
)

// breakerMetric is one series of one breaker: a prometheus.Metric that reads the breaker when
// the registry asks for its value. It is kept small (16 bytes, one pointer) because a scrape of
// 10,000 breakers walks 430,000 of them and the garbage collector scans them all.
type breakerMetric struct {
	s      *breakerSeries
	lo, hi uint8 // its label pairs: s.labels[lo:hi]
	read   uint8
	x, y   uint8 // state, transition from/to, call kind, or failed (duration)
}

// breakerSeries holds a breaker's metrics, grouped for family-by-family emission.
type breakerSeries struct {
	p      *breakerPart
	b      *breaker.Breaker
	labels []*dto.LabelPair // every metric's label pairs, back to back

	state       [breaker.NumStates]breakerMetric    // in sortedStates order
	transitions [numTransitions]breakerMetric       // by from (sortedStates), then to in label order
	fromEnd     [breaker.NumStates]uint8            // transitions of the i-th from end at fromEnd[i]
	calls       [breaker.NumCallKinds]breakerMetric // in sortedCallKinds order
	duration    [2]breakerMetric                    // failed, successful
	single      [7]breakerMetric                    // tripped, not permitted, rates, thresholds, open duration
}

// numTransitions is the number of transition pairs that can occur (breaker.CanTransition).
const numTransitions = 23

func (p *breakerPart) newSeries(name string, b *breaker.Breaker) *breakerSeries {
	s := &breakerSeries{p: p, b: b, labels: make([]*dto.LabelPair, 0, 3*44)}
	nameLabel := labelPair(catalog.LabelName, name)
	m := func(read uint8, x, y uint8, extra ...*dto.LabelPair) breakerMetric {
		// Label pairs sorted by label name, as client_golang expects: from < kind < name <
		// state < to.
		lo := len(s.labels)
		for _, l := range extra {
			if l.GetName() < catalog.LabelName {
				s.labels = append(s.labels, l)
			}
		}
		s.labels = append(s.labels, nameLabel)
		for _, l := range extra {
			if l.GetName() > catalog.LabelName {
				s.labels = append(s.labels, l)
			}
		}
		return breakerMetric{s: s, lo: uint8(lo), hi: uint8(len(s.labels)), read: read, x: x, y: y}
	}
	for i, st := range sortedStates {
		s.state[i] = m(readState, uint8(st), 0, stateLabels[catalog.LabelState][st])
	}
	n := 0
	for i, from := range sortedStates {
		for _, to := range sortedStates {
			if breaker.CanTransition(from, to) {
				s.transitions[n] = m(readTransitions, uint8(from), uint8(to),
					stateLabels[catalog.LabelFrom][from], stateLabels[catalog.LabelTo][to])
				n++
			}
		}
		s.fromEnd[i] = uint8(n)
	}
	for i, k := range sortedCallKinds {
		s.calls[i] = m(readCalls, uint8(k), 0, kindLabels[k])
	}
	for i, dk := range durationKinds {
		var failed uint8
		if dk.failed {
			failed = 1
		}
		s.duration[i] = m(readDuration, failed, 0, durationKindLabels[i])
	}
	s.single = [7]breakerMetric{
		m(readTripped, 0, 0),
		m(readNotPermitted, 0, 0),
		m(readFailureRate, 0, 0),
		m(readSlowRate, 0, 0),
		m(readFailureThreshold, 0, 0),
		m(readSlowThreshold, 0, 0),
		m(readOpenDuration, 0, 0),
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
	if len(p.alignedFor) == len(list) && &p.alignedFor[0] == &list[0] {
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
	p.alignedFor, p.aligned = list, out
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
			lo := uint8(0)
			if i > 0 {
				lo = s.fromEnd[i-1]
			}
			for j := lo; j < s.fromEnd[i]; j++ {
				ch <- &s.transitions[j]
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
			if s.b.DurationHistogramEnabled() {
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
func (m *breakerMetric) Desc() *prometheus.Desc { return m.s.p.descs[m.read] }

// Write implements prometheus.Metric: it reads the breaker now.
func (m *breakerMetric) Write(out *dto.Metric) error {
	out.Label = m.s.labels[m.lo:m.hi:m.hi]
	b := m.s.b
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
		out.Histogram = histogramOf(b.Durations(m.x == 1), &m.s.p.bounds)
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
