package histogram

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// nativeKey is the reference definition of a native bucket key at schema 2: the smallest k with
// v ≤ 2^(k/4).
func nativeKey(v float64) int {
	return int(math.Ceil(math.Log2(v) * perOctave))
}

func TestObserveUsesNativeBucketBoundaries(t *testing.T) {
	cases := []struct {
		d       time.Duration
		wantKey int
	}{
		{time.Second, 0},                         // exactly 2^0: upper bound of key 0
		{time.Second + 1, 1},                     // just above
		{1189 * time.Millisecond, 1},             // < 2^(1/4) ≈ 1.18921
		{1190 * time.Millisecond, 2},             // > 2^(1/4)
		{500 * time.Millisecond, -4},             // 2^-1
		{100 * time.Millisecond, nativeKey(0.1)}, // -13
		{3 * time.Millisecond, nativeKey(0.003)},
		{64 * time.Second, 24},
		{time.Hour, maxKey}, // above the range: the top bucket
	}
	for _, c := range cases {
		var h Histogram
		h.Observe(c.d)
		s := h.Snapshot()
		require.Equal(t, uint64(1), s.Count, c.d)
		assert.Equal(t, map[int]int64{c.wantKey: 1}, s.Native(), c.d)
		assert.InDelta(t, c.d.Seconds(), s.Sum, 1e-9, "sum stays exact, %v", c.d)
	}
	assert.Equal(t, -13, nativeKey(0.1))
}

func TestIndexAgreesWithTheReferenceDefinition(t *testing.T) {
	for v := ZeroThreshold * 1.0001; v < 128; v *= 1.0137 {
		i, ok := index(v)
		require.True(t, ok)
		assert.Equal(t, nativeKey(v), FirstKey+i, "v=%g", v)
	}
	// Exact powers of two are the top of their bucket; values beyond the range go to the top one.
	for e := catalog.NativeMinExponent + 1; e <= 40; e++ {
		v := math.Ldexp(1, e)
		i, ok := index(v)
		require.True(t, ok)
		assert.Equal(t, min(nativeKey(v), maxKey), FirstKey+i, "v=2^%d", e)
	}
	i, ok := index(time.Duration(math.MaxInt64).Seconds())
	assert.True(t, ok)
	assert.Equal(t, NumBuckets-1, i)
}

func TestZeroBucket(t *testing.T) {
	var h Histogram
	h.Observe(0)
	h.Observe(-time.Second) // counts as zero
	h.Observe(7 * time.Microsecond)
	h.Observe(7629 * time.Nanosecond) // 2^-17 s is 7629.39 ns
	h.Observe(7630 * time.Nanosecond) // just above: the first bucket
	h.Observe(8 * time.Microsecond)
	s := h.Snapshot()
	assert.Equal(t, uint64(6), s.Count)
	assert.Equal(t, uint64(4), s.ZeroCount)
	assert.Equal(t, map[int]int64{FirstKey: 2}, s.Native(), "7630 ns and 8 µs are in the first bucket")
	assert.Equal(t, FirstKey, nativeKey(7.630e-6))
	assert.Equal(t, FirstKey, nativeKey(8e-6))
	assert.Equal(t, catalog.NativeZeroThreshold, ZeroThreshold)
}

func TestCumulativeIsExactOnPowerOfTwoBounds(t *testing.T) {
	var h Histogram
	obs := []time.Duration{0, time.Millisecond, 7 * time.Millisecond, 8 * time.Millisecond,
		9 * time.Millisecond, 250 * time.Millisecond, time.Second, 90 * time.Second, time.Hour}
	for _, d := range obs {
		h.Observe(d)
	}
	s := h.Snapshot()
	bounds := catalog.BackoffBuckets
	got := s.Cumulative(bounds)
	require.Len(t, got, len(bounds))
	for _, b := range bounds {
		var want uint64
		for _, d := range obs {
			if d.Seconds() <= b {
				want++
			}
		}
		assert.Equal(t, want, got[b], "le=%v", b)
	}
	counts := make([]uint64, len(bounds))
	s.CumulativeTo(bounds, counts)
	for j, b := range bounds {
		assert.Equal(t, got[b], counts[j], "CumulativeTo agrees with Cumulative at le=%v", b)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.CumulativeTo(bounds, counts) }))
	assert.Equal(t, uint64(len(obs)), s.Count)
	assert.Nil(t, (&Snapshot{}).Native())
}

func TestConcurrentObservationsAreAllCounted(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Observe(time.Duration(g*1000+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	s := h.Snapshot()
	assert.Equal(t, uint64(8000), s.Count)
	var sum uint64
	for _, n := range s.Native() {
		sum += uint64(n)
	}
	assert.Equal(t, s.Count, sum+s.ZeroCount)
}

func BenchmarkObserve(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Observe(time.Duration(i&1023) * time.Millisecond)
	}
}
