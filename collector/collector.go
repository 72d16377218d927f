// Package collector turns an [instrument.Registry] into a prometheus.Collector.
//
// The collector exports the metrics of the catalog (package catalog) for every named primitive
// in the registry, reading the primitives' atomic counters at scrape time. Nothing is computed on
// the call path: a call through a primitive costs atomic adds, and label values are resolved once
// per primitive, not per call.
//
//	reg, _ := instrument.NewRegistry()
//	c, _ := collector.New(reg)
//	prometheus.MustRegister(c)
//
// # Series
//
// Series are what users pay for, so the default exposition holds what the generated alerts and
// dashboards read, and rare label values only once they occur: within 25 series per circuit
// breaker, counted as a Prometheus with its default configuration stores them — every line of
// the text format, each classic bucket included — and 50 per dependency behind a full pipeline
// (retry, breaker, bulkhead, timeout, fallback) counted as a Prometheus with native histogram
// ingestion stores them (one series per histogram). Once every path has run, business errors
// and cancellations included: 25 per breaker (a forced open and its reset add 3); per
// dependency 47 with native ingestion, 60 in a default Prometheus, whose text formats turn the
// dependency's 4 histogram series into 16 lines (+Inf, _sum and _count each, and the call
// duration's 5 classic bounds). Series that the generated rules or dashboards feed to rate()
// start at 0. In detail:
//
//   - circuit breaker: state for closed, open and half_open (the other states once the breaker
//     has been in them); transitions to open from 0, the other transitions once they happened;
//     tripped_since_timestamp_seconds with the trip's `cause` (empty while closed); calls of kind
//     successful and failed (slow_successful and slow_failed too with slow-call detection on;
//     ignored once counted); not_permitted_calls_total; failure_rate; slow_call_rate and its
//     threshold only with slow-call detection on; the call duration of successful calls.
//   - retry: the four successful_*/failed_* call kinds (aborted once counted); attempts; failed
//     attempts by class once a class is counted (class rejected, stormwatch's own refusals that
//     the breaker and the bulkhead count already, only in full detail); the backoff delays of
//     source backoff (retry_after once counted); budget tokens and denials.
//   - bulkhead: max_concurrent_calls, inflight_calls, the permitted and rejected admissions
//     (aborted once counted), the wait histogram.
//   - timeout: successful, failed and timed_out (aborted once counted); fallback: every cause.
//   - adaptive limiter (opt-in, instrument/limit): every series from the start, 16 per limiter —
//     limit, min_limit, inflight_calls, queued_calls, baseline and sample latency, the three
//     admissions, the four rejection reasons, the three sample kinds; client-side throttle: the
//     rejection probability and its three kinds, 4 per throttle.
//
// These decisions are [Policy]'s, which exporters of the catalog other than this collector (the
// OpenTelemetry bridge, module collector/otelx) apply too, so that both export the same series.
//
// Latency distributions are native histograms (one series for a scraper that negotiates
// protobuf and ingests them). Call durations also carry, for every other scraper, the
// catalog's few default classic bounds (catalog.DefaultBuckets: 5, from 3.9 ms to 16 s), so
// that latency quantiles work in a Prometheus with its default configuration (no native
// histogram ingestion until Prometheus 4), with ingestion on, and in VictoriaMetrics. Bulkhead
// waits and retry delays carry none: their dashboards read the mean from _sum and _count, which
// every store has. [WithClassicBuckets] exports the catalog's full classic layouts instead;
// [WithFullDetail] exports every label value of every catalog metric from the start.
package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// Collector is a prometheus.Collector over a registry's primitives.
type Collector struct {
	reg       *instrument.Registry
	namespace string
	classic   bool // classic buckets next to the native ones
	full      bool // every label value from the start, config gauges, classic buckets
	parts     []part
}

// part exports the metrics of one primitive kind.
type part interface {
	describe(ch chan<- *prometheus.Desc)
	collect(ch chan<- prometheus.Metric)
}

// Option configures a Collector.
type Option func(*Collector) error

