//go:build e2e

package realtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/internal/e2eprom"
)

// Real time scales: every scenario at speed 1 with a 20-minute fault, for 31 minutes, against the
// default generated rules (`stormwatch generate rules`, no config: 5m windows, the default for
// durations), evaluated by promtool's rule engine over the demo's own /metrics scraped every 15s.
const (
	rtTotal  = 31 * time.Minute
	rtOutage = 20 * time.Minute
	rtScrape = 15 * time.Second // the default scrape and evaluation interval
	rtStep   = 10 * time.Millisecond
	rtFault  = 15 * time.Second // the one-shot scenarios' fault begins 15s after the start
	rtPageBy = rtFault + 10*time.Minute
	rtSteps  = int(rtTotal/rtScrape) + 1
	rtPrefix = "resilience_"
)

// rtRun is one simulated demo run: its job label and its scenario (the alerts each must fire
// are in rtExpected).
type rtRun struct {
	job        string
	scenario   string
	noFallback bool
}

var rtRuns = []rtRun{
	{job: "rt-steady", scenario: demo.ScenarioSteady},
	{job: "rt-outage", scenario: demo.ScenarioOutage},
	{job: "rt-outage-no-fallback", scenario: demo.ScenarioOutage, noFallback: true},
	{job: "rt-slow", scenario: demo.ScenarioSlow},
	{job: "rt-rate-limited", scenario: demo.ScenarioRateLimited},
}

// rtStormJob is the retry-storm replay's job.
const rtStormJob = "rt-retry-storm"

