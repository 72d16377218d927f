package collector

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

// nativeBuckets decodes the positive spans and deltas of h into bucket key → count.
func nativeBuckets(t *testing.T, h *dto.Histogram) map[int]int64 {
	t.Helper()
	var out map[int]int64
	key, count := 0, int64(0)
	d := 0
	for i, sp := range h.GetPositiveSpan() {
		if i == 0 {
			key = int(sp.GetOffset())
		} else {
			key += int(sp.GetOffset())
		}
		for range sp.GetLength() {
			require.Less(t, d, len(h.GetPositiveDelta()), "more bucket slots than deltas")
			count += h.GetPositiveDelta()[d]
			d++
			require.GreaterOrEqual(t, count, int64(0), "negative bucket count")
			if count > 0 {
				if out == nil {
					out = map[int]int64{}
				}
				out[key] = count
			}
			key++
		}
	}
	assert.Equal(t, len(h.GetPositiveDelta()), d, "every delta belongs to a span")
	return out
}

func TestHistogramOfWritesTheNativeBuckets(t *testing.T) {
	ms := func(n ...int) (out []time.Duration) {
		for _, v := range n {
			out = append(out, time.Duration(v)*time.Microsecond)
		}
		return out
	}
	cases := map[string][]time.Duration{
		"empty":             nil,
		"zero bucket only":  {0, time.Microsecond},
		"one bucket":        {time.Millisecond},
		"short gaps filled": ms(1000, 1300, 2000, 3100), // neighbouring and 1–2 empty buckets apart
		"long gaps":         {time.Millisecond, 100 * time.Millisecond, 10 * time.Second},
		"many spans":        {time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, 100 * time.Second},
		"many buckets": func() (out []time.Duration) {
			for d := 10 * time.Microsecond; d < 100*time.Second; d = d * 11 / 10 {
				out = append(out, d, d)
			}
			return out
		}(),
	}
	for name, obs := range cases {
		t.Run(name, func(t *testing.T) {
			var h histogram.Histogram
			for _, d := range obs {
				h.Observe(d)
			}
			s := h.Snapshot()
			for _, bounds := range [][]float64{nil, durationBounds} {
				got := histogramOf(&s, bounds)
				assert.Equal(t, int32(catalog.NativeSchema), got.GetSchema())
				assert.Equal(t, catalog.NativeZeroThreshold, got.GetZeroThreshold())
				assert.Equal(t, s.ZeroCount, got.GetZeroCount())
				assert.Equal(t, s.Count, got.GetSampleCount())
				assert.Equal(t, s.Sum, got.GetSampleSum())
				assert.Equal(t, s.Native(), nativeBuckets(t, got))
				if bounds == nil {
					assert.Empty(t, got.GetBucket(), "native only")
					continue
				}
				require.Len(t, got.GetBucket(), len(bounds))
				cum := s.Cumulative(bounds)
				for _, b := range got.GetBucket() {
					assert.Equal(t, cum[b.GetUpperBound()], b.GetCumulativeCount(), "le=%v", b.GetUpperBound())
				}
			}
		})
	}
}

func TestHistogramOfAgreesWithClientGolang(t *testing.T) {
	var h histogram.Histogram
	for _, d := range []time.Duration{0, 3 * time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond, 2 * time.Second} {
		h.Observe(d)
	}
	s := h.Snapshot()
	desc := prometheus.NewDesc("x_seconds", "x", nil, nil)
	ref := prometheus.MustNewConstNativeHistogram(desc, s.Count, s.Sum, s.Native(), nil, s.ZeroCount,
		histogram.Schema, histogram.ZeroThreshold, time.Time{})
	var want dto.Metric
	require.NoError(t, ref.Write(&want))
	got := histogramOf(&s, nil)
	assert.Equal(t, nativeBuckets(t, want.GetHistogram()), nativeBuckets(t, got))
	assert.Equal(t, want.GetHistogram().GetZeroCount(), got.GetZeroCount())
	assert.Equal(t, want.GetHistogram().GetSchema(), got.GetSchema())
}

// TestNativeHistogramTextExposition documents what a native-only histogram costs in the text
// format: three lines, the +Inf bucket, the sum and the count. With classic buckets, one line
// more per bound.
func TestNativeHistogramTextExposition(t *testing.T) {
	var h histogram.Histogram
	h.Observe(3 * time.Millisecond)
	h.Observe(40 * time.Millisecond)
	s := h.Snapshot()
	desc := prometheus.NewDesc("x_seconds", "x", []string{"name"}, nil)
	for _, c := range []struct {
		bounds []float64
		lines  int
	}{{nil, 3}, {durationBounds, 3 + len(durationBounds)}} {
		pr := prometheus.NewRegistry()
		require.NoError(t, pr.Register(collectorFunc(func(ch chan<- prometheus.Metric) {
			ch <- newConstHistogram(desc, &s, c.bounds, "a")
		}, desc)))
		mfs, err := pr.Gather()
		require.NoError(t, err)
		var buf bytes.Buffer
		for _, mf := range mfs {
			_, err := expfmt.MetricFamilyToText(&buf, mf)
			require.NoError(t, err)
		}
		var samples []string
		for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			if !bytes.HasPrefix(l, []byte("#")) {
				samples = append(samples, string(l))
			}
		}
		assert.Len(t, samples, c.lines, "%s", buf.String())
		if c.bounds == nil {
			assert.Equal(t, []string{`x_seconds_bucket{name="a",le="+Inf"} 2`, `x_seconds_sum{name="a"} 0.043`, `x_seconds_count{name="a"} 2`}, samples)
		}
	}
}

// collectorFunc is a prometheus.Collector from a collect function and its descriptors.
type collectorFuncT struct {
	collect func(chan<- prometheus.Metric)
	descs   []*prometheus.Desc
}

func collectorFunc(collect func(chan<- prometheus.Metric), descs ...*prometheus.Desc) prometheus.Collector {
	return &collectorFuncT{collect, descs}
}

func (c *collectorFuncT) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collectorFuncT) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
