// Package histogram is the one latency histogram of stormwatch's primitives: breaker call
// durations, retry delays and bulkhead waits are all recorded by a [Histogram] and read as a
// [Snapshot], which the collector exports as a Prometheus native histogram, as classic buckets,
// or both.
//
// Observations go into the exponential buckets of a native histogram (schema, zero bucket and
// range from package catalog). Classic bucket bounds are powers of two, which are native bucket
// boundaries, so [Snapshot.Cumulative] derives exact classic counts from the same buckets: there
// is one recording, and the two views never disagree.
//
// Observe costs two atomic adds and allocates nothing; reading takes no lock.
package histogram

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// Schema is the native histogram schema of every Histogram.
const Schema = catalog.NativeSchema

const (
	perOctave = 1 << Schema
	// minKey is the native key of the zero bucket's upper bound: keys above it are buckets.
	minKey = catalog.NativeMinExponent * perOctave
	maxKey = catalog.NativeMaxExponent * perOctave
	// NumBuckets is the number of native buckets a Histogram keeps, zero bucket excluded.
	NumBuckets = maxKey - minKey
)

// FirstKey is the native bucket key of Snapshot.Buckets[0]: Buckets[i] holds the observations in
// (2^((FirstKey+i-1)/4), 2^((FirstKey+i)/4)] seconds.
const FirstKey = minKey + 1

// ZeroThreshold is the upper bound, in seconds, of the zero bucket.
var ZeroThreshold = math.Ldexp(1, catalog.NativeMinExponent)

// octaveBounds are the upper bounds, as fractions of the octave's top, of the buckets in one
// octave: 2^(k/4 - 1) for k = 1..4, so that a frac in [0.5, 1) from math.Frexp maps to a key.
var octaveBounds = func() (b [perOctave]float64) {
	for k := range b {
		b[k] = math.Exp2(float64(k+1)/perOctave - 1)
	}
	return b
}()

// Histogram records durations. The zero value is empty and ready to use; it must not be copied
// after first use. It is safe for concurrent use.
type Histogram struct {
	sum     atomic.Int64 // nanoseconds
	zero    atomic.Uint64
	buckets [NumBuckets]atomic.Uint64
}

// Observe records one duration. Negative durations count as zero.
func (h *Histogram) Observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.sum.Add(int64(d))
	if d <= zeroThresholdNs { // the zero bucket, decided without floating point
		h.zero.Add(1)
		return
	}
	i, ok := index(float64(d) / 1e9) // one division: exact at the power-of-two bounds
	if !ok {
		h.zero.Add(1)
		return
	}
	h.buckets[i].Add(1)
}

// zeroThresholdNs is the longest duration, in whole nanoseconds, that counts in the zero bucket.
var zeroThresholdNs = time.Duration(math.Floor(ZeroThreshold * 1e9))

// index returns the position in buckets of the native bucket holding v seconds, or false for
// the zero bucket. Values above the highest bucket count in it.
func index(v float64) (int, bool) {
	if v <= ZeroThreshold {
		return 0, false
	}
	// v = frac·2^exp, frac in [0.5, 1): math.Frexp for a positive normal v (v > ZeroThreshold),
	// without its special cases.
	bits := math.Float64bits(v)
	exp := int(bits>>52&0x7ff) - 1022
	frac := math.Float64frombits(bits&^(0x7ff<<52) | 1022<<52)
	k := 0
	for k < perOctave-1 && frac > octaveBounds[k] {
		k++
	}
	key := (exp-1)*perOctave + k + 1
	if frac == 0.5 { // exactly 2^(exp-1): the top of the previous octave's last bucket
		key = (exp - 1) * perOctave
	}
	return min(key, maxKey) - FirstKey, true
}

// Snapshot reads the histogram. Counts are read one by one while observations may continue, so a
// snapshot taken during calls can mix values a few nanoseconds apart; Count is always the sum of
// the bucket counts.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	s.ZeroCount = h.zero.Load()
	s.Count = s.ZeroCount
	for i := range h.buckets {
		n := h.buckets[i].Load()
		s.Buckets[i] = n
		s.Count += n
	}
	s.Sum = time.Duration(h.sum.Load()).Seconds()
	return s
}

// Snapshot is a histogram read at one moment.
type Snapshot struct {
	// Count is the number of observations and Sum their total in seconds.
	Count uint64
	Sum   float64
	// ZeroCount counts the observations of at most ZeroThreshold seconds.
	ZeroCount uint64
	// Buckets are the native bucket counts (not cumulative); Buckets[i] has key FirstKey+i.
	Buckets [NumBuckets]uint64
}

// Native returns the non-empty native buckets keyed by their native key, in the shape of
// prometheus.NewConstNativeHistogram's positive buckets. It returns nil when every observation is
// in the zero bucket.
func (s *Snapshot) Native() map[int]int64 {
	var out map[int]int64
	for i, n := range s.Buckets {
		if n == 0 {
			continue
		}
		if out == nil {
			out = make(map[int]int64, 8)
		}
		out[FirstKey+i] = int64(n)
	}
	return out
}

// Cumulative returns the classic cumulative counts for bounds (in seconds, ascending), in the
// shape of prometheus.NewConstHistogram's buckets: for each bound, the observations ≤ it. Bounds
// must be powers of two within the native range (the catalog's are); any other bound counts the
// buckets whose upper bound does not exceed it.
func (s *Snapshot) Cumulative(bounds []float64) map[float64]uint64 {
	out := make(map[float64]uint64, len(bounds))
	cum := s.ZeroCount
	i := 0
	for _, b := range bounds {
		for i < NumBuckets && uppers[i] <= b {
			cum += s.Buckets[i]
			i++
		}
		out[b] = cum
	}
	return out
}

// CumulativeTo is [Snapshot.Cumulative] without the map: counts[j] receives the observations ≤
// bounds[j]. counts must be at least as long as bounds. It allocates nothing.
func (s *Snapshot) CumulativeTo(bounds []float64, counts []uint64) {
	counts = counts[:len(bounds)]
	cum := s.ZeroCount
	i := 0
	for j, b := range bounds {
		for i < NumBuckets && uppers[i] <= b {
			cum += s.Buckets[i]
			i++
		}
		counts[j] = cum
	}
}

// uppers are the upper bounds, in seconds, of Snapshot.Buckets.
var uppers = func() (out [NumBuckets]float64) {
	for i := range out {
		out[i] = math.Exp2(float64(FirstKey+i) / perOctave)
	}
	return out
}()