// TestRealTimeScales runs every scenario for 31 minutes of demo time at speed 1 (the one-shot
// scenarios with a 20-minute fault) on a fake clock, scrapes each demo's /metrics every 15
// seconds of that time, and runs promtool over the samples with the default generated rules:
// per job exactly the expected alerts fire, DependencyOutage (critical) fires for the outage
// without fallback within 10 minutes of its start, and nothing pages for steady, the contained
// outage (with its fallback) or the contained retry storm. It logs every alert's fire and
// resolve times (docs/demo.md, "Real time scales").
func TestRealTimeScales(t *testing.T) {
	root := e2eprom.ModuleRoot(t)
	promtool := filepath.Join(filepath.Dir(e2eprom.PrometheusBin(t, root)), "promtool")
	dir := t.TempDir()
	out, err := exec.Command(stormwatchBin, "generate", "rules", "-o", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The simulations one after the other (each waits for the whole process to be idle between
	// steps), the retry-storm replay on the wall clock meanwhile. With one P, "idle" is exact:
	// the scheduler's running count is the caller alone (with more, an idle runtime may count
	// one more).
	metrics.Read(schedSamples)
	for _, m := range schedSamples {
		require.Equal(t, metrics.KindUint64, m.Value.Kind(), "%s: the scheduler metric settle reads (Go 1.26)", m.Name)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runs := make([]rtResult, len(rtRuns)+1)
	storm := make(chan rtResult, 1)
	go func() { storm <- scrapeStorm() }()
	for i, r := range rtRuns {
		runs[i] = simulate(r)
	}
	runs[len(rtRuns)] = <-storm
	samples := e2eprom.NewSamples(rtScrape)
	for _, r := range runs {
		require.NoError(t, r.err, r.job)
		if r.job == rtStormJob {
			t.Logf("%s: the replay in %s of wall time", r.job, r.took.Round(time.Millisecond))
		} else {
			t.Logf("%s: 31 minutes of demo time in %s of wall time (%d of %d steps did not settle)", r.job, r.took.Round(time.Millisecond), r.unsettled, int(rtTotal/rtStep))
		}
		merge(samples, r.samples)
	}
	require.Equal(t, rtSteps, samples.Steps)

	want := rtExpected(samples)
	testFile := writePromtoolTest(t, dir, "realtime.test.yaml", samples, rtExprTests(want))
	probeFile := writePromtoolTest(t, dir, "realtime.probe.yaml", samples, rtProbes())
	var assertOut, probeOut []byte
	var assertErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); assertOut, assertErr = promtoolRun(promtool, dir, testFile) }()
	go func() { defer wg.Done(); probeOut, _ = promtoolRun(promtool, dir, probeFile) }() // probes fail by design
	wg.Wait()
	logTable(t, string(probeOut))
	require.NoError(t, assertErr, "promtool test rules %s:\n%s", filepath.Base(testFile), failures(string(assertOut)))
}

func promtoolRun(promtool, dir, file string) ([]byte, error) {
	cmd := exec.Command(promtool, "test", "rules", file)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// rtResult is what one run scraped.
type rtResult struct {
	job     string
	samples *e2eprom.Samples
	took    time.Duration
	err     error
	// unsettled counts the steps after which the process did not become idle within settle's
	// bound (then the next step came anyway); more than maxUnsettled end the run with an error.
	unsettled int
}

// maxUnsettled bounds the steps that may not settle: a process that never becomes idle (a
// goroutine of another test in a system call) would make every step wait for settle's bound.
const maxUnsettled = 100

// simulate runs r on a fake clock, scraping it every rtScrape of demo time. The clock starts at
// the wall clock's time (code that compares a deadline with the wall clock, as net/http does,
// would find one in 1970 expired); the samples count the breakers' trip times from it. One
// thing stays on the wall clock: the demo's 6s deadline of a whole call (http.Client.Timeout),
// which the simulated calls, done in milliseconds of wall time, never reach — only a payments
// call of the outage could last longer (three 2.5s hangs), and its breaker rejects most of them.
func simulate(r rtRun) (res rtResult) {
	res = rtResult{job: r.job, samples: e2eprom.NewSamples(rtScrape)}
	began := time.Now()
	defer func() { res.took = time.Since(began) }()
	clk := clock.NewFake(began)
	res.samples.Epoch = began
	ready := make(chan string, 1)
	cfg := demo.Config{
		Listen: "127.0.0.1:0", Scenario: r.scenario, NoFallback: r.noFallback, Clock: clk, InProcess: true,
		Ready: func(u string) { ready <- u },
	}
	if slices.Contains(demo.OutageScenarios, r.scenario) {
		cfg.Outage = rtOutage
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- demo.Run(ctx, cfg) }()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		res.err = fmt.Errorf("the demo ended before serving: %v", err)
		return res
	}
	for step := 0; step < rtSteps && res.err == nil; step++ {
		if step > 0 {
			for range rtScrape / rtStep {
				clk.Advance(rtStep)
				if !settle() {
					res.unsettled++
				}
			}
			if res.unsettled > maxUnsettled {
				res.err = fmt.Errorf("after %d steps the process did not become idle (another test running in parallel?): the simulation would not be faithful", res.unsettled)
				break
			}
		}
		res.err = scrapeInto(res.samples, step, url, r.job)
	}
	cancel()
	select {
	case err := <-done:
		res.err = errors.Join(res.err, err)
		return res
	case <-time.After(time.Minute):
		res.err = errors.Join(res.err, errors.New("the demo did not stop"))
		return res
	}
}

// settle lets the work that the last Advance released run until every goroutine of the process
// waits again — on the fake clock, since the demo runs in process (Config.InProcess: no
// socket) — as the scheduler counts them: none runnable, none in a system call, only the caller
// running (GOMAXPROCS is 1 meanwhile, see TestRealTimeScales), twice in a row. It reports false if that did not happen within a bound (the test
// counts those).
func settle() bool {
	idleRounds := 0
	for range 20000 {
		runtime.Gosched()
		metrics.Read(schedSamples)
		runnable, running, notInGo := schedSamples[0].Value.Uint64(), schedSamples[1].Value.Uint64(), schedSamples[2].Value.Uint64()
		if runnable == 0 && running <= 1 && notInGo == 0 {
			if idleRounds++; idleRounds == 2 {
				return true
			}
		} else {
			idleRounds = 0
		}
	}
	return false
}

// schedSamples are the scheduler's goroutine counts settle reads.
var schedSamples = []metrics.Sample{
	{Name: "/sched/goroutines/runnable:goroutines"},
	{Name: "/sched/goroutines/running:goroutines"},
	{Name: "/sched/goroutines/not-in-go:goroutines"},
}

// scrapeInto scrapes url into samples at step, labelled with job and instance as Prometheus
// would.
func scrapeInto(samples *e2eprom.Samples, step int, url, job string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scrape %d: %s", step, resp.Status)
	}
	instance := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics")
	return samples.AddScrape(step, resp.Body, rtPrefix, map[string]string{"job": job, "instance": instance})
}

