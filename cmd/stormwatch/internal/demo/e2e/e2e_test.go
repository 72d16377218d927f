//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
	"github.com/stormwatch-go/stormwatch/rules"
)

const (
	outageJob = "demo-outage"
	steadyJob = "demo-steady"
	// speed of the outage demo: its fault runs from 15s to 75s demo time, 10s to 50s wall.
	speed      = 1.5
	faultStart = 10 * time.Second
	faultEnd   = 50 * time.Second
	// rateWindow is the rules' rate window (rate_window in the config): short, so that the
	// alerts on rates resolve soon after recovery — FallbackSustained averages fallbacks over
	// it and cannot resolve sooner than one window after the last fallback. 1s scrapes
	// keep it far above 4 scrape intervals.
	rateWindow = time.Minute
	// deadline bounds the whole test once Prometheus is up.
	deadline = 8 * time.Minute
)

// The alerts the outage must fire and then resolve.
var mustFire = []string{"CircuitBreakerStuckOpen", "RetryRateHigh", "FallbackSustained"}

// rulesConfig sets the rate window to rateWindow and shortens every alert's `for` — to 2s for
// the three the outage must fire, to 10s for the others, so that a steady run would fire any
// of them within seconds — and CircuitBreakerStuckOpen's not-closed threshold to 15s (its
// minimum).
func rulesConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rate_window: %s\n", rules.FormatDuration(rateWindow))
	b.WriteString("alerts:\n")
	for _, name := range rules.AlertNames() {
		f := "10s"
		for _, m := range mustFire {
			if m == name {
				f = "2s"
			}
		}
		fmt.Fprintf(&b, "  %s:\n    for: %s\n", name, f)
		if name == "CircuitBreakerStuckOpen" {
			b.WriteString("    threshold: 15\n")
		}
	}
	return b.String()
}

// panelQuery is one PromQL query of a generated dashboard.
type panelQuery struct {
	dashboard, panel, expr string
}

// optionalPrimitives are the primitives the demo's dependencies do not all use — the adaptive
// limiter and the throttle (only the overload scenario has them) and the hedge (only the
// stragglers scenario): their panels have no data in the other scenarios. The conformance
// module evaluates their queries on series that hold every primitive.
var optionalPrimitives = []catalog.Primitive{catalog.Limiter, catalog.Throttle, catalog.Hedge}

// optionalPrimitive reports whether a panel query reads only an optional primitive's metrics.
func optionalPrimitive(expr string) bool {
	for _, p := range optionalPrimitives {
		if strings.Contains(expr, "_"+string(p)+"_") {
			return true
		}
	}
	return false
}

// dashboardQueries reads every panel target and annotation query of the dashboards in dir, but
// those of the optional primitives (see optionalPrimitives).
func dashboardQueries(t *testing.T, dir string) []panelQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no dashboards generated in %s", dir)
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var out []panelQuery
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var d struct {
			Title       string  `json:"title"`
			Panels      []panel `json:"panels"`
			Annotations struct {
				List []struct {
					Name string `json:"name"`
					Expr string `json:"expr"`
				} `json:"list"`
			} `json:"annotations"`
		}
		require.NoError(t, json.Unmarshal(b, &d), f)
		var walk func(ps []panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				for _, tg := range p.Targets {
					if tg.Expr != "" && !optionalPrimitive(tg.Expr) {
						out = append(out, panelQuery{d.Title, p.Title, tg.Expr})
					}
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, a := range d.Annotations.List {
			if a.Expr != "" {
				out = append(out, panelQuery{d.Title, "annotation " + a.Name, a.Expr})
			}
		}
	}
	return out
}

