//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
	"github.com/stormwatch-go/stormwatch/rules"
)

// matrixRow is one demo scenario of the matrix and the alerts it must fire — exactly these,
// each on the named dependency — under the demo profile.
type matrixRow struct {
	scenario string
	// fires maps each alert that must fire to the dependencies (name labels) it fires for.
	fires map[string][]string
	// lasting are the alerts of fires that are not expected to resolve within the run (their
	// window outlasts it): CircuitBreakerFlapping resolves 15 minutes after the last trip.
	lasting []string
	// causes are the trip causes (cause label) of the breaker alerts that carry one.
	causes map[string]string
}

// matrix is the scenario matrix of README's "Alerts in the demo" table: every demo scenario at
// speed 1, its demo-profile alerts. Times are demo time (the scenario's own clock).
var matrix = []matrixRow{
	{scenario: demo.ScenarioSteady, fires: map[string][]string{}},
	{
		scenario: demo.ScenarioOutage,
		fires: map[string][]string{
			rules.AlertStuckOpen:              {demo.Payments},
			rules.AlertRejectingCalls:         {demo.Payments},
			rules.AlertRetriesNotRescuing:     {demo.Payments},
			rules.AlertRetryRateHigh:          {demo.Inventory},
			rules.AlertBulkheadSaturated:      {demo.Recommendations},
			rules.AlertBulkheadRejectionsHigh: {demo.Recommendations},
			rules.AlertFallbackSustained:      {demo.Inventory, demo.Payments, demo.Recommendations},
			rules.AlertRetryBudgetExhausted:   {demo.Inventory},
		},
		causes: map[string]string{rules.AlertStuckOpen: catalog.TripFailureRate.String()},
	},
	{
		scenario: demo.ScenarioFlapping,
		fires: map[string][]string{
			rules.AlertFlapping:           {demo.Payments},
			rules.AlertRejectingCalls:     {demo.Payments},
			rules.AlertRetriesNotRescuing: {demo.Payments},
			rules.AlertFallbackSustained:  {demo.Payments},
		},
		lasting: []string{rules.AlertFlapping},
	},
	{
		scenario: demo.ScenarioSlow,
		fires: map[string][]string{
			rules.AlertStuckOpen:         {demo.Payments},
			rules.AlertRejectingCalls:    {demo.Payments},
			rules.AlertFallbackSustained: {demo.Payments},
		},
		causes: map[string]string{rules.AlertStuckOpen: catalog.TripSlowCallRate.String()},
	},
	{
		scenario: demo.ScenarioRateLimited,
		fires: map[string][]string{
			rules.AlertRetryRateHigh:        {demo.Inventory},
			rules.AlertRetryBudgetExhausted: {demo.Inventory},
			rules.AlertFallbackSustained:    {demo.Inventory},
		},
	},
	// The stormwatch half of the replay slows the bank down for 10 seconds: stormwatch contains
	// it (breakers, budget, fallbacks), and nothing pages — every alert on a rate needs a for of
	// twice the rate window.
	{scenario: demo.ScenarioRetryStorm, fires: map[string][]string{}},
	// Offered load on payments at 2× then 3× its capacity from 0:15 to 1:15: the adaptive
	// limiter runs at its limit and rejects the excess, and says so, and payments' fallback
	// answers the rejected calls for over a minute; nothing else pages (the limit stays far
	// above its minimum, the baseline does not move, the dependency stays healthy).
	{
		scenario: demo.ScenarioOverload,
		fires: map[string][]string{
			rules.AlertLimiterSaturated:      {demo.Payments},
			rules.AlertLimiterRejectionsHigh: {demo.Payments},
			rules.AlertFallbackSustained:     {demo.Payments},
		},
	},
	// Hedging cuts inventory's straggler tail for about 5% more requests and raises nothing;
	// while inventory is slow for everyone (0:15 to 1:15) the hedges lose and the budget
	// refuses most of them.
	{
		scenario: demo.ScenarioStragglers,
		fires: map[string][]string{
			rules.AlertHedgeExtraLoadHigh:   {demo.Inventory},
			rules.AlertHedgesRarelyWinning:  {demo.Inventory},
			rules.AlertHedgeBudgetExhausted: {demo.Inventory},
		},
	},
}

const (
	// matrixObserve is how long the matrix watches the alerts after the demos started: past
	// the resolution of every alert of every scenario but Flapping's.
	matrixObserve = 3*time.Minute + 45*time.Second
	// matrixOutageCheck is when, during the outage (0:15 to 1:15), the dashboard queries must
	// return data.
	matrixOutageCheck = 55 * time.Second
)

