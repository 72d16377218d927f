//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

// stacksJob is the job under which both Prometheus servers of TestDashboardsInDefaultAndNative
// scrape the outage demo.
const stacksJob = outageJob

// stackConfig is a Prometheus 3.16 configuration scraping addr every second under stacksJob:
// the default configuration (no native histogram ingestion: Prometheus negotiates the text
// formats and stores classic buckets) or, with native, `scrape_native_histograms: true`.
func stackConfig(addr string, native bool) string {
	var b strings.Builder
	b.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n")
	b.WriteString("scrape_configs:\n")
	fmt.Fprintf(&b, "  - job_name: %s\n", stacksJob)
	if native {
		b.WriteString("    scrape_native_histograms: true\n")
	}
	fmt.Fprintf(&b, "    static_configs:\n      - targets: [%q]\n", addr)
	return b.String()
}

// stack is one Prometheus of the test.
type stack struct {
	name string
	api  e2eprom.API
	proc *e2eprom.Process
}

// startStack starts a Prometheus with stackConfig in a directory of its own under dir.
func startStack(t *testing.T, bin, dir, name, addr string, native bool, readyBy time.Time) *stack {
	t.Helper()
	sdir := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(sdir, 0o755))
	cfg := filepath.Join(sdir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(stackConfig(addr, native)), 0o644))
	port := e2eprom.FreePort(t)
	p := e2eprom.Start(t, e2eprom.Command{Name: "prometheus-" + name, Dir: sdir, Bin: bin, Args: []string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + filepath.Join(sdir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--log.level=warn",
	}})
	api := e2eprom.API{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Client: client}
	e2eprom.WaitHTTP(t, client, api.URL+"/-/ready", readyBy, p)
	return &stack{name: name, api: api, proc: p}
}

// missingQueries returns the dashboard queries that have no data on s between from and now
// (a query on the single-name variable counts as having data when one of the demo's
// dependencies has).
func missingQueries(t *testing.T, s *stack, queries []panelQuery, instance string, from time.Time) []string {
	t.Helper()
	var missing []string
	for _, q := range queries {
		names := []string{""}
		if strings.Contains(q.expr, `="$name"`) {
			names = []string{"payments", "inventory", "recommendations"}
		}
		found := false
		for _, name := range names {
			expr := substitute(q.expr, instance, name)
			require.NotContains(t, expr, "$", "unsubstituted variable in %s / %s", q.dashboard, q.panel)
			ok, err := hasData(s.api, expr, from, time.Now())
			require.NoError(t, err, "%s: %s / %s", s.name, q.dashboard, q.panel)
			if ok {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, q.dashboard+" / "+q.panel+": "+q.expr)
		}
	}
	return missing
}

// variableQuery is a template variable of a generated dashboard, as the PromQL that lists its
// values: count by (label) (selector) for label_values(selector, label), the query itself for
// query_result(query) (whose lines carry the label).
type variableQuery struct {
	dashboard, name, expr, label string
}

var (
	labelValuesRE = regexp.MustCompile(`^label_values\((.*), ([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	queryResultRE = regexp.MustCompile(`^query_result\((.*)\)$`)
)

// variableQueries reads the query variables of the dashboards in dir.
func variableQueries(t *testing.T, dir string) []variableQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	var out []variableQuery
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var d struct {
			Title      string `json:"title"`
			Templating struct {
				List []struct {
					Type  string `json:"type"`
					Name  string `json:"name"`
					Query string `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		require.NoError(t, json.Unmarshal(b, &d), f)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			if m := labelValuesRE.FindStringSubmatch(v.Query); m != nil {
				out = append(out, variableQuery{d.Title, v.Name, "count by (" + m[2] + ") (" + m[1] + ")", m[2]})
				continue
			}
			m := queryResultRE.FindStringSubmatch(v.Query)
			require.NotNil(t, m, "%s variable %s: %s", d.Title, v.Name, v.Query)
			out = append(out, variableQuery{d.Title, v.Name, m[1], "name"})
		}
	}
	return out
}

