package breaker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// The time window's ring is larger than its bucket count (a power of two): buckets must still
// leave the window exactly n buckets later, and results older than the window are dropped.
func TestTimeWindowSlidesExactly(t *testing.T) {
	const d = 10 // ns per bucket
	for _, n := range []int{1, 3, 5, 8, 9} {
		s, err := newSettings("dep", Config{Window: TimeBased, MinCalls: 1})
		require.NoError(t, err)
		w := newTimeWindow(d, n)
		// One failure in each of buckets 0..29, recorded in the middle of the bucket.
		for k := int64(0); k < 30; k++ {
			w.record(catalog.CallFailed, k*d+d/2, s)
			calls, fails, _ := w.counts(k*d + d/2)
			want := min(k+1, int64(n))
			require.Equal(t, want, calls, "n=%d after bucket %d", n, k)
			require.Equal(t, want, fails, "n=%d after bucket %d", n, k)
			require.Equal(t, want, w.calls.Load(), "n=%d after bucket %d: the running total the trip check reads", n, k)
			// Reading later, with no records: only the buckets still inside count.
			later, _, _ := w.counts((k + int64(n)) * d)
			require.Zero(t, later, "n=%d: bucket %d has left the window %d buckets later", n, k, n)
		}
		// A result from a bucket that has left the window is dropped; one from a bucket still
		// inside it is counted there.
		w.record(catalog.CallSuccessful, (29-int64(n))*d, s)
		calls, _, _ := w.counts(29*d + d/2)
		assert.Equal(t, int64(n), calls, "n=%d: a result older than the window is dropped", n)
		if n > 1 {
			w.record(catalog.CallSuccessful, (30-int64(n))*d, s)
			calls, fails, _ := w.counts(29*d + d/2)
			assert.Equal(t, int64(n+1), calls, "n=%d: a late result inside the window counts", n)
			assert.Equal(t, int64(n), fails)
		}
	}
}