// substitute replaces Grafana's variables as a user looking at the outage job would set them:
// 1s scrape and step, so $__interval = 1s and $__rate_interval = max(4 × scrape, step + scrape)
// = 4s; $name is the given dependency ("" = all, for regexp matchers).
func substitute(expr, instance, name string) string {
	r := strings.NewReplacer(
		"$__rate_interval", "4s", "${__rate_interval}", "4s",
		"$__interval", "1s", "${__interval}", "1s",
		`=~"$job"`, `=~"`+outageJob+`"`, `="$job"`, `="`+outageJob+`"`,
		`=~"$instance"`, `=~".+"`, `="$instance"`, `="`+instance+`"`,
		`=~"$name"`, `=~"`+orAll(name)+`"`, `="$name"`, `="`+name+`"`,
		"$datasource", "prometheus",
	)
	return r.Replace(expr)
}

func orAll(name string) string {
	if name == "" {
		return ".+"
	}
	return regexp.QuoteMeta(name)
}

// hasData reports whether a range query returns at least one non-NaN sample.
func hasData(prom e2eprom.API, expr string, from, to time.Time) (bool, error) {
	q := url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(from.Unix(), 10)},
		"end":   {strconv.FormatInt(to.Unix(), 10)},
		"step":  {"1"},
	}
	resp, err := prom.Client.Get(prom.URL + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return false, err
	}
	if r.Status != "success" {
		return false, fmt.Errorf("%s: %s", expr, r.Error)
	}
	for _, s := range r.Data.Result {
		for _, v := range s.Values {
			str, _ := v[1].(string)
			if f, err := strconv.ParseFloat(str, 64); err == nil && !math.IsNaN(f) {
				return true, nil
			}
		}
	}
	return false, nil
}

