package collector

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

// breakerPart exports every circuitbreaker metric of the catalog for every breaker in the
// registry.
//
// Every counter label value that can occur starts at 0: all call kinds, both duration kinds, and
// the transition pairs for which breaker.CanTransition holds — the automatic closed→open,
// open→half_open, half_open→closed and half_open→open, and the manual moves from every other
// state to closed (Reset), forced_open, disabled and metrics_only. The pairs that cannot occur (a
// state to itself, closed→half_open, and forced_open, disabled or metrics_only to open or
// half_open) are not exported. The duration histogram is exported only while the breaker
// records it (Config.DisableDurationHistogram unset). Trips by cause are not exported (yet).
//
// Scraping 10,000 breakers is dominated by client_golang's own per-series work, so this part
// keeps its share small: the label pairs and the prometheus.Metric objects of a breaker are
// built once, the first time a scrape sees it. Each scrape takes one Snapshot per breaker and
// keeps what it exports in a compact reading (one allocation per breaker); every series of the
// breaker reads its value from that reading into the dto message (one allocation per series). Series are sent family by family in label order, so the registry's
// sort finds them already sorted.
type breakerPart struct {
	reg *instrument.Registry

	state, transitions, tripped, calls, notPermitted, duration *prometheus.Desc
	failureRate, slowRate, failureThreshold, slowThreshold     *prometheus.Desc
	openDuration                                               *prometheus.Desc
	descs                                                      [numReads]*prometheus.Desc // by read kind

	mu     sync.Mutex
	series map[*breaker.Breaker]*breakerSeries
	// aligned caches the series of the last registry snapshot seen (alignedFor, kept
	// referenced so that its array cannot be reused by a later snapshot), in its order.
	alignedFor []instrument.Named[*breaker.Breaker]
	aligned    []*breakerSeries
}

// Label values in the order the registry sorts them (lexicographic).
var (
	sortedStates        = sortedByName(catalog.States[:])
	sortedCallKinds     = sortedByName(catalog.CallKinds[:])
	sortedDurationKinds = sortedByName(catalog.DurationKinds[:])
)

// transitionPairs are the (from, to) pairs that can occur, by from in sortedStates order, then
// to in label order.
var transitionPairs = func() (out [][2]catalog.State) {
	for _, from := range sortedStates {
		for _, to := range sortedStates {
			if breaker.CanTransition(from, to) {
				out = append(out, [2]catalog.State{from, to})
			}
		}
	}
	return out
}()

// sortedByName returns xs sorted by their label values.
func sortedByName[T interface{ String() string }](xs []T) []T {
	out := append([]T(nil), xs...)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
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
	p.descs = [numReads]*prometheus.Desc{
		readState: p.state, readTransitions: p.transitions, readTripped: p.tripped, readCalls: p.calls,
		readNotPermitted: p.notPermitted, readDuration: p.duration, readFailureRate: p.failureRate,
		readSlowRate: p.slowRate, readFailureThreshold: p.failureThreshold,
		readSlowThreshold: p.slowThreshold, readOpenDuration: p.openDuration,
	}
	return p
}

