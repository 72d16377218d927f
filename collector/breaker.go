package collector

import (
	"math"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

// breakerPart exports the circuitbreaker metrics of the catalog for every breaker in the
// registry.
//
// Which of a breaker's series it exports is the answer of the collector's Policy to the
// breaker's snapshot (see Policy.Breaker and the package documentation).
//
// Scraping 10,000 breakers is dominated by client_golang's own per-series work, so this part
// keeps its share small. A breaker's prometheus.Metric objects and label pairs are built for
// the set of series it exports (its layout), and rebuilt only when that set changes (a state
// visited, a transition or call kind counted for the first time). Each scrape takes one
// Snapshot per breaker and keeps what it exports in a compact reading, without pointers (the
// readings of all breakers in one allocation); a series' dto message points into the reading
// (no allocation for the values 0, 1 and NaN, one otherwise). Series are sent family by family
// in label order, so the registry's sort finds them already sorted.
type breakerPart struct {
	reg    *instrument.Registry
	policy Policy
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
			if catalog.CanTransition(from, to) {
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
		policy: Policy{FullDetail: c.full},
		bounds: c.bounds(durationBounds, durationDefaultBounds),
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
// pointer) because a scrape of 10,000 breakers walks a hundred thousand of them and the
// garbage collector scans them all.
type breakerMetric struct {
	l      *seriesLayout
	lo, hi uint8 // its label pairs: l.labels[lo:hi]
	read   uint8
	x, y   uint8 // state, call kind, duration kind or index in singleReads; for a transition its index in transitionPairs and its to state
}

// breakerSeries is what the collector keeps of a breaker between scrapes: its latest reading
// and the layout of the series it exports.
type breakerSeries struct {
	p    *breakerPart
	b    *breaker.Breaker
	name *dto.LabelPair
	// read is what the latest collect read of the breaker. Concurrent scrapes may see a slightly
	// newer reading than their own; every reading is immutable once stored.
	read atomic.Pointer[breakerReading]
	// hist is the latest scrape's duration histograms (kept apart so that readings hold no
	// pointers, which the garbage collector then never scans); nil: not exported.
	hist [len(catalog.DurationKinds)]atomic.Pointer[dto.Histogram]
	// layout holds the metrics of the series exported, rebuilt (rarely) when that set changes.
	layout atomic.Pointer[seriesLayout]
}

// The groups of a breaker's series, in emission order: each is one family, or the part of a
// family with one value of the label that sorts before `name` (the from state of a transition,
// the kind of a call or of a duration), so that sending group after group, breaker after
// breaker, sends each family in label order.
const (
	groupStates  = 0
	groupFrom    = 1                                     // + index in sortedStates
	groupTripped = groupFrom + catalog.NumStates         // one series, sent by cause
	groupCalls   = groupTripped + 1                      // + index in sortedCallKinds
	groupDur     = groupCalls + catalog.NumCallKinds     // + index in sortedDurationKinds
	groupSingle  = groupDur + len(catalog.DurationKinds) // + index in singleReads
	numGroups    = groupSingle + len(singleReads)
)

// Bits of a layout's shape: which of a breaker's possible series it exports.
const (
	shapeStates      = 0                                     // + index in sortedStates
	shapeTransitions = shapeStates + catalog.NumStates       // + index in transitionPairs
	shapeCalls       = shapeTransitions + numTransitionPairs // + index in sortedCallKinds
	shapeDur         = shapeCalls + catalog.NumCallKinds     // + index in sortedDurationKinds
	shapeSingle      = shapeDur + len(catalog.DurationKinds) // + index in singleReads
	numShapeBits     = shapeSingle + len(singleReads)
)

// seriesLayout is an immutable set of a breaker's series: the metrics of its shape, grouped by
// numGroups, and their label pairs.
type seriesLayout struct {
	s       *breakerSeries
	shape   uint64
	group   [numGroups + 1]uint8 // the metrics of group g are metrics[group[g]:group[g+1]]
	metrics []breakerMetric
	labels  []*dto.LabelPair // every metric's label pairs, back to back
}

func (p *breakerPart) newSeries(name string, b *breaker.Breaker) *breakerSeries {
	return &breakerSeries{p: p, b: b, name: labelPair(catalog.LabelName, name)}
}

// layoutFor returns s's layout of shape, building a new one when the shape changed.
func (s *breakerSeries) layoutFor(shape uint64) *seriesLayout {
	if l := s.layout.Load(); l != nil && l.shape == shape {
		return l
	}
	l := &seriesLayout{s: s, shape: shape}
	n := bits.OnesCount64(shape) + 1
	l.metrics = make([]breakerMetric, 0, n)
	l.labels = make([]*dto.LabelPair, 0, 3*n+2*catalog.NumTripCauses)
	g := 0
	startGroup := func(to int) {
		for ; g <= to; g++ {
			l.group[g] = uint8(len(l.metrics))
		}
	}
	add := func(bit int, read uint8, x, y uint8, extra ...*dto.LabelPair) {
		if bit >= 0 && shape&(1<<bit) == 0 {
			return
		}
		// Label pairs sorted by label name, as client_golang expects: cause < from < kind <
		// name < state < to.
		lo := len(l.labels)
		for _, lp := range extra {
			if lp.GetName() < catalog.LabelName {
				l.labels = append(l.labels, lp)
			}
		}
		l.labels = append(l.labels, s.name)
		for _, lp := range extra {
			if lp.GetName() > catalog.LabelName {
				l.labels = append(l.labels, lp)
			}
		}
		l.metrics = append(l.metrics, breakerMetric{l: l, lo: uint8(lo), hi: uint8(len(l.labels)), read: read, x: x, y: y})
	}
	startGroup(groupStates)
	for i, st := range sortedStates {
		add(shapeStates+i, readState, uint8(st), 0, stateLabels[catalog.LabelState][st])
	}
	for f, from := range sortedStates {
		startGroup(groupFrom + f)
		for i, tr := range transitionPairs {
			if tr[0] == from {
				add(shapeTransitions+i, readTransitions, uint8(i), uint8(tr[1]),
					stateLabels[catalog.LabelFrom][from], stateLabels[catalog.LabelTo][tr[1]])
			}
		}
	}
	// tripped_since: one metric whose label pairs are (cause, name) for each cause by its
	// catalog value, then ("", name); Write picks the pair of the reading's cause.
	startGroup(groupTripped)
	add(-1, readTripped, 0, 0, causeLabels[0])
	for _, c := range catalog.TripCauses[1:] {
		l.labels = append(l.labels, causeLabels[c], s.name)
	}
	l.labels = append(l.labels, causeLabels[catalog.NumTripCauses], s.name)
	for i, k := range sortedCallKinds {
		startGroup(groupCalls + i)
		add(shapeCalls+i, readCalls, uint8(k), 0, kindLabels[k])
	}
	for i, k := range sortedDurationKinds {
		startGroup(groupDur + i)
		add(shapeDur+i, readDuration, uint8(k), 0, kindLabels[k])
	}
	for i, rd := range singleReads {
		startGroup(groupSingle + i)
		add(shapeSingle+i, rd, uint8(i), 0)
	}
	startGroup(numGroups)
	s.layout.Store(l)
	return l
}

// shape returns the bits of the series in ser, the policy's answer for one snapshot.
func (p *breakerPart) shape(ser *BreakerSeries) uint64 {
	var shape uint64
	for i, st := range sortedStates {
		if ser.States[st] {
			shape |= 1 << (shapeStates + i)
		}
	}
	for i, tr := range transitionPairs {
		if ser.Transitions[tr[0]][tr[1]] {
			shape |= 1 << (shapeTransitions + i)
		}
	}
	for i, k := range sortedCallKinds {
		if ser.Calls[k] {
			shape |= 1 << (shapeCalls + i)
		}
	}
	for i, k := range sortedDurationKinds {
		if ser.Durations[k] {
			shape |= 1 << (shapeDur + i)
		}
	}
	for i, rd := range singleReads {
		if exportedSingle(rd, ser) {
			shape |= 1 << (shapeSingle + i)
		}
	}
	return shape
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(list) == 0 {
		if len(p.series) > 0 { // every breaker evicted
			p.series, p.alignedFor, p.aligned = map[*breaker.Breaker]*breakerSeries{}, nil, nil
		}
		return nil
	}
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
	if len(p.series) > len(list) {
		// Breakers left the registry (idle eviction): forget their series, so that a
		// breaker re-created under the name starts afresh and nothing evicted stays reachable.
		kept := make(map[*breaker.Breaker]*breakerSeries, len(list))
		for i, nb := range list {
			kept[nb.Value] = out[i]
		}
		p.series = kept
	}
	p.alignedFor, p.aligned = list, out
	return out
}

func (p *breakerPart) collect(ch chan<- prometheus.Metric) {
	all := p.seriesFor(p.reg.Breakers())
	// The readings of this scrape in one allocation (they hold no pointers), the layouts in
	// another.
	reads := make([]breakerReading, len(all))
	lays := make([]*seriesLayout, len(all))
	var tripped []int // the breakers not closed, usually few
	for i, s := range all {
		sn := s.b.Snapshot()
		r := &reads[i]
		ser := p.policy.Breaker(&sn)
		p.fillReading(r, &sn, &ser)
		for _, k := range catalog.DurationKinds {
			var h *dto.Histogram
			if r.durations&(1<<k) != 0 {
				h = p.histogram(s.hist[k].Load(), &sn.Durations[k])
			}
			s.hist[k].Store(h)
		}
		s.read.Store(r)
		lays[i] = s.layoutFor(p.shape(&ser))
		if r.tripped != 0 {
			tripped = append(tripped, i)
		}
	}
	send := func(g int) {
		for _, l := range lays {
			for j := l.group[g]; j < l.group[g+1]; j++ {
				ch <- &l.metrics[j]
			}
		}
	}
	for g := groupStates; g < groupTripped; g++ {
		send(g)
	}
	// tripped_since by cause: the closed breakers (empty cause) first.
	for i, l := range lays {
		if reads[i].tripped == 0 {
			ch <- &l.metrics[l.group[groupTripped]]
		}
	}
	for _, c := range sortedTripCauses {
		for _, i := range tripped {
			if reads[i].cause == c {
				ch <- &lays[i].metrics[lays[i].group[groupTripped]]
			}
		}
	}
	for g := groupTripped + 1; g < numGroups; g++ {
		send(g)
	}
}

// histogram returns the dto of h: prev, the one of the previous scrape, when no observation
// was made since (a breaker that saw no call between two scrapes costs no allocation), else a
// new one.
func (p *breakerPart) histogram(prev *dto.Histogram, h *histogram.Snapshot) *dto.Histogram {
	if prev != nil && prev.GetSampleCount() == h.Count && prev.GetSampleSum() == h.Sum &&
		prev.GetZeroCount() == h.ZeroCount && prev != emptyHistogram {
		return prev
	}
	return histogramOf(h, p.bounds)
}

// exportedSingle reports whether ser holds the unlabelled series rd.
func exportedSingle(rd uint8, ser *BreakerSeries) bool {
	switch rd {
	case readSlowRate:
		return ser.SlowCallRate
	case readSlowThreshold:
		return ser.SlowCallRateThreshold
	case readFailureThreshold:
		return ser.FailureRateThreshold
	case readOpenDuration:
		return ser.OpenDuration
	}
	return true
}

// Desc implements prometheus.Metric.
func (m *breakerMetric) Desc() *prometheus.Desc { return m.l.s.p.descs[m.read] }

// Write implements prometheus.Metric: it reads the breaker's latest snapshot.
func (m *breakerMetric) Write(out *dto.Metric) error {
	out.Label = m.l.labels[m.lo:m.hi:m.hi]
	r := m.l.s.read.Load()
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
		out.Label = m.l.labels[lo : lo+2 : lo+2]
		out.Gauge = gaugeAt(&r.tripped)
	case readCalls:
		out.Counter = counterAt(&r.calls[m.x])
	case readDuration:
		// A concurrent scrape may have stored a newer reading in which the breaker stopped
		// recording durations (Reconfigure): then the histogram reads as empty this once.
		out.Histogram = m.l.s.hist[m.x].Load()
		if out.Histogram == nil {
			out.Histogram = emptyHistogram
		}
	case readNotPermitted:
		out.Counter = counterAt(&r.singles[m.x])
	default:
		out.Gauge = gaugeAt(&r.singles[m.x])
	}
	return nil
}

// breakerReading is what one scrape exports of one breaker, taken from its Snapshot: the
// counters (as the float64 values the dto messages point to), the states it has been in, the
// histograms it exports and the values of the unlabelled series. A scrape allocates the readings
// of all breakers at once.
type breakerReading struct {
	state       catalog.State
	cause       catalog.TripCause
	tripped     float64                     // Unix seconds of the trip; 0 while closed
	transitions [numTransitionPairs]float64 // in transitionPairs order
	calls       [catalog.NumCallKinds]float64
	singles     [len(singleReads)]float64
	durations   uint8 // bit k: the histogram of duration kind k is exported
}

// numTransitionPairs is len(transitionPairs), checked by a test: the transitions that
// catalog.CanTransition allows.
const numTransitionPairs = 23

func (p *breakerPart) fillReading(r *breakerReading, sn *breaker.Snapshot, ser *BreakerSeries) {
	r.state, r.cause = sn.State, sn.TripCause
	for i, tr := range transitionPairs {
		r.transitions[i] = float64(sn.Transitions[tr[0]][tr[1]])
	}
	for k, n := range sn.Calls {
		r.calls[k] = float64(n)
	}
	for _, k := range catalog.DurationKinds {
		if ser.Durations[k] {
			r.durations |= 1 << k
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
	emptyHistogram = histogramOf(&histogram.Snapshot{}, nil)
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
