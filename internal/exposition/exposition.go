// Package exposition reads Prometheus text expositions for tests: a /metrics body parsed with
// expfmt into metric families, and the value of one series, looked up by family name and
// labels rather than by matching text.
package exposition

import (
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse parses a text exposition (the body of /metrics) into its metric families, by name.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Value returns the value of the series of family name whose labels include every pair of
// labels (name, value, name, value, …): a counter's or gauge's value, a histogram's or
// summary's sample count. It fails when no series, or more than one, matches.
func Value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, error) {
	if len(labels)%2 != 0 {
		return 0, fmt.Errorf("labels: want name, value pairs, got %q", labels)
	}
	mf, ok := mfs[name]
	if !ok {
		return 0, fmt.Errorf("no metric family %s", name)
	}
	var found []*dto.Metric
	for _, m := range mf.GetMetric() {
		if hasLabels(m, labels) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%s%v: %d series match, want 1", name, labels, len(found))
	}
	m := found[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), nil
	case m.Gauge != nil:
		return m.Gauge.GetValue(), nil
	case m.Untyped != nil:
		return m.Untyped.GetValue(), nil
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount()), nil
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount()), nil
	}
	return 0, fmt.Errorf("%s%v: no value", name, labels)
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		ok := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
