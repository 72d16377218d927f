//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
	"github.com/stormwatch-go/stormwatch/rules"
)

// sloProfile is appended to the demo profile for this test only (the demo itself does not
// alert on SLOs): one SLO per dependency at 99% over 6 days, the shortest period, whose
// windows are 1m, 6m, 12m, 24m, 1h12m, 4h48m and 14h24m — the fast page needs the error
// ratio above 14.4% over 12m and over 1m.
const sloProfile = `
slos:
  - name: payments
    objective: 0.99
    period: 6d
  - name: inventory
    objective: 0.99
    period: 6d
  - name: recommendations
    objective: 0.99
    period: 6d
`

const (
	// sloOutageStart and sloOutageEnd bound the outage at speed 1 (demo time = wall time).
	sloOutageStart = 15 * time.Second
	sloOutageEnd   = 75 * time.Second
	// sloPageWindows are the label values of the fast page at a 6-day period.
	sloPageLong, sloPageShort = "12m", "1m"
	sloDeadline               = 6 * time.Minute
)

// TestSLOPagesForTheFailingDependencyOnly runs the demo's outage and steady scenarios in a real
// Prometheus 3.16 (one job each, scraped and evaluated every second) with the demo profile plus
// a 99% SLO per dependency. The fast-burn page (14.4× over 12m and 1m) must fire for payments,
// down from 0:15 to 1:15, during its outage, and resolve after it; it must never fire for any
// dependency of the steady demo, whose calls fail at 0.5% per attempt and are rescued by
// retries. Every query of the SLOs dashboard must return data during the outage.
func TestSLOPagesForTheFailingDependencyOnly(t *testing.T) {
	t.Parallel()
	began := time.Now()
	root := e2eprom.ModuleRoot(t)
	prometheusBin := e2eprom.PrometheusBin(t, root)
	dir := t.TempDir()

	profile, err := exec.Command(stormwatchBin, "demo", "--print-profile").Output()
	require.NoError(t, err, "stormwatch demo --print-profile")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stormwatch.yaml"), append(profile, sloProfile...), 0o644))
	for _, what := range []string{"rules", "dashboards"} {
		gen := exec.Command(stormwatchBin, "generate", what, "-c", "stormwatch.yaml", "-o", "out")
		gen.Dir = dir
		out, err := gen.CombinedOutput()
		require.NoError(t, err, "stormwatch generate %s: %s", what, out)
	}
	for _, f := range []string{"stormwatch-rules.yaml", "stormwatch-slo-rules.yaml"} {
		require.FileExists(t, filepath.Join(dir, "out", f))
	}
	var queries []panelQuery
	for _, q := range dashboardQueries(t, filepath.Join(dir, "out", "dashboards")) {
		if strings.HasSuffix(q.dashboard, " / SLOs") {
			queries = append(queries, q)
		}
	}
	require.NotEmpty(t, queries, "the SLOs dashboard")

	fleet := e2eprom.StartFleet(t, e2eprom.FleetConfig{
		Stormwatch: stormwatchBin, Prometheus: prometheusBin, Dir: dir,
		RuleFile: filepath.Join(dir, "out", "stormwatch-*rules.yaml"), // both rule files
		Demos: []e2eprom.DemoSpec{
			{Job: steadyJob, Args: []string{"--scenario", "steady", "--duration", "10m"}},
			{Job: outageJob, Args: []string{"--scenario", "outage", "--duration", "10m"}},
		},
		Client: client,
	}, time.Now().Add(60*time.Second))
	prom := fleet.API
	outage := fleet.Demo(t, outageJob)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*e2eprom.Process{fleet.Prometheus, outage.Process, fleet.Demo(t, steadyJob).Process} {
				t.Logf("--- %s output (tail) ---\n%s", p.Name, p.Tail(15))
			}
		}
	})

	// pages fired for the outage job, by dependency → first time since the demo started.
	paged := map[string]time.Duration{}
	var resolved time.Duration
	seen := map[string]bool{}
	panelsChecked := false
	end := time.Now().Add(sloDeadline)
	for resolved == 0 {
		now := time.Now()
		require.True(t, now.Before(end), "not done within %s: pages %v", sloDeadline, paged)
		since := now.Sub(outage.Started)
		paymentsPaging := false
		for _, a := range prom.Alerts(t) {
			if a.Labels["alertname"] != rules.AlertErrorBudgetBurn {
				continue
			}
			l := a.Labels
			seen[l["job"]+" "+l["name"]+" "+l["severity"]+" "+l["long_window"]+"/"+l["short_window"]+" "+a.State] = true
			require.NotEqual(t, steadyJob, l["job"], "an SLO alert on the steady demo: %v (%s)", l, a.State)
			if l["job"] != outageJob || a.State != "firing" || l["long_window"] != sloPageLong || l["short_window"] != sloPageShort {
				continue
			}
			assert.Equal(t, "critical", l["severity"])
			assert.Equal(t, l["name"], l[rules.LabelSLO])
			if _, ok := paged[l["name"]]; !ok {
				paged[l["name"]] = since
				t.Logf("t=%s: fast page for %s (%v)", since.Round(time.Second), l["name"], l)
			}
			if l["name"] == "payments" {
				paymentsPaging = true
			}
		}
		if since > sloOutageEnd && paged["payments"] == 0 {
			t.Fatalf("the outage ended without the fast page for payments (pages: %v)", paged)
		}
		// During the outage, once payments pages: every SLOs dashboard query returns data.
		if paymentsPaging && !panelsChecked {
			require.Less(t, since, sloOutageEnd-2*time.Second, "no time left in the outage for the dashboard queries")
			var missing []string
			for _, q := range queries {
				expr := substitute(q.expr, outage.Addr, "")
				require.NotContains(t, expr, "$", "unsubstituted variable in %s", q.panel)
				ok, err := hasData(prom, expr, outage.Started.Add(sloOutageStart), time.Now())
				require.NoError(t, err, q.panel)
				if !ok {
					missing = append(missing, q.panel+": "+q.expr)
				}
			}
			assert.Empty(t, missing, "SLOs dashboard queries without data during the outage")
			panelsChecked = true
			budget, ok := prom.Query(t, `job_name_slo:resilience_slo_error_budget_remaining:ratio6d{job="`+outageJob+`", slo="payments"}`)
			require.True(t, ok, "payments' error budget remaining is recorded")
			t.Logf("t=%s: %d SLOs dashboard queries returned data; payments' 6d error budget remaining: %.1f%%",
				since.Round(time.Second), len(queries), 100*budget)
			assert.Less(t, budget, 1.0, "the outage spends payments' budget")
		}
		if paged["payments"] > 0 && !paymentsPaging && since > sloOutageEnd {
			resolved = since
			t.Logf("t=%s: the fast page for payments resolved", since.Round(time.Second))
		}
		time.Sleep(time.Second)
	}

	var kinds []string
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	t.Logf("SLO alerts seen (job name severity long/short state):\n  %s", strings.Join(kinds, "\n  "))
	assert.True(t, panelsChecked)
	assert.Greater(t, paged["payments"], sloOutageStart, "the page follows the outage")
	assert.Less(t, paged["payments"], sloOutageStart+30*time.Second, "the fast page comes within 30s of the outage")
	assert.Less(t, resolved, sloOutageEnd+2*time.Minute, "and resolves within two minutes of the recovery")
	assert.NoError(t, fleet.Stop(t), "the demos exit 0 on SIGINT")
	t.Logf("SLO e2e wall time %s", time.Since(began).Round(time.Second))
}