// scrapeStorm replays the retry storm at speed 1 on the wall clock (its replay does not run on
// an injected clock: the naive retry loops, the bank and the user load use timers of their
// own), scraping /metrics every 15s from the start to the end of the replay (about 90s); after
// it the process is idle and its series constant, so the remaining steps of the 31 minutes
// are scraped at once.
func scrapeStorm() (res rtResult) {
	res = rtResult{job: rtStormJob, samples: e2eprom.NewSamples(rtScrape)}
	began := time.Now()
	res.samples.Epoch = began // ≈ step 0: the breakers' trip times count from it
	defer func() { res.took = time.Since(began) }()
	ready := make(chan string, 1)
	replayed := make(chan demo.StormReport, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- demo.Run(ctx, demo.Config{Listen: "127.0.0.1:0", Scenario: demo.ScenarioRetryStorm,
			Ready: func(u string) { ready <- u }, StormResult: func(r demo.StormReport) { replayed <- r }})
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		res.err = fmt.Errorf("the demo ended before serving: %v", err)
		return res
	}
	res.err = replayScrapes(res.samples, url, replayed)
	cancel()
	res.err = errors.Join(res.err, <-done)
	return res
}

// replayScrapes scrapes url every rtScrape until the replay reports, then fills the grid.
func replayScrapes(samples *e2eprom.Samples, url string, replayed <-chan demo.StormReport) error {
	tick := time.NewTicker(rtScrape)
	defer tick.Stop()
	step := 0
	if err := scrapeInto(samples, step, url, rtStormJob); err != nil {
		return err
	}
	var rep demo.StormReport
	for over := false; !over; {
		select {
		case <-tick.C:
		case rep = <-replayed:
			over = true
		}
		if step++; step >= rtSteps {
			return fmt.Errorf("the replay did not end within %s", rtTotal)
		}
		if err := scrapeInto(samples, step, url, rtStormJob); err != nil {
			return err
		}
	}
	if !rep.Complete() {
		return fmt.Errorf("the replay was not complete: %+v", rep)
	}
	for step++; step < rtSteps; step++ {
		if err := scrapeInto(samples, step, url, rtStormJob); err != nil {
			return err
		}
	}
	return nil
}

// merge adds from's series into into (the same grid).
func merge(into, from *e2eprom.Samples) {
	for _, k := range from.Keys() {
		for i := 0; i < from.Steps; i++ {
			into.Set(k, i, from.Value(k, i))
		}
	}
}