// TestDemoOnRealPrometheus is the end-to-end proof of the demo's alerts: a real Prometheus
// 3.16 scrapes `stormwatch demo --scenario outage` (sped up ×1.5) and `stormwatch demo
// --scenario steady` every second — a fleet of two demos, one job each — and evaluates the rules
// `stormwatch generate` wrote (every `for` shortened to 2s or 10s). The outage must fire
// CircuitBreakerStuckOpen, RetryRateHigh and FallbackSustained, all three must resolve after
// recovery, the steady demo must never have a firing alert, and every query of the generated
// dashboards must return data during the outage — the latency quantiles too, read from native
// histograms (Prometheus scrapes them: scrape_native_histograms).
func TestDemoOnRealPrometheus(t *testing.T) {
	t.Parallel()
	began := time.Now()
	root := e2eprom.ModuleRoot(t)
	prometheusBin := e2eprom.PrometheusBin(t, root)
	dir := t.TempDir() // removed with everything in it, the TSDB included

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stormwatch.yaml"), []byte(rulesConfig()), 0o644))
	for _, what := range []string{"rules", "dashboards"} {
		gen := exec.Command(stormwatchBin, "generate", what, "-c", "stormwatch.yaml", "-o", "out")
		gen.Dir = dir
		out, err := gen.CombinedOutput()
		require.NoError(t, err, "stormwatch generate %s: %s", what, out)
	}
	queries := dashboardQueries(t, filepath.Join(dir, "out", "dashboards"))
	t.Logf("%d dashboard queries", len(queries))

	fleet := e2eprom.StartFleet(t, e2eprom.FleetConfig{
		Stormwatch: stormwatchBin, Prometheus: prometheusBin, Dir: dir,
		RuleFile: filepath.Join(dir, "out", "stormwatch-rules.yaml"),
		Demos: []e2eprom.DemoSpec{
			{Job: steadyJob, Args: []string{"--scenario", "steady", "--duration", "10m"}},
			{Job: outageJob, Args: []string{"--scenario", "outage", "--speed", strconv.FormatFloat(speed, 'f', -1, 64), "--duration", "10m"}},
		},
		Client: client,
	}, time.Now().Add(60*time.Second))
	prom := fleet.API
	outage := fleet.Demo(t, outageJob)
	outageStarted, outageAddr := outage.Started, outage.Addr
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range append([]*e2eprom.Process{fleet.Prometheus}, outage.Process, fleet.Demo(t, steadyJob).Process) {
				t.Logf("--- %s output (tail) ---\n%s", p.Name, p.Tail(15))
			}
		}
	})

	firedAt := map[string]time.Duration{}    // alert → when it first fired (since the demo started)
	resolvedAt := map[string]time.Duration{} // alert → when it was gone after the fault
	seen := map[string]bool{}                // alertname/job/name/state seen, for the log
	panelsChecked := false
	end := time.Now().Add(deadline)
	for {
		now := time.Now()
		require.True(t, now.Before(end), "not done within %s: fired %v, resolved %v", deadline, firedAt, resolvedAt)
		sinceStart := now.Sub(outageStarted)
		active := map[string]bool{}
		for _, a := range prom.Alerts(t) {
			n := a.Labels["alertname"]
			seen[n+" job="+a.Labels["job"]+" name="+a.Labels["name"]+" "+a.State] = true
			if a.Labels["job"] == steadyJob {
				require.NotEqual(t, "firing", a.State, "the steady demo has a firing alert: %s %v", n, a.Labels)
				continue
			}
			if a.Labels["job"] != outageJob {
				continue
			}
			active[n] = true
			if a.State == "firing" {
				if _, ok := firedAt[n]; !ok {
					firedAt[n] = sinceStart
					t.Logf("t=%s: %s firing (%v)", sinceStart.Round(time.Second), n, a.Labels)
				}
			}
		}
		allFired := true
		for _, n := range mustFire {
			if _, ok := firedAt[n]; !ok {
				allFired = false
			}
		}
		if sinceStart > faultEnd && !allFired {
			t.Fatalf("the outage ended before %v all fired (fired: %v)", mustFire, firedAt)
		}
		// During the outage, once the alerts fire: every dashboard query returns data.
		if allFired && !panelsChecked {
			require.Less(t, sinceStart, faultEnd-2*time.Second, "no time left in the outage for the dashboard queries")
			from := outageStarted.Add(faultStart)
			var missing []string
			for _, q := range queries {
				names := []string{""}
				if strings.Contains(q.expr, `="$name"`) {
					names = []string{"payments", "inventory", "recommendations"}
				}
				found := false
				for _, name := range names {
					expr := substitute(q.expr, outageAddr, name)
					require.NotContains(t, expr, "$", "unsubstituted variable in %s / %s", q.dashboard, q.panel)
					ok, err := hasData(prom, expr, from, time.Now())
					require.NoError(t, err, "%s / %s", q.dashboard, q.panel)
					if ok {
						found = true
						break
					}
				}
				if !found {
					missing = append(missing, q.dashboard+" / "+q.panel+": "+q.expr)
				}
			}
			assert.Empty(t, missing, "dashboard queries without data during the outage")
			panelsChecked = true
			quantiles := quantileQueries(queries)
			t.Logf("t=%s: all %d dashboard queries returned data during the outage, %d of them quantiles of native histograms",
				time.Since(outageStarted).Round(time.Second), len(queries), len(quantiles))
			checkNativeHistograms(t, prom, outageJob, quantiles)
		}
		if panelsChecked && sinceStart > faultEnd {
			for _, n := range mustFire {
				if _, ok := resolvedAt[n]; !ok && !active[n] {
					resolvedAt[n] = sinceStart
					t.Logf("t=%s: %s resolved", sinceStart.Round(time.Second), n)
				}
			}
			if len(resolvedAt) == len(mustFire) {
				break
			}
		}
		time.Sleep(time.Second)
	}

	var kinds []string
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	t.Logf("alerts seen:\n  %s", strings.Join(kinds, "\n  "))
	assert.Greater(t, firedAt["CircuitBreakerStuckOpen"], faultStart+15*time.Second, "stuck open only after the 15s threshold")

	assert.NoError(t, fleet.Stop(t), "the demos exit 0 on SIGINT")
	t.Logf("e2e wall time %s", time.Since(began).Round(time.Second))
}