// alertKey identifies one alert of one scenario.
type alertKey struct{ job, alert, name string }

// alertSpan is when an alert was firing, in demo time.
type alertSpan struct {
	pending, fired, resolved time.Duration
	open                     bool // still firing at the end of the run
	labels                   map[string]string
}

func matrixJob(scenario string) string { return "matrix-" + scenario }

// TestScenarioMatrix runs every demo scenario at once, each its own `stormwatch demo` on its own
// port and job, scraped every second by one Prometheus 3.16 that evaluates the rules the demo
// profile generates (`stormwatch demo --print-profile`), and asserts, per scenario, the exact set
// of alerts that fire (state firing) and the dependency each is about — nothing else may fire —
// and that they resolve within the run (but for Flapping's 15-minute window). The fire and
// resolve times are logged as the table README shows. During the outage every query of the
// generated dashboards must return data. Then `stormwatch backtest` replays the same history
// (checkBacktest).
func TestScenarioMatrix(t *testing.T) {
	t.Parallel()
	began := time.Now()
	root := e2eprom.ModuleRoot(t)
	prometheusBin := e2eprom.PrometheusBin(t, root)
	dir := t.TempDir()
	ruleFile := e2eprom.DemoProfileRules(t, stormwatchBin, dir)
	gen := exec.Command(stormwatchBin, "generate", "dashboards", "-c", filepath.Join(dir, "demo-profile.yaml"), "-o", filepath.Join(dir, "out"))
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "stormwatch generate dashboards: %s", out)
	queries := dashboardQueries(t, filepath.Join(dir, "out", "dashboards"))

	var specs []e2eprom.DemoSpec
	for _, row := range matrix {
		specs = append(specs, e2eprom.DemoSpec{Job: matrixJob(row.scenario), Args: []string{"--scenario", row.scenario, "--duration", "0"}})
	}
	fleet := e2eprom.StartFleet(t, e2eprom.FleetConfig{
		Stormwatch: stormwatchBin, Prometheus: prometheusBin, Dir: dir, RuleFile: ruleFile, Demos: specs, Client: client,
	}, time.Now().Add(90*time.Second))
	prom := fleet.API
	started := map[string]time.Time{}
	for _, d := range fleet.Demos {
		started[d.Job] = d.Started
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- prometheus (tail) ---\n%s", fleet.Prometheus.Tail(15))
		}
	})
	last := slices.MaxFunc(fleet.Demos, func(a, b *e2eprom.Demo) int { return a.Started.Compare(b.Started) }).Started

	spans := map[alertKey]*alertSpan{}
	pendingSince := map[alertKey]time.Duration{} // when a pending alert was first seen pending
	outage := fleet.Demo(t, matrixJob(demo.ScenarioOutage))
	dashboardsChecked := false
	for time.Since(last) < matrixObserve {
		active := map[alertKey]bool{}
		pendingNow := map[alertKey]bool{}
		for _, a := range prom.Alerts(t) {
			k := alertKey{a.Labels["job"], a.Labels["alertname"], a.Labels["name"]}
			at, ok := started[k.job]
			require.True(t, ok, "an alert of an unknown job: %v", a.Labels)
			if a.State != "firing" {
				pendingNow[k] = true
				if _, ok := pendingSince[k]; !ok {
					pendingSince[k] = time.Since(at)
				}
				continue
			}
			active[k] = true
			s := spans[k]
			if s == nil || !s.open {
				spans[k] = &alertSpan{pending: pendingSince[k], fired: time.Since(at), open: true, labels: a.Labels}
				t.Logf("%s t=%s: %s firing (%s)", k.job, time.Since(at).Round(time.Second), k.alert, labelString(a.Labels))
			}
		}
		for k, since := range pendingSince {
			if !pendingNow[k] {
				if s := spans[k]; s == nil || !s.open {
					t.Logf("%s t=%s: %s (%s) was pending for %s and did not fire", k.job, time.Since(started[k.job]).Round(time.Second), k.alert, k.name,
						(time.Since(started[k.job]) - since).Round(time.Second))
				}
				delete(pendingSince, k) // fired, or the condition broke off
			}
		}
		for k, s := range spans {
			if s.open && !active[k] {
				s.open, s.resolved = false, time.Since(started[k.job])
				t.Logf("%s t=%s: %s resolved", k.job, s.resolved.Round(time.Second), k.alert)
			}
		}
		if !dashboardsChecked && time.Since(outage.Started) > matrixOutageCheck {
			checkDashboardsDuringOutage(t, prom, queries, outage)
			dashboardsChecked = true
		}
		time.Sleep(time.Second) // polling a real server
	}
	require.True(t, dashboardsChecked)
	observed := time.Now()

	// The matrix: what fired, per scenario; then the assertions.
	t.Logf("scenario matrix (demo time, speed 1, demo profile):\n%s", matrixTable(spans))
	for _, row := range matrix {
		job := matrixJob(row.scenario)
		got := map[string][]string{}
		for k, s := range spans {
			if k.job != job {
				continue
			}
			got[k.alert] = append(got[k.alert], k.name)
			slices.Sort(got[k.alert])
			if want, ok := row.causes[k.alert]; ok {
				assert.Equal(t, want, s.labels[catalog.LabelCause], "%s: %s names the trip cause", row.scenario, k.alert)
			}
			if !slices.Contains(row.lasting, k.alert) {
				assert.False(t, s.open, "%s: %s still firing at the end of the run (fired at %s)", row.scenario, k.alert, s.fired.Round(time.Second))
			}
		}
		assert.Equal(t, row.fires, got, "%s: the alerts that fired, and for which dependency", row.scenario)
	}
	checkBacktest(t, fleet, dir, filepath.Join(dir, "demo-profile.yaml"), began.Add(-time.Second), observed)
	assert.NoError(t, fleet.Stop(t), "the demos exit 0 on SIGINT")
	t.Logf("matrix wall time %s", time.Since(began).Round(time.Second))
}