func (p *breakerPart) describe(ch chan<- *prometheus.Desc) {
	for _, d := range p.descs {
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

// singleReads are the unlabelled series of a breaker (besides `name`), in exposition order.
var singleReads = [...]uint8{readTripped, readNotPermitted, readFailureRate, readSlowRate,
	readFailureThreshold, readSlowThreshold, readOpenDuration}

// breakerMetric is one series of one breaker: a prometheus.Metric that reads its value from the
// breaker's latest snapshot when the registry asks for it. It is kept small (16 bytes, one
// pointer) because a scrape of 10,000 breakers walks half a million of them and the garbage
// collector scans them all.
type breakerMetric struct {
	s      *breakerSeries
	lo, hi uint8 // its label pairs: s.labels[lo:hi]
	read   uint8
	x, y   uint8 // catalog value: state, transition from/to, call kind or duration kind
}

// breakerSeries holds a breaker's metrics, grouped for family-by-family emission.
type breakerSeries struct {
	p      *breakerPart
	b      *breaker.Breaker
	labels []*dto.LabelPair // every metric's label pairs, back to back
	// read is what the latest collect read of the breaker. Concurrent scrapes may see a slightly
	// newer reading than their own; every reading is immutable once stored.
	read atomic.Pointer[breakerReading]

	state       [catalog.NumStates]breakerMetric // in sortedStates order
	transitions []breakerMetric                  // in transitionPairs order
	fromEnd     [catalog.NumStates]uint8         // transitions of the i-th from end at fromEnd[i]
	calls       [catalog.NumCallKinds]breakerMetric
	duration    [len(catalog.DurationKinds)]breakerMetric
	single      [len(singleReads)]breakerMetric
}

// labelPairsPerBreaker is the number of label pairs of one breaker's series: `name` on every
// series, plus the state, from and to, or kind label.
var labelPairsPerBreaker = 2*catalog.NumStates + 3*len(transitionPairs) + 2*catalog.NumCallKinds +
	2*len(catalog.DurationKinds) + len(singleReads)

func (p *breakerPart) newSeries(name string, b *breaker.Breaker) *breakerSeries {
	s := &breakerSeries{p: p, b: b, labels: make([]*dto.LabelPair, 0, labelPairsPerBreaker)}
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
	s.transitions = make([]breakerMetric, len(transitionPairs))
	for i, tr := range transitionPairs {
		from, to := tr[0], tr[1]
		s.transitions[i] = m(readTransitions, uint8(from), uint8(to),
			stateLabels[catalog.LabelFrom][from], stateLabels[catalog.LabelTo][to])
		for j, st := range sortedStates {
			if st == from {
				s.fromEnd[j] = uint8(i + 1)
			}
		}
	}
	for j := 1; j < len(s.fromEnd); j++ { // a from state without transitions ends where the last did
		s.fromEnd[j] = max(s.fromEnd[j], s.fromEnd[j-1])
	}
	for i, k := range sortedCallKinds {
		s.calls[i] = m(readCalls, uint8(k), 0, kindLabels[k])
	}
	for i, k := range sortedDurationKinds {
		s.duration[i] = m(readDuration, uint8(k), 0, kindLabels[k])
	}
	for i, r := range singleReads {
		s.single[i] = m(r, 0, 0)
	}
	return s
}

// Shared, immutable label pairs of the closed label sets, indexed by the catalog value.
var (
	stateLabels = func() map[string][catalog.NumStates]*dto.LabelPair {
		out := map[string][catalog.NumStates]*dto.LabelPair{}
		for _, l := range []string{catalog.LabelState, catalog.LabelFrom, catalog.LabelTo} {
			var pairs [catalog.NumStates]*dto.LabelPair
			for _, st := range catalog.States {
				pairs[st] = labelPair(l, st.String())
			}
			out[l] = pairs
		}
		return out
	}()
	kindLabels = func() (out [catalog.NumCallKinds]*dto.LabelPair) {
		for _, k := range catalog.CallKinds {
			out[k] = labelPair(catalog.LabelKind, k.String())
		}
		return out
	}()
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
		sn := s.b.Snapshot()
		s.read.Store(newBreakerReading(&sn))
	}
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
	for i := range sortedDurationKinds {
		for _, s := range all {
			if s.read.Load().durationsRecorded {
				ch <- &s.duration[i]
			}
		}
	}
	for i := range singleReads {
		for _, s := range all {
			ch <- &s.single[i]
		}
	}
}

// Desc implements prometheus.Metric.
func (m *breakerMetric) Desc() *prometheus.Desc { return m.s.p.descs[m.read] }

// Write implements prometheus.Metric: it reads the breaker's latest snapshot.
func (m *breakerMetric) Write(out *dto.Metric) error {
	out.Label = m.s.labels[m.lo:m.hi:m.hi]
	r := m.s.read.Load()
	switch m.read {
	case readState:
		v := 0.0
		if r.state == catalog.State(m.x) {
			v = 1
		}
		out.Gauge = gaugeOf(v)
	case readTransitions:
		out.Counter = counterOf(float64(r.transitions[m.x][m.y]))
	case readCalls:
		out.Counter = counterOf(float64(r.calls[m.x]))
	case readDuration:
		out.Histogram = histogramOf(&r.durations[m.x])
	case readTripped, readNotPermitted, readFailureRate, readSlowRate, readFailureThreshold,
		readSlowThreshold, readOpenDuration:
		v := r.singles[m.read]
		if m.read == readNotPermitted {
			out.Counter = counterOf(v)
		} else {
			out.Gauge = gaugeOf(v)
		}
	}
	return nil
}

// breakerReading is what one scrape exports of one breaker, taken from its Snapshot: the
// counters indexed by the catalog values, the classic duration histograms with their
// cumulative counts, and the values of the unlabelled series. It is a third of a Snapshot's
// size (the native histogram buckets are folded into the classic ones once, here).
type breakerReading struct {
	state             catalog.State
	durationsRecorded bool
	transitions       [catalog.NumStates][catalog.NumStates]uint64
	calls             [catalog.NumCallKinds]uint64
	durations         [len(catalog.DurationKinds)]classicHistogram
	singles           [numReads]float64 // the unlabelled series' values, by read kind
}

// classicHistogram is a call duration histogram in classic buckets (catalog.DurationBuckets).
type classicHistogram struct {
	count uint64
	sum   float64
	cum   [catalog.NumDurationBuckets]uint64
}

func newBreakerReading(sn *breaker.Snapshot) *breakerReading {
	r := &breakerReading{state: sn.State, durationsRecorded: sn.DurationsRecorded,
		transitions: sn.Transitions, calls: sn.Calls}
	for _, k := range catalog.DurationKinds {
		d := &sn.Durations[k]
		h := &r.durations[k]
		h.count, h.sum = d.Count, d.Sum
		d.CumulativeTo(durationBounds[:], h.cum[:])
	}
	var tripped float64
	if !sn.TrippedSince.IsZero() {
		tripped = float64(sn.TrippedSince.UnixNano()) / 1e9
	}
	r.singles = [numReads]float64{
		readTripped:          tripped,
		readNotPermitted:     float64(sn.NotPermitted),
		readFailureRate:      sn.FailureRate,
		readSlowRate:         sn.SlowCallRate,
		readFailureThreshold: sn.FailureRateThreshold,
		readSlowThreshold:    sn.SlowCallRateThreshold,
		readOpenDuration:     sn.OpenDuration.Seconds(),
	}
	return r
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

// durationBounds are the classic bounds of the call duration histogram, addressable for the dto
// messages.
var durationBounds = func() (out [catalog.NumDurationBuckets]float64) {
	copy(out[:], catalog.DurationBuckets)
	return out
}()

type histogramBox struct {
	h       dto.Histogram
	buckets [catalog.NumDurationBuckets]dto.Bucket
	ptrs    [catalog.NumDurationBuckets]*dto.Bucket
}

// histogramOf builds the dto of a classic duration histogram in one allocation; the counts stay
// in the (immutable) reading.
func histogramOf(c *classicHistogram) *dto.Histogram {
	bx := &histogramBox{}
	for i := range bx.buckets {
		bx.buckets[i].CumulativeCount = &c.cum[i]
		bx.buckets[i].UpperBound = &durationBounds[i]
		bx.ptrs[i] = &bx.buckets[i]
	}
	bx.h.SampleCount = &c.count
	bx.h.SampleSum = &c.sum
	bx.h.Bucket = bx.ptrs[:]
	return &bx.h
}
