package otelx

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/collector"
	"github.com/stormwatch-go/stormwatch/collector/internal/history"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// series is one series as Prometheus stores it, by either path: a value, or a histogram.
type series struct {
	value float64
	hist  *hist
}

// hist is a histogram as Prometheus stores it: the native part (schema, zero bucket, buckets by
// native key) and the classic part (cumulative counts by upper bound).
type hist struct {
	count     uint64
	sum       float64
	native    bool
	schema    int32
	zeroThr   float64
	zeroCount uint64
	buckets   map[int]uint64
	classic   map[float64]uint64
}

// seriesKey is a series' name and its labels with a value (Prometheus stores an empty label as
// no label), sorted.
func seriesKey(name string, labels map[string]string) string {
	var ls []string
	for k, v := range labels {
		if v != "" {
			ls = append(ls, k+"="+v)
		}
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// promSeries gathers c, as a scrape of the Prometheus collector would.
func promSeries(t *testing.T, c prometheus.Collector) map[string]series {
	t.Helper()
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	out := map[string]series{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			var s series
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.hist = dtoHist(m.GetHistogram())
			default:
				t.Fatalf("%s: unexpected type %v", mf.GetName(), mf.GetType())
			}
			key := seriesKey(mf.GetName(), labels)
			require.NotContains(t, out, key)
			out[key] = s
		}
	}
	return out
}

func dtoHist(h *dto.Histogram) *hist {
	out := &hist{count: h.GetSampleCount(), sum: h.GetSampleSum()}
	if h.Schema != nil {
		out.native, out.schema, out.zeroThr, out.zeroCount = true, h.GetSchema(), h.GetZeroThreshold(), h.GetZeroCount()
		out.buckets = map[int]uint64{}
		key, deltas, v := 0, h.GetPositiveDelta(), int64(0)
		for _, sp := range h.GetPositiveSpan() {
			key += int(sp.GetOffset())
			for range sp.GetLength() {
				v += deltas[0]
				deltas = deltas[1:]
				if v != 0 {
					out.buckets[key] = uint64(v)
				}
				key++
			}
		}
	}
	if len(h.GetBucket()) > 0 {
		out.classic = map[float64]uint64{}
		for _, b := range h.GetBucket() {
			out.classic[b.GetUpperBound()] = b.GetCumulativeCount()
		}
	}
	return out
}

// otelSeries collects b through an SDK ManualReader, as an OTLP exporter would receive it, with
// the names Prometheus gives them (the catalog's, see TestPrometheusTranslationYieldsTheCatalogNames).
func otelSeries(t *testing.T, b *Bridge) map[string]series {
	t.Helper()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(b))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	reg, err := b.Register(mp)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Unregister() })
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	return resourceSeries(t, &rm)
}