// storedForm reports, for each catalog histogram of stacksJob on s, how many classic _bucket
// series, how many _count series (one per histogram series in the classic form) and how many
// native histogram samples s holds now.
func storedForm(t *testing.T, s *stack) (buckets, counts, natives map[string]int) {
	t.Helper()
	buckets, counts, natives = map[string]int{}, map[string]int{}, map[string]int{}
	for _, m := range catalog.All() {
		if m.Type != catalog.Histogram {
			continue
		}
		name := m.FullName(catalog.DefaultNamespace)
		if n, ok := s.api.Query(t, `count(`+name+`_bucket{job="`+stacksJob+`"})`); ok {
			buckets[m.Name] = int(n)
		}
		if n, ok := s.api.Query(t, `count(`+name+`_count{job="`+stacksJob+`"})`); ok {
			counts[m.Name] = int(n)
		}
		var r struct {
			Data struct {
				Result []struct {
					Histogram []any `json:"histogram"`
				} `json:"result"`
			} `json:"data"`
		}
		s.api.GetJSON(t, "/api/v1/query?query="+url.QueryEscape(name+`{job="`+stacksJob+`"}`), &r)
		for _, res := range r.Data.Result {
			if len(res.Histogram) > 0 {
				natives[m.Name]++
			}
		}
	}
	return buckets, counts, natives
}

// The series budget per dependency (collector/budget_test.go holds it after every path; the
// demo runs fewer paths): as a default Prometheus stores them, and with native ingestion.
const (
	maxDefaultSeriesPerDependency = 60
	maxNativeSeriesPerDependency  = 50
)