// writePromtoolTest writes dir/name: a promtool test of the samples against the default rules
// with these expression tests.
func writePromtoolTest(t *testing.T, dir, name string, samples *e2eprom.Samples, exprTests []map[string]any) string {
	t.Helper()
	test := map[string]any{
		"name":             "real time scales: every scenario for 31 minutes, default rules",
		"interval":         rtScrape.String(),
		"input_series":     samples.InputSeries(),
		"promql_expr_test": exprTests,
	}
	file := map[string]any{
		"rule_files":          []string{"stormwatch-rules.yaml"},
		"evaluation_interval": rtScrape.String(),
		"group_eval_order":    groupOrder(t, filepath.Join(dir, "stormwatch-rules.yaml")),
		"tests":               []any{test},
	}
	b, err := yaml.Marshal(file)
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// groupOrder lists the rule file's groups in file order: promtool evaluates them so, as
// Prometheus does within one evaluation.
func groupOrder(t *testing.T, ruleFile string) []string {
	t.Helper()
	b, err := os.ReadFile(ruleFile)
	require.NoError(t, err)
	var f struct {
		Groups []struct{ Name string } `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(b, &f))
	var names []string
	for _, g := range f.Groups {
		names = append(names, g.Name)
	}
	return names
}

// rtAlert is one alert of one dependency.
type rtAlert struct{ job, alert, name, severity string }

// rtExpected are the alerts that must fire at some time of the 31 minutes, per job and
// dependency, and no other. Why each fires (or not) follows from the default rules (5m rate
// windows, at least 10 events in them for a ratio alert) and the demo's profiles (20 calls/s per
// dependency; 3 attempts and a 10% budget, with a floor of one retry a second; a breaker over
// 50 calls tripping at 50% failures or 80% calls slower than 1s, 5s open, whose rejections are
// never retried; a bulkhead of 40 permits, 8 for recommendations, waiting at most 100ms):
//
//   - steady: 0.5% errors, all rescued by a retry: every ratio far below its threshold.
//   - outage, payments (every attempt fails: 503s, resets, 2.5s hangs): the breaker trips at
//     0:16 and is never closed until the fault ends (its probes fail) → CircuitBreakerStuckOpen;
//     it rejects ~98% of calls → CircuitBreakerRejectingCalls (info); the few failed probes are
//     retried into the open breaker, rescuing none → RetriesNotRescuing; the fallback answers
//     every failed call → FallbackSustained, and nothing fails unrescued → no DependencyOutage.
//     Rejections are not retried: ~2% extra attempts, below RetryRateHigh's 5%.
//   - outage, inventory (25% 503s): retries rescue ~85% of the calls they retry; the budget
//     grants ~15% retries per call (RetryRateHigh: > 5%) and refuses about half of the ~28%
//     wanted (RetryBudgetExhausted: > 10%); the calls it refuses get the fallback
//     (FallbackSustained); wanted retries above 20% of calls with no call failing unrescued →
//     RetryStormContained (info).
//   - outage, recommendations (400–800ms for 8 permits at 20 calls/s: ~12 wanted in flight):
//     ~34% rejected → BulkheadRejectionsHigh; ~97% of permits in use → BulkheadSaturated; the
//     rejected calls get the fallback → FallbackSustained. Below 1s: no slow calls.
//   - outage without fallback: the same, minus everything a fallback did: no FallbackSustained,
//     no RetryStormContained (inventory's refused retries now fail ~15% of its calls unrescued,
//     above the 5% a contained storm allows, below DependencyOutage's 25%); and DependencyOutage
//     (critical) for payments (~100% of calls fail unrescued) and recommendations (~34%: its
//     bulkhead rejections now reach the callers), from 5 minutes of failures on.
//   - slow, payments (1.1–1.5s answers, all successful): the breaker trips on the slow-call
//     rate and its slow probes keep it open → CircuitBreakerStuckOpen, CircuitBreakerRejectingCalls,
//     FallbackSustained (the rejected calls). No failures: no retry alert, no DependencyOutage;
//     SlowCallRateHigh needs 10 minutes of a slow-call rate near the threshold, which resets
//     at each trip.
//   - rate-limited, inventory (30% 429 with Retry-After 1s): as inventory in the outage
//     (RetryRateHigh, RetryBudgetExhausted, FallbackSustained, RetryStormContained) — and
//     CircuitBreakerFlapping when the breaker trips 3 times within 15 minutes: a 50-call window
//     of 30% failures reaches 50% by chance now and then (the trips are counted from the
//     samples below, as the rule counts them).
//   - retry-storm: the stormwatch half of the replay (43s) wants 2% retries — the payment
//     service's do-not-retry signal stops them before they are wanted — and fails no call
//     unrescued; its 10-second fault is over long before any rate alert's for: nothing fires.
//
// Nothing fires CircuitBreakerOpenFleetWide (one instance per job) or a limiter alert (no
// limiter in these scenarios).
func rtExpected(samples *e2eprom.Samples) []rtAlert {
	const o, n, r, rl = "rt-outage", "rt-outage-no-fallback", "rt-slow", "rt-rate-limited"
	p, i, rec := demo.Payments, demo.Inventory, demo.Recommendations
	want := []rtAlert{
		{o, "CircuitBreakerStuckOpen", p, "warning"}, {o, "CircuitBreakerRejectingCalls", p, "info"},
		{o, "RetriesNotRescuing", p, "warning"}, {o, "FallbackSustained", p, "warning"},
		{o, "RetryRateHigh", i, "warning"}, {o, "RetryBudgetExhausted", i, "warning"},
		{o, "FallbackSustained", i, "warning"}, {o, "RetryStormContained", i, "info"},
		{o, "BulkheadRejectionsHigh", rec, "warning"}, {o, "BulkheadSaturated", rec, "warning"},
		{o, "FallbackSustained", rec, "warning"},

		{n, "CircuitBreakerStuckOpen", p, "warning"}, {n, "CircuitBreakerRejectingCalls", p, "info"},
		{n, "RetriesNotRescuing", p, "warning"}, {n, "DependencyOutage", p, "critical"},
		{n, "RetryRateHigh", i, "warning"}, {n, "RetryBudgetExhausted", i, "warning"},
		{n, "BulkheadRejectionsHigh", rec, "warning"}, {n, "BulkheadSaturated", rec, "warning"},
		{n, "DependencyOutage", rec, "critical"},

		{r, "CircuitBreakerStuckOpen", p, "warning"}, {r, "CircuitBreakerRejectingCalls", p, "info"},
		{r, "FallbackSustained", p, "warning"},

		{rl, "RetryRateHigh", i, "warning"}, {rl, "RetryBudgetExhausted", i, "warning"},
		{rl, "FallbackSustained", i, "warning"}, {rl, "RetryStormContained", i, "info"},
	}
	return append(want, flapping(samples)...)
}

// flapping applies CircuitBreakerFlapping's firing condition — at least 3 closed→open trips
// within 15 minutes (the increase over the samples of the last 15 minutes) — to every breaker's
// scraped trips.
func flapping(samples *e2eprom.Samples) []rtAlert {
	var out []rtAlert
	window := int(15 * time.Minute / rtScrape) // samples in (T-15m, T]
	for _, k := range samples.Keys() {
		if !strings.HasPrefix(k, "resilience_circuitbreaker_transitions_total{") || !strings.Contains(k, `from="closed"`) || !strings.Contains(k, `to="open"`) {
			continue
		}
		for end := window - 1; end < samples.Steps; end++ {
			first, last := samples.Value(k, end-window+1), samples.Value(k, end)
			if last-first >= 3 { // NaN (not yet scraped) compares false
				out = append(out, rtAlert{label(k, "job"), "CircuitBreakerFlapping", label(k, "name"), "warning"})
				break
			}
		}
	}
	return out
}

// label returns the value of label l in a series key ({a="b", l="v"} or name{…}).
func label(key, l string) string {
	for _, pre := range []string{"{", ", "} {
		if i := strings.Index(key, pre+l+`="`); i >= 0 {
			v := key[i+len(pre)+len(l)+2:]
			return v[:strings.Index(v, `"`)]
		}
	}
	return ""
}

