package otelx

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/histogram"
)

var _ sdkmetric.Producer = (*Bridge)(nil)

// Produce implements sdkmetric.Producer: it returns the latency histograms of the catalog —
// breaker call durations, retry delays, bulkhead waits — read from the primitives' snapshots
// now, with cumulative temporality, in one scope ([ScopeName]). A reader created with
// sdkmetric.WithProducer(bridge) calls it at each collection and exports its result with the
// provider's resource.
//
// The histograms are exponential histograms of scale 2 — the primitives' own native buckets,
// passed on unchanged: bucket index i of the OpenTelemetry histogram is the native bucket
// (2^(i/4), 2^((i+1)/4)] seconds, the zero bucket holds observations of at most 2^-17 s —
// which Prometheus's OTLP ingestion stores as native histograms of schema 2. With
// [WithExplicitBuckets] they are explicit-bucket histograms with the catalog's classic bounds.
// Which series exist follows the bridge's collector.Policy, as for the instruments.
func (b *Bridge) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := b.clk.Now()
	h := histograms{b: b, now: now}
	b.mu.Lock()
	for _, nb := range b.reg.Breakers() {
		sn := nb.Value.Snapshot()
		ser := b.policy.Breaker(&sn)
		a := b.breakerAttrs(nb, now)
		for _, k := range catalog.DurationKinds {
			if ser.Durations[k] {
				h.add(&h.duration, &sn.Durations[k], a.durations[k], a.start, catalog.DurationBuckets)
			}
		}
	}
	for _, nr := range b.reg.Retries() {
		sn := nr.Value.Snapshot()
		ser := b.policy.Retry(&sn)
		a := b.retryAttrs(nr, now)
		for _, src := range catalog.DelaySources {
			if ser.Backoff[src] {
				h.add(&h.backoff, &sn.Backoff[src], a.backoff[src], a.start, catalog.BackoffBuckets)
			}
		}
	}
	for _, nb := range b.reg.Bulkheads() {
		sn := nb.Value.Snapshot()
		a := b.bulkheadAttrs(nb, now)
		h.add(&h.wait, &sn.Wait, a.set, a.start, catalog.WaitBuckets)
	}
	b.mu.Unlock()

	var ms []metricdata.Metrics
	for _, f := range []struct {
		m   catalog.Metric
		pts *points
	}{{catalog.BreakerCallDuration, &h.duration}, {catalog.RetryBackoff, &h.backoff}, {catalog.BulkheadWaitDuration, &h.wait}} {
		if len(f.pts.exp) == 0 && len(f.pts.explicit) == 0 {
			continue // Prometheus warns of metrics without data points
		}
		out := metricdata.Metrics{Name: b.Name(f.m), Description: f.m.Help, Unit: Unit(f.m)}
		if b.explicit {
			out.Data = metricdata.Histogram[float64]{DataPoints: f.pts.explicit, Temporality: metricdata.CumulativeTemporality}
		} else {
			out.Data = metricdata.ExponentialHistogram[float64]{DataPoints: f.pts.exp, Temporality: metricdata.CumulativeTemporality}
		}
		ms = append(ms, out)
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: ScopeName}, Metrics: ms}}, nil
}

// histograms collects the data points of one Produce call.
type histograms struct {
	b                       *Bridge
	now                     time.Time
	duration, backoff, wait points
}

type points struct {
	exp      []metricdata.ExponentialHistogramDataPoint[float64]
	explicit []metricdata.HistogramDataPoint[float64]
}

func (h *histograms) add(p *points, s *histogram.Snapshot, set attribute.Set, start time.Time, bounds []float64) {
	if h.b.explicit {
		p.explicit = append(p.explicit, explicitPoint(s, set, start, h.now, bounds))
		return
	}
	p.exp = append(p.exp, exponentialPoint(s, set, start, h.now))
}

// exponentialPoint returns s as an exponential histogram data point of scale histogram.Schema.
// The native bucket of key k, (2^((k-1)/4), 2^(k/4)] seconds, is the OpenTelemetry bucket of
// index k-1, whose range is (base^(k-1), base^k] with base 2^(1/4).
func exponentialPoint(s *histogram.Snapshot, set attribute.Set, start, now time.Time) metricdata.ExponentialHistogramDataPoint[float64] {
	dp := metricdata.ExponentialHistogramDataPoint[float64]{
		Attributes:    set,
		StartTime:     start,
		Time:          now,
		Count:         s.Count,
		Sum:           s.Sum,
		Scale:         histogram.Schema,
		ZeroCount:     s.ZeroCount,
		ZeroThreshold: histogram.ZeroThreshold,
	}
	first, last := -1, -1
	for i, n := range s.Buckets {
		if n != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first >= 0 {
		dp.PositiveBucket = metricdata.ExponentialBucket{
			Offset: int32(histogram.FirstKey + first - 1),
			Counts: append([]uint64(nil), s.Buckets[first:last+1]...),
		}
	}
	return dp
}

// maxBounds bounds the catalog's classic layouts.
const maxBounds = 32

// explicitPoint returns s as an explicit-bucket data point with the given bounds (the catalog's
// classic bounds, powers of two: exact sums of native buckets).
func explicitPoint(s *histogram.Snapshot, set attribute.Set, start, now time.Time, bounds []float64) metricdata.HistogramDataPoint[float64] {
	var cum [maxBounds]uint64
	s.CumulativeTo(bounds, cum[:len(bounds)])
	counts := make([]uint64, len(bounds)+1)
	prev := uint64(0)
	for i := range bounds {
		counts[i] = cum[i] - prev
		prev = cum[i]
	}
	counts[len(bounds)] = s.Count - prev
	return metricdata.HistogramDataPoint[float64]{
		Attributes:   set,
		StartTime:    start,
		Time:         now,
		Count:        s.Count,
		Sum:          s.Sum,
		Bounds:       bounds,
		BucketCounts: counts,
	}
}