// TestDashboardsInDefaultAndNativePrometheus: two Prometheus 3.16 servers scrape the same
// outage demo at the same time, one with its default configuration (which stores classic
// buckets: no native histogram ingestion until Prometheus 4) and one with
// `scrape_native_histograms: true` (which stores native histograms). During the outage every
// query of the default generated dashboards — the latency quantiles, the mean backoff and the
// callers waiting included — returns data in both. It also reports the series one dependency
// costs as the default Prometheus stores them.
func TestDashboardsInDefaultAndNativePrometheus(t *testing.T) {
	t.Parallel()
	root := e2eprom.ModuleRoot(t)
	prometheusBin := e2eprom.PrometheusBin(t, root)
	dir := t.TempDir()

	gen := exec.Command(stormwatchBin, "generate", "dashboards", "-o", "out")
	gen.Dir = dir
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "stormwatch generate dashboards: %s", out)
	queries := dashboardQueries(t, filepath.Join(dir, "out", "dashboards"))
	require.NotEmpty(t, quantileQueries(queries))

	demo := e2eprom.StartDemo(t, stormwatchBin, dir, e2eprom.DemoSpec{Job: stacksJob,
		Args: []string{"--scenario", "outage", "--speed", strconv.FormatFloat(speed, 'f', -1, 64), "--duration", "10m"}},
		client, time.Now().Add(60*time.Second))

	// Both servers start at once and scrape the demo side by side.
	readyBy := time.Now().Add(60 * time.Second)
	stacks := make([]*stack, 2)
	var wg sync.WaitGroup
	for i, native := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "native"}[native]
		wg.Add(1)
		go func() {
			defer wg.Done()
			stacks[i] = startStack(t, prometheusBin, dir, name, demo.Addr, native, readyBy)
		}()
	}
	wg.Wait()
	require.False(t, t.Failed(), "a Prometheus did not start")
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*e2eprom.Process{stacks[0].proc, stacks[1].proc, demo.Process} {
				t.Logf("--- %s output (tail) ---\n%s", p.Name, p.Tail(15))
			}
		}
	})

	// Into the outage: every query's window ($__rate_interval = 4s) holds fault-time samples
	// once the fault has run a few rate windows; poll until both servers answer every query,
	// or the fault ends.
	from := demo.Started.Add(faultStart)
	for _, s := range stacks {
		var missing []string
		for {
			sinceStart := time.Since(demo.Started)
			if sinceStart > faultStart+3*4*time.Second {
				missing = missingQueries(t, s, queries, demo.Addr, from)
				if len(missing) == 0 {
					t.Logf("%s Prometheus: all %d dashboard queries (%d quantiles) returned data at t=%s",
						s.name, len(queries), len(quantileQueries(queries)), sinceStart.Round(time.Second))
					break
				}
			}
			if sinceStart > faultEnd {
				break
			}
			time.Sleep(time.Second) // polling real servers
		}
		assert.Empty(t, missing, "%s Prometheus: dashboard queries without data during the outage", s.name)
	}

	// Every variable lists values on both servers, from the one metric it reads.
	variables := variableQueries(t, filepath.Join(dir, "out", "dashboards"))
	require.NotEmpty(t, variables)
	for _, s := range stacks {
		for _, v := range variables {
			expr := substitute(v.expr, demo.Addr, "payments")
			var r struct {
				Status string `json:"status"`
				Data   struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
					} `json:"result"`
				} `json:"data"`
			}
			s.api.GetJSON(t, "/api/v1/query?query="+url.QueryEscape(expr), &r)
			require.Equal(t, "success", r.Status, expr)
			var values []string
			for _, res := range r.Data.Result {
				if res.Metric[v.label] != "" {
					values = append(values, res.Metric[v.label])
				}
			}
			assert.NotEmpty(t, values, "%s Prometheus: %s variable %s lists nothing: %s", s.name, v.dashboard, v.name, expr)
		}
	}
	t.Logf("all %d dashboard variables list values in both", len(variables))

	// What each server stored: classic buckets by default — the catalog's default bounds and
	// +Inf per histogram series (+Inf alone where the catalog has none) — native histograms
	// with ingestion on.
	buckets, counts, natives := storedForm(t, stacks[0])
	t.Logf("default Prometheus: _bucket series %v, _count series %v, native histograms %v", buckets, counts, natives)
	assert.Empty(t, natives, "a default Prometheus stores no native histogram")
	for _, m := range []catalog.Metric{catalog.BreakerCallDuration, catalog.BulkheadWaitDuration, catalog.RetryBackoff} {
		require.NotZero(t, counts[m.Name], "%s: _count series", m.Name)
		assert.Equal(t, counts[m.Name]*(len(catalog.DefaultBuckets(m))+1), buckets[m.Name], "%s: the default bounds and +Inf per series", m.Name)
	}
	assert.NotEmpty(t, catalog.DefaultBuckets(catalog.BreakerCallDuration), "call durations: classic buckets")
	buckets, counts, natives = storedForm(t, stacks[1])
	t.Logf("native Prometheus: _bucket series %v, _count series %v, native histograms %v", buckets, counts, natives)
	assert.Empty(t, buckets, "with native ingestion, no classic buckets beside the native histograms")
	assert.Empty(t, counts, "with native ingestion, no _count series beside the native histograms")
	for _, m := range []catalog.Metric{catalog.BreakerCallDuration, catalog.BulkheadWaitDuration, catalog.RetryBackoff} {
		assert.NotZero(t, natives[m.Name], "%s: native histograms", m.Name)
	}

	// The series one dependency costs, as each server stores them now.
	for _, s := range stacks {
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		q := `count by (name) ({job="` + stacksJob + `", name!=""})`
		s.api.GetJSON(t, "/api/v1/query?query="+url.QueryEscape(q), &r)
		require.NotEmpty(t, r.Data.Result, s.name)
		budget := map[string]float64{"default": maxDefaultSeriesPerDependency, "native": maxNativeSeriesPerDependency}[s.name]
		var parts []string
		for _, res := range r.Data.Result {
			parts = append(parts, fmt.Sprintf("%s=%v", res.Metric["name"], res.Value[1]))
			n, err := strconv.ParseFloat(fmt.Sprint(res.Value[1]), 64)
			require.NoError(t, err)
			assert.LessOrEqual(t, n, budget, "%s Prometheus: series of %s", s.name, res.Metric["name"])
		}
		t.Logf("%s Prometheus: series stored per name: %s", s.name, strings.Join(parts, " "))
	}
}