// rtExprTests are the assertions, over the ALERTS series the rules write:
//   - everything that fired at any time of the 31 minutes is exactly want;
//   - 10 minutes after the outage began, the outage without fallback pages for payments.
func rtExprTests(want []rtAlert) []map[string]any {
	exp := make([]map[string]any, len(want))
	for i, a := range want {
		exp[i] = map[string]any{"labels": fmt.Sprintf(`{alertname=%q, job=%q, name=%q, severity=%q}`, a.alert, a.job, a.name, a.severity), "value": 1}
	}
	return []map[string]any{{
		"expr":        `count by (job, alertname, name, severity) (max_over_time(ALERTS{alertstate="firing"}[` + promDuration(rtTotal) + `]))`,
		"eval_time":   promDuration(rtTotal),
		"exp_samples": exp,
	}, {
		"expr":      `count by (job, alertname, name, severity) (ALERTS{alertname="DependencyOutage", alertstate="firing", job="rt-outage-no-fallback", name="payments"})`,
		"eval_time": promDuration(rtPageBy),
		"exp_samples": []map[string]any{{
			"labels": `{alertname="DependencyOutage", job="rt-outage-no-fallback", name="payments", severity="critical"}`, "value": 1,
		}},
	}}
}

// The probes: for every alert series that fired, the first and the last evaluation at which it
// was firing and how many evaluations it was firing for.
var (
	probeFirst = `min_over_time(timestamp(ALERTS{alertstate="firing"})[` + promDuration(rtTotal) + `:` + promDuration(rtScrape) + `])`
	probeLast  = `max_over_time(timestamp(ALERTS{alertstate="firing"})[` + promDuration(rtTotal) + `:` + promDuration(rtScrape) + `])`
	probeCount = `count_over_time(ALERTS{alertstate="firing"}[` + promDuration(rtTotal) + `:` + promDuration(rtScrape) + `])`
)