// WithNamespace sets the metric name prefix (default [catalog.DefaultNamespace]); "" means none.
func WithNamespace(ns string) Option {
	return func(c *Collector) error {
		if err := catalog.ValidateNamespace(ns); err != nil {
			return fmt.Errorf("collector: %w", err)
		}
		c.namespace = ns
		return nil
	}
}

// WithClassicBuckets exports every classic bound of the catalog (its power-of-two layouts) on
// every latency histogram, next to the native buckets, instead of the few default ones: finer
// quantiles for Prometheus servers that do not ingest native histograms and for scrapers of the
// text formats. Cost per histogram series in the text exposition, over the default: +11 lines
// for a call duration (16 bounds, not 5), +14 for a backoff source, +14 for a bulkhead wait.
func WithClassicBuckets() Option {
	return func(c *Collector) error {
		c.classic = true
		return nil
	}
}

// WithFullDetail exports every label value of every catalog metric from the start: all six
// breaker states, every transition that can occur, every call kind and both call duration
// kinds, every retry kind, every failure class and both delay sources, the configuration gauges
// (failure_rate_threshold, open_duration_seconds, the slow-call gauges of breakers without
// slow-call detection) and bulkhead waiting_calls, with classic buckets. Cost in the text
// exposition: 79 series per breaker and 172 per dependency behind a full pipeline, against 25
// and 60 by default.
func WithFullDetail() Option {
	return func(c *Collector) error {
		c.full, c.classic = true, true
		return nil
	}
}

// New returns a collector exporting reg's primitives.
func New(reg *instrument.Registry, opts ...Option) (*Collector, error) {
	if reg == nil {
		return nil, fmt.Errorf("collector: registry must not be nil")
	}
	c := &Collector{reg: reg, namespace: catalog.DefaultNamespace}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	c.parts = []part{
		newOverflowPart(c),
		newBreakerPart(c),
		newBulkheadPart(c),
		newTimeoutPart(c),
		newFallbackPart(c),
		newRetryPart(c),
		newLimitPart(c),
		newHedgePart(c),
	}
	return c, nil
}

// Namespace returns the metric name prefix in use.
func (c *Collector) Namespace() string { return c.namespace }

// Describe implements prometheus.Collector: it sends the descriptor of every catalog metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, p := range c.parts {
		p.describe(ch)
	}
}

// Collect implements prometheus.Collector: it reads every primitive's counters now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.parts {
		p.collect(ch)
	}
}

// bounds returns the classic bounds to export next to the native buckets of a histogram: full
// with classic buckets on, def (the catalog's few default bounds; nil: none) otherwise.
func (c *Collector) bounds(full, def []float64) []float64 {
	if c.classic {
		return full
	}
	return def
}

// desc builds the descriptor of catalog metric m under the collector's namespace.
func (c *Collector) desc(m catalog.Metric) *prometheus.Desc {
	return prometheus.NewDesc(m.FullName(c.namespace), m.Help, m.LabelNames(), nil)
}

// overflowPart exports resilience_registry_overflow_total{primitive} and
// resilience_registry_evicted_total{primitive} (0 unless idle eviction is on).
type overflowPart struct {
	reg           *instrument.Registry
	desc, evicted *prometheus.Desc
}

func newOverflowPart(c *Collector) *overflowPart {
	return &overflowPart{reg: c.reg, desc: c.desc(catalog.RegistryOverflow), evicted: c.desc(catalog.RegistryEvicted)}
}

func (p *overflowPart) describe(ch chan<- *prometheus.Desc) {
	ch <- p.desc
	ch <- p.evicted
}

func (p *overflowPart) collect(ch chan<- prometheus.Metric) {
	for _, prim := range catalog.Primitives {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.CounterValue,
			float64(p.reg.OverflowCount(prim)), string(prim))
	}
	for _, prim := range catalog.Primitives {
		ch <- prometheus.MustNewConstMetric(p.evicted, prometheus.CounterValue,
			float64(p.reg.Evicted(prim)), string(prim))
	}
}
