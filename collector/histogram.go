package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

// Latency distributions are exported as Prometheus native histograms: the schema, the zero
// bucket and the populated buckets of a histogram.Snapshot as spans and deltas, which a scraper
// that negotiates protobuf and ingests native histograms stores as one series. The same dto
// also carries the cumulative counts at classic bounds (the catalog's default bounds — a few,
// on call durations only — or its full layouts with classic buckets on: powers of two, exact
// sums of native buckets), which every other scraper stores — a Prometheus with its default
// configuration, VictoriaMetrics. A histogram without classic bounds reads, in the text
// formats, as three lines: `_bucket{le="+Inf"}`, `_sum` and `_count`.

// The native histogram parameters every histogram shares. They are addressed by the dto
// messages of every scrape and never written.
var (
	nativeSchema        = int32(histogram.Schema)
	nativeZeroThreshold = histogram.ZeroThreshold
)

// maxSpanGap is the largest run of empty buckets written as zero deltas inside a span rather
// than as a new span (what client_golang does too: a span costs two numbers).
const maxSpanGap = 2

// Inline room of a histogramBox: histograms with up to this many spans and deltas (most
// latency distributions of one scrape interval) take a single allocation.
const (
	inlineSpans  = 2
	inlineDeltas = 16
)

// histogramBox is a dto.Histogram with the values it points to, in one allocation.
type histogramBox struct {
	h           dto.Histogram
	count, zero uint64
	sum         float64
	spans       [inlineSpans]spanBox
	spanPtrs    [inlineSpans]*dto.BucketSpan
	deltas      [inlineDeltas]int64
}

type spanBox struct {
	s      dto.BucketSpan
	offset int32
	length uint32
}

// histogramOf returns the dto of s: native always, with classic cumulative buckets at bounds
// when bounds is not nil (bounds must be addressable for as long as the dto lives: the
// package-level arrays of the catalog's bounds).
func histogramOf(s *histogram.Snapshot, bounds []float64) *dto.Histogram {
	bx := &histogramBox{}
	return bx.fill(s, bounds)
}

// fill makes bx the dto of s (see histogramOf) and returns it.
func (bx *histogramBox) fill(s *histogram.Snapshot, bounds []float64) *dto.Histogram {
	bx.count, bx.zero, bx.sum = s.Count, s.ZeroCount, s.Sum
	h := &bx.h
	h.SampleCount, h.SampleSum = &bx.count, &bx.sum
	h.Schema, h.ZeroThreshold, h.ZeroCount = &nativeSchema, &nativeZeroThreshold, &bx.zero

	// First pass: how many spans and deltas.
	nSpans, nDeltas, last := 0, 0, -1
	for i, n := range s.Buckets {
		if n == 0 {
			continue
		}
		switch {
		case last < 0 || i-last-1 > maxSpanGap:
			nSpans++
			nDeltas++
		default:
			nDeltas += i - last
		}
		last = i
	}
	if nSpans > 0 {
		var spans []spanBox
		var ptrs []*dto.BucketSpan
		var deltas []int64
		if nSpans <= inlineSpans {
			spans, ptrs = bx.spans[:nSpans], bx.spanPtrs[:nSpans]
		} else {
			spans, ptrs = make([]spanBox, nSpans), make([]*dto.BucketSpan, nSpans)
		}
		if nDeltas <= inlineDeltas {
			deltas = bx.deltas[:0:nDeltas]
		} else {
			deltas = make([]int64, 0, nDeltas)
		}
		span, last, prev := -1, -1, int64(0)
		for i, n := range s.Buckets {
			if n == 0 {
				continue
			}
			if last < 0 || i-last-1 > maxSpanGap {
				span++
				sp := &spans[span]
				if last < 0 {
					sp.offset = int32(histogram.FirstKey + i)
				} else {
					sp.offset = int32(i - last - 1)
				}
				sp.s.Offset, sp.s.Length = &sp.offset, &sp.length
				ptrs[span] = &sp.s
			} else {
				for range i - last - 1 { // a short gap: zero counts inside the span
					deltas = append(deltas, -prev)
					prev = 0
					spans[span].length++
				}
			}
			deltas = append(deltas, int64(n)-prev)
			prev = int64(n)
			spans[span].length++
			last = i
		}
		h.PositiveSpan, h.PositiveDelta = ptrs, deltas
	}
	if bounds != nil {
		h.Bucket = classicBuckets(s, bounds)
	}
	return h
}

// classicBucket is a dto.Bucket with its count.
type classicBucket struct {
	b     dto.Bucket
	count uint64
}

// maxClassicBounds bounds the classic layouts of the catalog.
const maxClassicBounds = 32

// classicBuckets returns the cumulative counts of s at bounds as dto buckets (two allocations).
func classicBuckets(s *histogram.Snapshot, bounds []float64) []*dto.Bucket {
	var counts [maxClassicBounds]uint64
	s.CumulativeTo(bounds, counts[:len(bounds)])
	bs := make([]classicBucket, len(bounds))
	ptrs := make([]*dto.Bucket, len(bounds))
	for i := range bounds {
		b := &bs[i]
		b.count = counts[i]
		b.b.CumulativeCount, b.b.UpperBound = &b.count, &bounds[i]
		ptrs[i] = &b.b
	}
	return ptrs
}

// Addressable copies of the catalog's classic bounds, for the dto messages: the full layouts
// and the default ones (catalog.DefaultBuckets; nil: native buckets only by default).
var (
	durationBounds = append([]float64(nil), catalog.DurationBuckets...)
	backoffBounds  = append([]float64(nil), catalog.BackoffBuckets...)
	waitBounds     = append([]float64(nil), catalog.WaitBuckets...)

	durationDefaultBounds = append([]float64(nil), catalog.DefaultBuckets(catalog.BreakerCallDuration)...)
	backoffDefaultBounds  = append([]float64(nil), catalog.DefaultBuckets(catalog.RetryBackoff)...)
	waitDefaultBounds     = append([]float64(nil), catalog.DefaultBuckets(catalog.BulkheadWaitDuration)...)
)

// constHistogram is a prometheus.Metric holding one histogram sample.
type constHistogram struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	h      *dto.Histogram
}

func (m *constHistogram) Desc() *prometheus.Desc { return m.desc }

func (m *constHistogram) Write(out *dto.Metric) error {
	out.Label, out.Histogram = m.labels, m.h
	return nil
}

// newConstHistogram returns the histogram s of desc with the given label values (in the order
// of desc's labels), classic buckets at bounds when bounds is not nil.
func newConstHistogram(desc *prometheus.Desc, s *histogram.Snapshot, bounds []float64, labelValues ...string) prometheus.Metric {
	return &constHistogram{desc: desc, labels: prometheus.MakeLabelPairs(desc, labelValues), h: histogramOf(s, bounds)}
}