func attrs(set attribute.Set) map[string]string {
	out := map[string]string{}
	for _, kv := range set.ToSlice() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

func resourceSeries(t *testing.T, rm *metricdata.ResourceMetrics) map[string]series {
	out := map[string]series{}
	add := func(name string, set attribute.Set, s series) {
		key := seriesKey(name, attrs(set))
		require.NotContains(t, out, key)
		out[key] = s
	}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.True(t, d.IsMonotonic, m.Name)
				require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, m.Name)
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, series{value: float64(dp.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, series{value: dp.Value})
				}
			case metricdata.ExponentialHistogram[float64]:
				require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, m.Name)
				for _, dp := range d.DataPoints {
					h := &hist{count: dp.Count, sum: dp.Sum, native: true, schema: dp.Scale, zeroThr: dp.ZeroThreshold,
						zeroCount: dp.ZeroCount, buckets: map[int]uint64{}}
					for i, n := range dp.PositiveBucket.Counts {
						if n != 0 {
							h.buckets[int(dp.PositiveBucket.Offset)+i+1] = n // OTel index i is native key i+1
						}
					}
					add(m.Name, dp.Attributes, series{hist: h})
				}
			case metricdata.Histogram[float64]:
				require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, m.Name)
				for _, dp := range d.DataPoints {
					h := &hist{count: dp.Count, sum: dp.Sum, classic: map[float64]uint64{}}
					cum := uint64(0)
					for i, bound := range dp.Bounds {
						cum += dp.BucketCounts[i]
						h.classic[bound] = cum
					}
					require.Equal(t, dp.Count, cum+dp.BucketCounts[len(dp.Bounds)], "+Inf")
					add(m.Name, dp.Attributes, series{hist: h})
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// equalSeries asserts that the OpenTelemetry series equal the Prometheus collector's: the same
// names and labels, the same values; for histograms the part the bridge exports (native or
// classic) equal to the collector's.
func equalSeries(t *testing.T, prom, otel map[string]series) {
	t.Helper()
	promKeys, otelKeys := keys(prom), keys(otel)
	require.Equal(t, promKeys, otelKeys, "series names and labels")
	for _, k := range promKeys {
		p, o := prom[k], otel[k]
		if p.hist == nil {
			require.Nil(t, o.hist, k)
			if math.IsNaN(p.value) {
				assert.True(t, math.IsNaN(o.value), "%s: %v, want NaN", k, o.value)
			} else {
				assert.Equal(t, p.value, o.value, k)
			}
			continue
		}
		require.NotNil(t, o.hist, k)
		assert.Equal(t, p.hist.count, o.hist.count, "%s count", k)
		assert.InDelta(t, p.hist.sum, o.hist.sum, 1e-12, "%s sum", k)
		if o.hist.native {
			require.True(t, p.hist.native, k)
			assert.Equal(t, p.hist.schema, o.hist.schema, "%s schema", k)
			assert.Equal(t, p.hist.zeroThr, o.hist.zeroThr, "%s zero threshold", k)
			assert.Equal(t, p.hist.zeroCount, o.hist.zeroCount, "%s zero count", k)
			assert.Equal(t, p.hist.buckets, o.hist.buckets, "%s native buckets", k)
		} else {
			assert.Equal(t, p.hist.classic, o.hist.classic, "%s classic buckets", k)
		}
	}
}

func keys(m map[string]series) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSameSeriesAndValuesAsThePrometheusCollector compares, for a fresh registry and after a
// scripted history that runs every path, every series the bridge exports through the SDK's
// ManualReader with the Prometheus collector's for the same registry: default and full detail,
// exponential (native) and explicit (classic) histograms.
func TestSameSeriesAndValuesAsThePrometheusCollector(t *testing.T) {
	modes := []struct {
		name string
		prom []collector.Option
		otel []Option
	}{
		{"default", nil, nil},
		{"full detail", []collector.Option{collector.WithFullDetail()}, []Option{WithFullDetail()}},
		{"classic buckets", []collector.Option{collector.WithClassicBuckets()}, []Option{WithExplicitBuckets()}},
		{"full detail, classic buckets", []collector.Option{collector.WithFullDetail()}, []Option{WithFullDetail(), WithExplicitBuckets()}},
		{"namespace", []collector.Option{collector.WithNamespace("acme")}, []Option{WithNamespace("acme")}},
	}
	check := func(t *testing.T, reg *instrument.Registry, clk clock.Clock) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				c, err := collector.New(reg, m.prom...)
				require.NoError(t, err)
				b, err := New(reg, append([]Option{WithClock(clk)}, m.otel...)...)
				require.NoError(t, err)
				prom, otel := promSeries(t, c), otelSeries(t, b)
				equalSeries(t, prom, otel)
				t.Logf("%d series", len(otel))
			})
		}
	}
	h := history.New(t, history.WithMoreNames())
	t.Run("fresh", func(t *testing.T) { check(t, h.Registry(), h.Clock()) })
	h.EveryPath()
	t.Run("every path", func(t *testing.T) { check(t, h.Registry(), h.Clock()) })

	// An adaptive limiter with a permit held, one rejection and one measured call, and a
	// throttle that saw one accepted request.
	l, err := h.Registry().Limiter("payments", limit.Config{InitialLimit: 1, MaxLimit: 1, Clock: h.Clock()})
	require.NoError(t, err)
	held, err := l.Acquire(context.Background())
	require.NoError(t, err)
	_, err = l.Acquire(context.Background())
	require.ErrorIs(t, err, limit.ErrLimited)
	held.Done(nil)
	_, err = l.Acquire(context.Background())
	require.NoError(t, err)
	th, err := h.Registry().Throttle("payments", throttle.Config{Clock: h.Clock()})
	require.NoError(t, err)
	require.NoError(t, th.Do(context.Background(), func(context.Context) error { return nil }))
	t.Run("limiter and throttle", func(t *testing.T) { check(t, h.Registry(), h.Clock()) })

	// A hedge that won once (its first attempt hung until cancelled), plus a budget refusal:
	// calls, two outcomes above 0 and two at 0, and the delay.
	budget := newTokens(1)
	hd, err := h.Registry().Hedge("hedged-api", hedge.Config{Delay: 10 * time.Millisecond, Idempotent: true,
		Clock: h.Clock(), Budget: budget})
	require.NoError(t, err)
	hedgeOnce(t, hd, budget, h.Clock())
	hedgeOnce(t, hd, budget, h.Clock())
	s := hd.Snapshot()
	require.Equal(t, uint64(1), s.Hedges[catalog.HedgeWon])
	require.Equal(t, uint64(1), s.Hedges[catalog.HedgeBudgetDenied])
	t.Run("hedge", func(t *testing.T) { check(t, h.Registry(), h.Clock()) })
}

// tokens is a hedge budget of a fixed number of tokens that reports every answer it gives.
type tokens struct {
	left  atomic.Int32
	asked chan bool
}

func newTokens(n int32) *tokens {
	b := &tokens{asked: make(chan bool, 8)}
	b.left.Store(n)
	return b
}

func (b *tokens) SpendToken() bool {
	ok := b.left.Add(-1) >= 0
	b.asked <- ok
	return ok
}

// hedgeOnce makes one call through hd whose first attempt hangs until cancelled and whose hedge,
// if the budget lets it run, answers at once; when the budget refuses it, the caller leaves.
func hedgeOnce(t *testing.T, hd *hedge.Hedge, b *tokens, clk *clock.Fake) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- hd.Do(ctx, func(ctx context.Context) error {
			if n.Add(1) == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
	}()
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(10 * time.Millisecond)
	if <-b.asked {
		require.NoError(t, <-done, "the hedge won")
		return
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

var _ = fmt.Sprint
