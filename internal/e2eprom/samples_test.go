package e2eprom

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSamplesAsInputSeries: scrapes become promtool input series on the grid — counters and
// gauges of the prefix only, the extra labels added, "_" where a scrape lacked the series —
// and trip timestamps count from Epoch.
func TestSamplesAsInputSeries(t *testing.T) {
	s := NewSamples(15 * time.Second)
	s.Epoch = time.Unix(1000, 0)
	lbl := map[string]string{"job": "j", "instance": "127.0.0.1:1"}
	require.NoError(t, s.AddScrape(0, strings.NewReader(`# TYPE resilience_calls_total counter
resilience_calls_total{name="a"} 1
# TYPE resilience_tripped_since_timestamp_seconds gauge
resilience_tripped_since_timestamp_seconds{name="a"} 0
# TYPE go_goroutines gauge
go_goroutines 7
`), "resilience_", lbl))
	require.NoError(t, s.AddScrape(2, strings.NewReader(`# TYPE resilience_calls_total counter
resilience_calls_total{name="a"} 3.5
# TYPE resilience_tripped_since_timestamp_seconds gauge
resilience_tripped_since_timestamp_seconds{name="a"} 1030.25
# TYPE resilience_latency_seconds histogram
resilience_latency_seconds_bucket{le="+Inf"} 1
resilience_latency_seconds_sum 1
resilience_latency_seconds_count 1
`), "resilience_", lbl))
	require.NoError(t, s.AddScrape(5, strings.NewReader(`# TYPE resilience_calls_total counter
resilience_calls_total{name="a"} 4
`), "resilience_", lbl))
	assert.Equal(t, 6, s.Steps)
	assert.Equal(t, []map[string]string{
		{"series": `resilience_calls_total{instance="127.0.0.1:1", job="j", name="a"}`, "values": "1 stale 3.5 stale _ 4"},
		{"series": `resilience_tripped_since_timestamp_seconds{instance="127.0.0.1:1", job="j", name="a"}`, "values": "0 stale 30.25 stale _ _"},
	}, s.InputSeries(), "a series missing from a scrape after it was there is stale, as Prometheus marks it")
	key := `resilience_calls_total{instance="127.0.0.1:1", job="j", name="a"}`
	assert.Equal(t, 3.5, s.Value(key, 2))
	assert.True(t, math.IsNaN(s.Value(key, 1)))
	assert.True(t, math.IsNaN(s.Value(key, 9)))

	s.Set("x{}", 7, 2)
	assert.Equal(t, 8, s.Steps)
	assert.Equal(t, []string{key, `resilience_tripped_since_timestamp_seconds{instance="127.0.0.1:1", job="j", name="a"}`, "x{}"}, s.Keys())
	assert.Error(t, s.AddScrape(8, strings.NewReader("not exposition {"), "", nil))
}

// TestGot reads a failed promql_expr_test's got: line out of promtool's output.
func TestGot(t *testing.T) {
	out := `Processing test file: t.yaml
  FAILED:
    expr: "sum(x)", time: 2m,
        exp: nil
        got: {a="1", b="x"} 6E+01, {a="2"} 1.5E+00

  FAILED:
    expr: "min_over_time(timestamp(ALERTS{alertstate=\"firing\"})[2m:15s])", time: 2m,
        exp: nil
        got: {alertname="A", job="j"} 4.5E+01
`
	got, ok, err := Got(out, "sum(x)")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]float64{`{a="1", b="x"}`: 60, `{a="2"}`: 1.5}, got)
	got, ok, err = Got(out, `min_over_time(timestamp(ALERTS{alertstate="firing"})[2m:15s])`)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]float64{`{alertname="A", job="j"}`: 45}, got)
	_, ok, err = Got(out, "sum(y)")
	require.NoError(t, err)
	assert.False(t, ok)
}
