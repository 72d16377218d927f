package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	labelValueRE = regexp.MustCompile(`^[a-z0-9_]+$`)
)

func TestCatalogEntriesAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		name := m.FullName(DefaultNamespace)
		t.Run(name, func(t *testing.T) {
			require.False(t, seen[name], "duplicate metric name")
			seen[name] = true
			assert.Regexp(t, metricNameRE, name)
			assert.NotEmpty(t, m.Help)
			assert.True(t, strings.HasSuffix(m.Help, "."), "help ends with a period")
			switch m.Type {
			case Counter:
				assert.True(t, strings.HasSuffix(name, "_total"), "counters end in _total")
				assert.Nil(t, m.Buckets)
			case Histogram:
				assert.True(t, strings.HasSuffix(name, "_seconds"), "histograms here measure seconds")
				require.NotEmpty(t, m.Buckets)
				assert.True(t, sort.Float64sAreSorted(m.Buckets), "buckets sorted")
			case Gauge:
				assert.False(t, strings.HasSuffix(name, "_total"), "gauges do not end in _total")
				assert.Nil(t, m.Buckets)
			default:
				t.Fatalf("unknown type %v", m.Type)
			}
			if m.Unit == UnitSeconds {
				assert.True(t, strings.HasSuffix(name, "_seconds"), "seconds metrics end in _seconds")
			}
			if m.Primitive != Registry {
				require.NotEmpty(t, m.Labels)
				assert.Equal(t, LabelName, m.Labels[0].Name, "name label first")
				assert.Nil(t, m.Labels[0].Values, "name is open")
			}
			labelSeen := map[string]bool{}
			for _, l := range m.Labels {
				assert.Regexp(t, labelNameRE, l.Name)
				assert.False(t, labelSeen[l.Name], "duplicate label %s", l.Name)
				labelSeen[l.Name] = true
				assert.NotEqual(t, "le", l.Name, "le is reserved for histograms")
				valueSeen := map[string]bool{}
				for _, v := range l.Values {
					assert.Regexp(t, labelValueRE, v)
					assert.False(t, valueSeen[v], "duplicate value %s", v)
					valueSeen[v] = true
				}
			}
		})
	}
	// 25 + 1 (registry_evicted_total, one series per primitive kind, like overflow_total) + 11
	// for the adaptive limiter and the client-side throttle (16 series per limiter, 4 per
	// throttle, both opt-in) + 3 for hedging (6 series per hedge: calls, four outcomes, the
	// delay; opt-in).
	assert.Len(t, seen, 40, "the catalog holds 40 metrics; a new one needs a reason (series cost) and this count raised")
}

func TestFullNameAndLookup(t *testing.T) {
	assert.Equal(t, "resilience_circuitbreaker_state", BreakerState.FullName(DefaultNamespace))
	assert.Equal(t, "acme_retry_calls_total", RetryCalls.FullName("acme"))
	assert.Equal(t, "retry_calls_total", RetryCalls.FullName(""))

	m, ok := Lookup("acme", "acme_retry_backoff_seconds_bucket")
	require.True(t, ok)
	assert.Equal(t, RetryBackoff.Name, m.Name)
	_, ok = Lookup("acme", "resilience_retry_backoff_seconds_bucket")
	assert.False(t, ok, "namespace is part of the name")
	_, ok = Lookup(DefaultNamespace, "resilience_retry_calls")
	assert.False(t, ok)

	l, ok := BreakerTransitions.Label(LabelTo)
	require.True(t, ok)
	assert.Equal(t, []string{"closed", "open", "half_open", "forced_open", "disabled", "metrics_only"}, l.Values)
	assert.Equal(t, []string{LabelName, LabelFrom, LabelTo}, BreakerTransitions.LabelNames())
}

func TestByPrimitive(t *testing.T) {
	total := 0
	for _, p := range append(Primitives, Registry) {
		ms := ByPrimitive(p)
		require.NotEmpty(t, ms, p)
		for _, m := range ms {
			assert.Equal(t, p, m.Primitive)
		}
		total += len(ms)
	}
	assert.Equal(t, len(All()), total, "every metric belongs to a listed primitive")
}

func TestValidateNamespace(t *testing.T) {
	for _, ok := range []string{"", "resilience", "acme_corp", "_x", "a1"} {
		assert.NoError(t, ValidateNamespace(ok), ok)
	}
	for _, bad := range []string{"1abc", "a-b", "a b", "trailing_", "ns:x"} {
		err := ValidateNamespace(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), bad)
	}
}

// TestDocsMetricTableMatchesCatalog keeps the documentation and the catalog from drifting: every
// catalog metric is documented in docs/series.md with its type and labels, and every metric name
// README.md or a page of docs/ mentions is in the catalog.
func TestDocsMetricTableMatchesCatalog(t *testing.T) {
	raw, err := os.ReadFile("../docs/series.md")
	require.NoError(t, err)
	// The limiter's and the throttle's metrics are documented in their own page.
	limitPage, err := os.ReadFile("../docs/limit.md")
	require.NoError(t, err)
	readme := string(raw) + "\n" + string(limitPage)

	rows := map[string]string{}
	for _, line := range strings.Split(readme, "\n") {
		if m := regexp.MustCompile("^\\| `(resilience_[a-z_]+)` \\|").FindStringSubmatch(line); m != nil {
			rows[m[1]] = line
		}
	}
	for _, m := range All() {
		name := m.FullName(DefaultNamespace)
		row, ok := rows[name]
		if !assert.True(t, ok, "README metric table lacks %s", name) {
			continue
		}
		cells := strings.Split(row, "|")
		require.GreaterOrEqual(t, len(cells), 5, row)
		assert.Equal(t, m.Type.String(), strings.TrimSpace(cells[2]), "%s type", name)
		var want []string
		for _, l := range m.Labels {
			if l.Name != LabelName {
				want = append(want, "`"+l.Name+"`")
			}
		}
		assert.Equal(t, strings.Join(want, ", "), strings.TrimSpace(cells[3]), "%s labels", name)
	}
	assert.Len(t, rows, len(All()), "docs/series.md table rows")

	pages, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	for _, page := range append(pages, "../README.md") {
		raw, err := os.ReadFile(page)
		require.NoError(t, err)
		assertMentionsAreInCatalog(t, page, string(raw))
	}
}

// assertMentionsAreInCatalog fails for every resilience_… metric name in text that the catalog
// does not define.
func assertMentionsAreInCatalog(t *testing.T, page, readme string) {
	t.Helper()
	// Recorded series (level:metric:operations, e.g. job_name_slo:resilience_slo_calls:rate5m) are
	// the generators' names, not the catalog's: a name right after a colon is skipped.
	for _, loc := range regexp.MustCompile(`\bresilience_[a-z_]*[a-z]\b`).FindAllStringIndex(readme, -1) {
		name := readme[loc[0]:loc[1]]
		if loc[0] > 0 && readme[loc[0]-1] == ':' {
			continue
		}
		if name == "resilience_" {
			continue
		}
		_, ok := Lookup(DefaultNamespace, name)
		if !ok {
			// prefixes such as resilience_circuitbreaker_* name a family, not a series
			found := false
			for _, m := range All() {
				if full := m.FullName(DefaultNamespace); full == name || strings.HasPrefix(full, name+"_") {
					found = true
				}
			}
			assert.True(t, found, "%s mentions %s, which the catalog does not define", page, name)
		}
	}
}

func TestNumDurationBucketsIsTheLengthOfDurationBuckets(t *testing.T) {
	assert.Len(t, DurationBuckets, NumDurationBuckets)
}
