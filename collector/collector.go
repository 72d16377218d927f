// Package collector turns an [instrument.Registry] into a prometheus.Collector.
//
// The collector exports every metric of the catalog (package catalog) for every named primitive
// in the registry, reading the primitives' atomic counters at scrape time. Nothing is computed on
// the call path: a call through a primitive costs atomic adds, and label values are resolved once
// per primitive, not per call.
//
//	reg, _ := instrument.NewRegistry()
//	c, _ := collector.New(reg)
//	prometheus.MustRegister(c)
package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// Collector is a prometheus.Collector over a registry's primitives.
type Collector struct {
	reg       *instrument.Registry
	namespace string
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

// desc builds the descriptor of catalog metric m under the collector's namespace.
func (c *Collector) desc(m catalog.Metric) *prometheus.Desc {
	return prometheus.NewDesc(m.FullName(c.namespace), m.Help, m.LabelNames(), nil)
}

// overflowPart exports resilience_registry_overflow_total{primitive}.
type overflowPart struct {
	reg  *instrument.Registry
	desc *prometheus.Desc
}

func newOverflowPart(c *Collector) *overflowPart {
	return &overflowPart{reg: c.reg, desc: c.desc(catalog.RegistryOverflow)}
}

func (p *overflowPart) describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *overflowPart) collect(ch chan<- prometheus.Metric) {
	for _, prim := range catalog.Primitives {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.CounterValue,
			float64(p.reg.Overflowed(prim)), string(prim))
	}
}
