package collector

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

// breakerPart exports the circuitbreaker metrics of the catalog for every breaker in the
// registry.
//
// By default a breaker exports (see the package documentation): the closed, open and half_open
// states, and the others once it has been in them (its current state, or a committed transition
// into it); the transitions to open from 0, the other pairs once counted; tripped_since with its
// cause; the successful and failed calls (the slow kinds too with slow-call detection on, ignored
// once counted); not-permitted calls; the failure rate; the slow-call rate and threshold with
// slow-call detection on; the duration of successful calls while the breaker records durations.
// With full detail, every state, every transition that breaker.CanTransition allows, every call
// kind, both duration kinds and every configuration gauge, from the start.
//
// Scraping 10,000 breakers is dominated by client_golang's own per-series work, so this part
// keeps its share small: the label pairs and the prometheus.Metric objects of a breaker are
// built once, the first time a scrape sees it. Each scrape takes one Snapshot per breaker and
// keeps what it exports in a compact reading (one allocation per breaker, the successful-call
// histogram included); every series of the breaker reads its value from that reading into the
// dto message (one allocation per series). Series are sent family by family in label order, so
// the registry's sort finds them already sorted.
type breakerPart struct {
	reg    *instrument.Registry
	full   bool
	bounds []float64 // classic bounds of the duration histogram; nil: native only
	descs  [numReads]*prometheus.Desc

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
	// sortedTripCauses are the trip causes in label order, after the empty cause of a closed
	// breaker.
	sortedTripCauses = sortedByName(catalog.TripCauses[:])
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
		reg:    c.reg,
		full:   c.full,
		bounds: c.bounds(durationBounds),
		series: map[*breaker.Breaker]*breakerSeries{},
	}
	p.descs = [numReads]*prometheus.Desc{
		readState:            c.desc(catalog.BreakerState),
		readTransitions:      c.desc(catalog.BreakerTransitions),
		readTripped:          c.desc(catalog.BreakerTrippedSince),
		readCalls:            c.desc(catalog.BreakerCalls),
		readNotPermitted:     c.desc(catalog.BreakerNotPermitted),
		readDuration:         c.desc(catalog.BreakerCallDuration),
		readFailureRate:      c.desc(catalog.BreakerFailureRate),
		readSlowRate:         c.desc(catalog.BreakerSlowCallRate),
		readFailureThreshold: c.desc(catalog.BreakerFailureRateThreshold),
		readSlowThreshold:    c.desc(catalog.BreakerSlowCallRateThreshold),
		readOpenDuration:     c.desc(catalog.BreakerOpenDuration),
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

// singleReads are the series of a breaker labelled by `name` only, in exposition order.
var singleReads = [...]uint8{readNotPermitted, readFailureRate, readSlowRate,
	readFailureThreshold, readSlowThreshold, readOpenDuration}

// breakerMetric is one series of one breaker: a prometheus.Metric that reads its value from the
// breaker's latest snapshot when the registry asks for it. It is kept small (16 bytes, one
// pointer) because a scrape of 10,000 breakers walks hundreds of thousands of them and the
// garbage collector scans them all.
type breakerMetric struct {
	s      *breakerSeries
	lo, hi uint8 // its label pairs: s.labels[lo:hi]
	read   uint8
	x, y   uint8 // state, call kind or duration kind; for a transition its index in transitionPairs and its to state
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
	tripped     breakerMetric                    // its label pairs: (cause, name) per cause, see tripLabels
	calls       [catalog.NumCallKinds]breakerMetric
	duration    [len(catalog.DurationKinds)]breakerMetric
	single      [len(singleReads)]breakerMetric
}

// labelPairsPerBreaker is the number of label pairs of one breaker's series: `name` on every
// series, plus the state, from and to, kind or cause label.
var labelPairsPerBreaker = 2*catalog.NumStates + 3*len(transitionPairs) + 2*(catalog.NumTripCauses+1) +
	2*catalog.NumCallKinds + 2*len(catalog.DurationKinds) + len(singleReads)

func (p *breakerPart) newSeries(name string, b *breaker.Breaker) *breakerSeries {
	s := &breakerSeries{p: p, b: b, labels: make([]*dto.LabelPair, 0, labelPairsPerBreaker)}
	nameLabel := labelPair(catalog.LabelName, name)
	m := func(read uint8, x, y uint8, extra ...*dto.LabelPair) breakerMetric {
		// Label pairs sorted by label name, as client_golang expects: cause < from < kind <
		// name < state < to.
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
		s.transitions[i] = m(readTransitions, uint8(i), uint8(to),
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
	// tripped_since: (cause, name) for each cause by its catalog value, then ("", name).
	s.tripped = m(readTripped, 0, 0, causeLabels[0])
	for _, c := range catalog.TripCauses[1:] {
		m(readTripped, 0, 0, causeLabels[c])
	}
	m(readTripped, 0, 0, causeLabels[catalog.NumTripCauses])
	for i, k := range sortedCallKinds {
		s.calls[i] = m(readCalls, uint8(k), 0, kindLabels[k])
	}
	for i, k := range sortedDurationKinds {
		s.duration[i] = m(readDuration, uint8(k), 0, kindLabels[k])
	}
	for i, r := range singleReads {
		s.single[i] = m(r, uint8(i), 0)
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
	// causeLabels are the trip cause label pairs by catalog value, and at NumTripCauses the
	// empty cause of a closed breaker.
	causeLabels = func() (out [catalog.NumTripCauses + 1]*dto.LabelPair) {
		for _, c := range catalog.TripCauses {
			out[c] = labelPair(catalog.LabelCause, c.String())
		}
		out[catalog.NumTripCauses] = labelPair(catalog.LabelCause, "")
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
	reads := make([]breakerReading, len(all)) // the readings of this scrape, one allocation
	for i, s := range all {
		sn := s.b.Snapshot()
		p.fillReading(&reads[i], &sn)
		s.read.Store(&reads[i])
	}
	full := p.full
	for i, s := range all {
		r := &reads[i]
		for j, st := range sortedStates {
			if full || st <= catalog.StateHalfOpen || r.visited&(1<<st) != 0 {
				ch <- &s.state[j]
			}
		}
	}
	for i := range sortedStates {
		for k, s := range all {
			r := &reads[k]
			lo := uint8(0)
			if i > 0 {
				lo = s.fromEnd[i-1]
			}
			for j := lo; j < s.fromEnd[i]; j++ {
				tr := &s.transitions[j]
				if full || catalog.State(tr.y) == catalog.StateOpen || r.transitions[tr.x] > 0 {
					ch <- tr
				}
			}
		}
	}
	for i, s := range all { // the closed ones (empty cause) first, then by cause
		if reads[i].tripped == 0 {
			ch <- &s.tripped
		}
	}
	for _, c := range sortedTripCauses {
		for i, s := range all {
			if r := &reads[i]; r.tripped != 0 && r.cause == c {
				ch <- &s.tripped
			}
		}
	}
	for j, k := range sortedCallKinds {
		for i, s := range all {
			r := &reads[i]
			if full || r.calls[k] > 0 || k == catalog.CallSuccessful || k == catalog.CallFailed ||
				(r.slowOn && (k == catalog.CallSlowSuccessful || k == catalog.CallSlowFailed)) {
				ch <- &s.calls[j]
			}
		}
	}
	for j, k := range sortedDurationKinds {
		for i, s := range all {
			if reads[i].durations[k] != nil {
				ch <- &s.duration[j]
			}
		}
	}
	for j, rd := range singleReads {
		for i, s := range all {
			if full || exportedSingle(rd, &reads[i]) {
				ch <- &s.single[j]
			}
		}
	}
}

// exportedSingle reports whether the default exposition holds the unlabelled series rd of r.
func exportedSingle(rd uint8, r *breakerReading) bool {
	switch rd {
	case readSlowRate, readSlowThreshold:
		return r.slowOn
	case readFailureThreshold, readOpenDuration:
		return false
	}
	return true
}

// Desc implements prometheus.Metric.
func (m *breakerMetric) Desc() *prometheus.Desc { return m.s.p.descs[m.read] }

// Write implements prometheus.Metric: it reads the breaker's latest snapshot.
func (m *breakerMetric) Write(out *dto.Metric) error {
	out.Label = m.s.labels[m.lo:m.hi:m.hi]
	r := m.s.read.Load()
	switch m.read {
	case readState:
		if r.state == catalog.State(m.x) {
			out.Gauge = gaugeOne
		} else {
			out.Gauge = gaugeZero
		}
	case readTransitions:
		out.Counter = counterAt(&r.transitions[m.x])
	case readTripped:
		c := int(catalog.NumTripCauses)
		if r.tripped != 0 {
			c = int(r.cause)
		}
		lo := int(m.lo) + 2*c
		out.Label = m.s.labels[lo : lo+2 : lo+2]
		out.Gauge = gaugeAt(&r.tripped)
	case readCalls:
		out.Counter = counterAt(&r.calls[m.x])
	case readDuration:
		out.Histogram = r.durations[m.x]
	case readNotPermitted:
		out.Counter = counterAt(&r.singles[m.x])
	default:
		out.Gauge = gaugeAt(&r.singles[m.x])
	}
	return nil
}

// breakerReading is what one scrape exports of one breaker, taken from its Snapshot: the
// counters (as the float64 values the dto messages point to), the states it has been in, the
// histograms it exports and the values of the unlabelled series. The successful-call histogram
// lives in the reading itself. A scrape allocates the readings of all breakers at once.
type breakerReading struct {
	state       catalog.State
	visited     uint8 // bit s: the breaker is or has been in state s
	slowOn      bool
	cause       catalog.TripCause
	tripped     float64                     // Unix seconds of the trip; 0 while closed
	transitions [numTransitionPairs]float64 // in transitionPairs order
	calls       [catalog.NumCallKinds]float64
	singles     [len(singleReads)]float64
	durations   [len(catalog.DurationKinds)]*dto.Histogram // nil: not exported
	successful  histogramBox
}

// numTransitionPairs is len(transitionPairs), checked by a test: the transitions that
// breaker.CanTransition allows.
const numTransitionPairs = 23

func (p *breakerPart) fillReading(r *breakerReading, sn *breaker.Snapshot) {
	r.state, r.slowOn, r.cause = sn.State, sn.SlowCallDuration > 0, sn.TripCause
	r.visited = 1 << sn.State
	for i, tr := range transitionPairs {
		n := sn.Transitions[tr[0]][tr[1]]
		r.transitions[i] = float64(n)
		if n > 0 {
			r.visited |= 1 << tr[1]
		}
	}
	for k, n := range sn.Calls {
		r.calls[k] = float64(n)
	}
	if sn.DurationsRecorded {
		r.durations[catalog.CallSuccessful] = r.successful.fill(&sn.Durations[catalog.CallSuccessful], p.bounds)
		if p.full {
			r.durations[catalog.CallFailed] = histogramOf(&sn.Durations[catalog.CallFailed], p.bounds)
		}
	}
	if !sn.TrippedSince.IsZero() {
		r.tripped = float64(sn.TrippedSince.UnixNano()) / 1e9
	}
	for i, rd := range singleReads {
		var v float64
		switch rd {
		case readNotPermitted:
			v = float64(sn.NotPermitted)
		case readFailureRate:
			v = sn.FailureRate
		case readSlowRate:
			v = sn.SlowCallRate
		case readFailureThreshold:
			v = sn.FailureRateThreshold
		case readSlowThreshold:
			v = sn.SlowCallRateThreshold
		case readOpenDuration:
			v = sn.OpenDuration.Seconds()
		}
		r.singles[i] = v
	}
}

// The dto messages of the series point into the readings, which are immutable once stored, so a
// series costs one small allocation; the values 0, 1 and NaN — every state gauge, most trips and
// rejection counters, a rate below the minimum number of calls — share package-level messages
// and cost none. Nothing writes a dto message after Write: client_golang and the encoders only
// read them.
var (
	zero, one, nan = 0.0, 1.0, math.NaN()
	gaugeZero      = &dto.Gauge{Value: &zero}
	gaugeOne       = &dto.Gauge{Value: &one}
	gaugeNaN       = &dto.Gauge{Value: &nan}
	counterZero    = &dto.Counter{Value: &zero}
)

// gaugeAt returns a gauge message whose value is *v (v must not change).
func gaugeAt(v *float64) *dto.Gauge {
	switch {
	case *v == 0:
		return gaugeZero
	case *v == 1:
		return gaugeOne
	case math.IsNaN(*v):
		return gaugeNaN
	}
	return &dto.Gauge{Value: v}
}

// counterAt returns a counter message whose value is *v (v must not change).
func counterAt(v *float64) *dto.Counter {
	if *v == 0 {
		return counterZero
	}
	return &dto.Counter{Value: v}
}