// checkDashboardsDuringOutage requires every query of the generated dashboards to return data
// for the outage demo (Grafana's variables set to its job and instance, and for the Dependency
// dashboard to each of its dependencies in turn until one has data).
func checkDashboardsDuringOutage(t *testing.T, prom e2eprom.API, queries []panelQuery, outage *e2eprom.Demo) {
	t.Helper()
	var missing []string
	for _, q := range queries {
		names := []string{""}
		if strings.Contains(q.expr, `="$name"`) {
			names = demo.Dependencies
		}
		found := false
		for _, name := range names {
			expr := substituteFor(q.expr, outage.Job, outage.Addr, name)
			require.NotContains(t, expr, "$", "unsubstituted variable in %s / %s", q.dashboard, q.panel)
			ok, err := hasData(prom, expr, outage.Started.Add(15*time.Second), time.Now())
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
	t.Logf("t=%s: %d dashboard queries, all with data during the outage", time.Since(outage.Started).Round(time.Second), len(queries))
}

// substituteFor replaces Grafana's variables as a user looking at job would set them (1s
// scrapes: $__rate_interval = 4s).
func substituteFor(expr, job, instance, name string) string {
	return strings.NewReplacer(
		"$__rate_interval", "4s", "${__rate_interval}", "4s",
		"$__interval", "1s", "${__interval}", "1s",
		`=~"$job"`, `=~"`+regexp.QuoteMeta(job)+`"`, `="$job"`, `="`+job+`"`,
		`=~"$instance"`, `=~".+"`, `="$instance"`, `="`+instance+`"`,
		`=~"$name"`, `=~"`+orAll(name)+`"`, `="$name"`, `="`+name+`"`,
		"$datasource", "prometheus",
	).Replace(expr)
}

// matrixTable renders the spans as README's table: scenario → alert (dependency) fired at,
// resolved at.
func matrixTable(spans map[alertKey]*alertSpan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | alert (dependency) | pending at | fires at | resolves at |\n|---|---|---|---|---|\n")
	for _, row := range matrix {
		job := matrixJob(row.scenario)
		keys := slices.Collect(maps.Keys(spans))
		sort.Slice(keys, func(i, j int) bool { return spans[keys[i]].fired < spans[keys[j]].fired })
		n := 0
		for _, k := range keys {
			if k.job != job {
				continue
			}
			s := spans[k]
			res := s.resolved.Round(time.Second).String()
			if s.open {
				res = "still firing"
			}
			extra := ""
			if c := s.labels["cause"]; c != "" {
				extra = ", cause " + c
			}
			fmt.Fprintf(&b, "| %s | %s (%s%s) | %s | %s | %s |\n", row.scenario, k.alert, k.name, extra, s.pending.Round(time.Second), s.fired.Round(time.Second), res)
			n++
		}
		if n == 0 {
			fmt.Fprintf(&b, "| %s | none | | | |\n", row.scenario)
		}
	}
	return b.String()
}

func labelString(ls map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		if k != "alertname" && k != "job" {
			parts = append(parts, k+"="+ls[k])
		}
	}
	return strings.Join(parts, " ")
}
