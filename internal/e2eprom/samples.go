package e2eprom

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples are scrapes on a fixed grid, as a promtool unit test's input_series hold them: the
// value of each series at scrape i (time i × Interval from promtool's t=0), NaN where a scrape
// did not have it.
type Samples struct {
	Interval time.Duration
	// Epoch is when step 0 was scraped. promtool's tests start at the Unix epoch, so the values
	// of series named *_timestamp_seconds (times, such as a breaker's trip) are rewritten as
	// seconds since Epoch when they are positive (0 means "none" in them). Zero: unchanged.
	Epoch time.Time
	// Steps is the grid's length: one more than the last step a scrape was added at.
	Steps  int
	series map[string][]float64
}

// NewSamples returns empty samples on a grid of interval.
func NewSamples(interval time.Duration) *Samples {
	return &Samples{Interval: interval, series: map[string][]float64{}}
}

// AddScrape adds one scrape — the text exposition of a /metrics answer — at step (time
// step × Interval), keeping the counters and gauges whose name starts with prefix, with labels added to every
// series (the job and instance labels a Prometheus scrape would attach).
func (s *Samples) AddScrape(step int, text io.Reader, prefix string, labels map[string]string) error {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(text)
	if err != nil {
		return fmt.Errorf("scrape %d: %w", step, err)
	}
	s.Steps = max(s.Steps, step+1) // also when no series matched
	for name, fam := range fams {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range fam.GetMetric() {
			var v float64
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
				if !s.Epoch.IsZero() && v > 0 && strings.HasSuffix(name, "_timestamp_seconds") {
					v -= float64(s.Epoch.UnixNano()) / 1e9
				}
			default:
				continue
			}
			s.Set(seriesName(name, m.GetLabel(), labels), step, v)
		}
	}
	return nil
}

// Set records v for the series key (promtool notation) at step, padding it with NaN (absent)
// before.
func (s *Samples) Set(key string, step int, v float64) {
	s.Steps = max(s.Steps, step+1)
	vals := s.series[key]
	for len(vals) <= step {
		vals = append(vals, math.NaN())
	}
	vals[step] = v
	s.series[key] = vals
}

// seriesName renders a series in promtool's notation, labels sorted.
func seriesName(name string, pairs []*dto.LabelPair, extra map[string]string) string {
	ls := map[string]string{}
	for _, p := range pairs {
		ls[p.GetName()] = p.GetValue()
	}
	for k, v := range extra {
		ls[k] = v
	}
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(ls[k])
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}

// InputSeries are the series in promtool's input_series form, sorted: "_" marks a step
// without a sample, and "stale" the first step a series is missing after it was scraped — the
// staleness marker Prometheus writes when a series disappears from a target (without it, the
// last value would stay visible for the 5-minute lookback).
func (s *Samples) InputSeries() []map[string]string {
	keys := make([]string, 0, len(s.series))
	for k := range s.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]map[string]string, len(keys))
	for i, k := range keys {
		vals := s.series[k]
		words := make([]string, s.Steps)
		for j := range words {
			switch {
			case j < len(vals) && !math.IsNaN(vals[j]):
				words[j] = strconv.FormatFloat(vals[j], 'g', -1, 64)
			case j > 0 && j-1 < len(vals) && !math.IsNaN(vals[j-1]):
				words[j] = "stale"
			default:
				words[j] = "_"
			}
		}
		out[i] = map[string]string{"series": k, "values": strings.Join(words, " ")}
	}
	return out
}

// Value returns the value of the series key at step (NaN when absent), for assertions on
// what was scraped.
func (s *Samples) Value(key string, step int) float64 {
	if vals := s.series[key]; step < len(vals) {
		return vals[step]
	}
	return math.NaN()
}

// Keys lists the series, sorted.
func (s *Samples) Keys() []string {
	keys := make([]string, 0, len(s.series))
	for k := range s.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Got returns what a failed promql_expr_test of `promtool test rules` reported for expr: the
// value of each series it got, keyed by its labels as printed ({a="b", c="d"}). A probe — an
// expression test expecting nothing — reads values out of promtool this way. ok is false when
// out has no failure for expr.
func Got(out, expr string) (got map[string]float64, ok bool, err error) {
	lines := strings.Split(out, "\n")
	want := "expr: " + strconv.Quote(expr) + ","
	for i, l := range lines {
		if !strings.Contains(l, want) {
			continue
		}
		for _, g := range lines[i+1:] {
			g = strings.TrimSpace(g)
			if !strings.HasPrefix(g, "got:") {
				continue
			}
			got = map[string]float64{}
			for _, m := range gotSample.FindAllStringSubmatch(g, -1) {
				v, err := strconv.ParseFloat(m[2], 64)
				if err != nil {
					return nil, false, fmt.Errorf("promtool: %q: %w", m[0], err)
				}
				got[m[1]] = v
			}
			return got, true, nil
		}
	}
	return nil, false, nil
}

// gotSample is one sample of promtool's got: line, {labels} value.
var gotSample = regexp.MustCompile(`(\{[^}]*\}) ([-+.0-9eE]+|NaN|[-+]Inf)`)
