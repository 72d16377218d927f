package collector

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/collector/internal/history"
)

// The series budget: what one circuit breaker, and one dependency behind a full pipeline, may
// cost after every path has run (history.EveryPath: business errors and cancellations
// included), counted as a Prometheus stores the default exposition.
//
// A default Prometheus (3.x, until 4: no native histogram ingestion) scrapes OpenMetrics or
// the text format and stores every sample line: each counter and gauge, and of a histogram
// each classic bucket (+Inf included), _sum and _count. A histogram without classic buckets
// reads there as its +Inf bucket, _sum and _count: three series and no distribution. A
// Prometheus with native ingestion stores each histogram as one series.
//
// Per breaker: at most 25 as a default Prometheus stores them (25 after every path: 17
// counters and gauges, and the duration of successful calls with its 5 default classic bounds,
// +Inf, _sum and _count).
//
// Per dependency: at most 50 series (47 after every path) as a Prometheus with native
// ingestion stores them; as a default Prometheus stores them, those series plus what the text
// formats make of the histograms (13 more: 60 after every path). 50 there is the wrong trade:
// the 4 histogram series of a dependency (successful call durations, bulkhead waits, both
// retry delay sources) take 12 lines with no classic bound at all, so the 43 counters and
// gauges — each read by a generated alert or dashboard, and started at 0 where rate() reads
// them — would have to lose 5 for latency to stay invisible, and 10 to show it with 5 bounds.
const (
	maxSeriesPerBreaker            = 25
	maxNativeSeriesPerDependency   = 50
	maxSeriesPerDependency         = 60
	maxHistogramLinesPerDependency = 13 // maxSeriesPerDependency - its native count, at most
	forcedOpenSeries               = 3  // the forced_open state, closed→forced_open, forced_open→closed
)

// storedSeries gathers c and returns the series a default Prometheus stores from it (see the
// budget above), by the value of the `name` label: one entry, the family's name, per series.
func storedSeries(t *testing.T, c prometheus.Collector) map[string][]string {
	t.Helper()
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	out := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == catalog.LabelName {
					name = l.GetValue()
				}
			}
			for range storedLines(m) {
				out[name] = append(out[name], mf.GetName())
			}
		}
	}
	// Cross-check with what a default Prometheus scrapes: the sample lines of the OpenMetrics
	// exposition (its first choice of format) and of the text format.
	total := 0
	for _, s := range out {
		total += len(s)
	}
	for _, format := range []expfmt.Format{expfmt.NewFormat(expfmt.TypeOpenMetrics), expfmt.NewFormat(expfmt.TypeTextPlain)} {
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, format)
		for _, mf := range mfs {
			require.NoError(t, enc.Encode(mf))
		}
		if cl, ok := enc.(expfmt.Closer); ok {
			require.NoError(t, cl.Close())
		}
		samples := 0
		for _, l := range strings.Split(buf.String(), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				samples++
			}
		}
		require.Equal(t, samples, total, "series counted from the gathered metrics = sample lines of %s", format)
	}
	return out
}

// nativeStoredSeries is the number of series a Prometheus with native histogram ingestion
// stores from c, by the value of the `name` label: one per counter, gauge and histogram.
func nativeStoredSeries(t *testing.T, c prometheus.Collector) map[string]int {
	t.Helper()
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	out := map[string]int{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == catalog.LabelName {
					out[l.GetValue()]++
				}
			}
		}
	}
	return out
}

// storedLines is the number of series a default Prometheus stores for m: 1 for a counter or
// gauge; for a histogram, its classic buckets, the +Inf bucket, _sum and _count (a native-only
// histogram: 3).
func storedLines(m *dto.Metric) int {
	h := m.GetHistogram()
	if h == nil {
		return 1
	}
	n := len(h.GetBucket()) + 2
	if bs := h.GetBucket(); len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), +1) {
		n++ // the +Inf bucket the exposition adds
	}
	return n
}

// perFamily counts series by family.
func perFamily(series []string) map[string]int {
	out := map[string]int{}
	for _, f := range series {
		out[f]++
	}
	return out
}