// rtProbes are expression tests that expect nothing: promtool prints what they got.
func rtProbes() []map[string]any {
	var out []map[string]any
	for _, e := range []string{probeFirst, probeLast, probeCount} {
		out = append(out, map[string]any{"expr": e, "eval_time": promDuration(rtTotal), "exp_samples": []any{}})
	}
	return out
}

// logTable logs, per job and alert, when it fired and resolved (demo time): the closing
// note's table. An alert that was firing at some evaluations only between its first and last
// (more than one episode) says so.
func logTable(t *testing.T, out string) {
	first, ok1, err1 := e2eprom.Got(out, probeFirst)
	last, ok2, err2 := e2eprom.Got(out, probeLast)
	count, ok3, err3 := e2eprom.Got(out, probeCount)
	if err := errors.Join(err1, err2, err3); err != nil || !ok1 || !ok2 || !ok3 {
		t.Errorf("reading the probes (%v):\n%s", err, out)
		return
	}
	keys := make([]string, 0, len(first))
	for k := range first {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		ja, jb := label(keys[a], "job"), label(keys[b], "job")
		return ja < jb || ja == jb && first[keys[a]] < first[keys[b]]
	})
	for _, k := range keys {
		at := func(sec float64) string { return clockTime(time.Duration(sec * float64(time.Second))) }
		span := "→ still firing at " + clockTime(rtTotal)
		if l := time.Duration(last[k] * float64(time.Second)); l < rtTotal {
			span = "→ " + clockTime(l+rtScrape)
		}
		if steps := int(count[k]); time.Duration(last[k]-first[k])*time.Second+rtScrape != time.Duration(steps)*rtScrape {
			span += fmt.Sprintf(" (firing at %d of those evaluations: more than one episode)", steps)
		}
		t.Logf("%-22s %-28s %-16s %s %s", label(k, "job"), label(k, "alertname"), label(k, "name"), at(first[k]), span)
	}
}

// clockTime renders d as m:ss.
func clockTime(d time.Duration) string {
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// promDuration renders d in PromQL/promtool syntax (31m, 10m15s).
func promDuration(d time.Duration) string { return model.Duration(d).String() }

// failures keeps promtool's FAILED blocks (its data dump is long).
func failures(out string) string {
	if i := strings.Index(out, "FAILED"); i >= 0 {
		return out[i:]
	}
	return out
}