func TestSeriesBudgetAfterEveryPath(t *testing.T) {
	h := history.New(t)
	def, err := New(h.Registry())
	require.NoError(t, err)
	full, err := New(h.Registry(), WithFullDetail())
	require.NoError(t, err)
	fresh := storedSeries(t, def)[history.Dependency]
	h.EveryPath()
	got, gotFull := storedSeries(t, def)[history.Dependency], storedSeries(t, full)[history.Dependency]

	breakerSeries := func(series []string) int {
		n := 0
		for _, f := range series {
			if strings.HasPrefix(f, catalog.DefaultNamespace+"_"+string(catalog.CircuitBreaker)+"_") {
				n++
			}
		}
		return n
	}
	logTable(t, perFamily(fresh), perFamily(got), perFamily(gotFull))
	t.Logf("per breaker: %d (fresh %d, full detail %d); per dependency: %d (fresh %d, full detail %d)",
		breakerSeries(got), breakerSeries(fresh), breakerSeries(gotFull), len(got), len(fresh), len(gotFull))
	assert.LessOrEqual(t, breakerSeries(got), maxSeriesPerBreaker, "series per breaker")
	assert.LessOrEqual(t, len(got), maxSeriesPerDependency, "series per dependency")
	// With native histogram ingestion, each histogram is one series.
	native := nativeStoredSeries(t, def)[history.Dependency]
	t.Logf("per dependency with native histogram ingestion: %d", native)
	assert.LessOrEqual(t, native, maxNativeSeriesPerDependency, "series per dependency, native ingestion")
	// What a default Prometheus stores beyond that is the histograms' text form and nothing
	// else: per histogram series, its default classic bounds, +Inf, _sum and _count for one.
	extra := 0
	for f, n := range perFamily(got) {
		m, ok := catalog.Lookup(catalog.DefaultNamespace, f)
		require.True(t, ok, f)
		if m.Type != catalog.Histogram {
			continue
		}
		lines := len(catalog.DefaultBuckets(m)) + 3
		assert.Zero(t, n%lines, "%s: whole histograms of %d lines", f, lines)
		extra += n / lines * (lines - 1)
	}
	assert.Equal(t, len(got)-native, extra, "default − native = the histograms' classic lines")
	assert.LessOrEqual(t, extra, maxHistogramLinesPerDependency)
	classic, err := New(h.Registry(), WithClassicBuckets())
	require.NoError(t, err)
	gotClassic := storedSeries(t, classic)[history.Dependency]
	t.Logf("with classic buckets: per breaker %d, per dependency %d", breakerSeries(gotClassic), len(gotClassic))
	assert.Less(t, native, len(got), "native histograms cost less than classic buckets")

	// Manual operations are rare label values an operator causes, not call paths: a forced open
	// and its reset add its state and its two transitions, and nothing else.
	h.Pipeline().Breaker().ForceOpen()
	h.Pipeline().Breaker().Reset()
	manual := storedSeries(t, def)[history.Dependency]
	assert.Equal(t, breakerSeries(got)+forcedOpenSeries, breakerSeries(manual), "forced_open state, closed→forced_open, forced_open→closed")
	assert.Equal(t, len(got)+forcedOpenSeries, len(manual))
	t.Logf("after a forced open and its reset: per breaker %d, per dependency %d", breakerSeries(manual), len(manual))
}

// logTable prints the series of one dependency per family: fresh, after every path, and in
// full detail.
func logTable(t *testing.T, fresh, got, full map[string]int) {
	t.Helper()
	families := slices.Sorted(maps.Keys(full))
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-60s %6s %6s %6s\n", "family", "fresh", "every", "full")
	var sums [3]int
	for _, f := range families {
		fmt.Fprintf(&b, "%-60s %6d %6d %6d\n", f, fresh[f], got[f], full[f])
		sums[0] += fresh[f]
		sums[1] += got[f]
		sums[2] += full[f]
	}
	fmt.Fprintf(&b, "%-60s %6d %6d %6d", "total", sums[0], sums[1], sums[2])
	t.Log(b.String())
}

// textExposition gathers c and returns its text exposition.
func textExposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return buf.Bytes()
}

// TestExpositionsLintClean lints the default and the full-detail exposition after every path
// with client_golang's linter and with `promtool check metrics` (bin/promtool, built by
// scripts/install-tools.sh; the promtool half is skipped only when it is absent).
func TestExpositionsLintClean(t *testing.T) {
	h := history.New(t)
	h.EveryPath()
	h.Pipeline().Breaker().ForceOpen() // a rare state and a trip cause too
	promtool := filepath.Join(moduleRoot(t), "bin", "promtool")
	_, statErr := os.Stat(promtool)
	for name, opts := range map[string][]Option{"default": nil, "full detail": {WithFullDetail()}, "classic buckets": {WithClassicBuckets()}} {
		t.Run(name, func(t *testing.T) {
			c, err := New(h.Registry(), opts...)
			require.NoError(t, err)
			pr := prometheus.NewPedanticRegistry()
			require.NoError(t, pr.Register(c))
			problems, err := testutil.GatherAndLint(pr)
			require.NoError(t, err)
			assert.Empty(t, problems)

			if statErr != nil {
				t.Skipf("promtool half skipped: %v (run scripts/install-tools.sh)", statErr)
			}
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = bytes.NewReader(textExposition(t, c))
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "promtool check metrics: %s", out)
			assert.Empty(t, strings.TrimSpace(string(out)), "promtool check metrics reports problems")
		})
	}
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test")
		dir = parent
	}
}
