package rules

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// The promtool tests of the SLOs: every SLO is tested with the scenarios of sloScenarios, each
// a traffic shape whose expected alerts (when they fire, and the error ratio their descriptions
// state) the replay of slo_replay.go computes as Prometheus would. Building a scenario asserts
// the workbook's math as well: a fast burn pages within the time its long window needs, a slow
// burn opens tickets and never pages, a blip, idle traffic and traffic under the guard stay
// silent, and the budget arithmetic is right. A generator that broke those properties fails to
// generate; Prometheus disagreeing with the replay fails the promtool tests.

const (
	// sloTestOffset is where the counters start: a process that has been running a while, so
	// rate() never extrapolates a counter towards zero.
	sloTestOffset = 1_000_000
	// sloCallsPerStep is the calls per step (15s) of ordinary traffic, unless the SLO's
	// minimum-traffic guards need more (callsPerStep).
	sloCallsPerStep = 1000
	// slowBurnFactor is the slow burn's rate: above the tickets' 3×, below the pages' 6×.
	slowBurnFactor = 4.5
	// The SLO tests are evaluated every minute (Prometheus' default), or less often for long
	// periods, up to a third of a 90-day period's base window, so that every base window holds
	// sloEvalsPerBase evaluations, as in production. The rules' results do not depend on it
	// (long windows average recorded rates; the alerts have no for), but promtool's work grows
	// with the square of a scenario's evaluations (each sums every long window).
	minSLOEvalInterval = time.Minute
	maxSLOEvalInterval = 5 * time.Minute
	sloEvalsPerBase    = 3
)

// sloEvalInterval is the evaluation interval of the SLO tests: the longest whole number of
// steps (15s scrapes) in [minSLOEvalInterval, maxSLOEvalInterval] that every SLO's base
// window holds sloEvalsPerBase times, or minSLOEvalInterval.
func (r *resolved) sloEvalInterval() time.Duration {
	every := maxSLOEvalInterval
	for _, s := range r.slos {
		every = min(every, s.base()/sloEvalsPerBase/step*step)
	}
	return max(every, minSLOEvalInterval)
}

// sloScenarios are the scenarios every SLO is tested with, in order; each returns its test
// groups (none when it does not apply) or why the rules break the property it asserts.
var sloScenarios = []func(*sloTester) ([]sloScenario, error){
	(*sloTester).fastBurn, (*sloTester).slowBurn, (*sloTester).blip, (*sloTester).idle,
	(*sloTester).lowTraffic, (*sloTester).budget, (*sloTester).composition,
}

// sliInput is a counter the SLI scenario feeds: calls per step of a metric with one label set.
type sliInput struct {
	m            catalog.Metric
	label, value string
	inc          float64
}

// sliCase is, for one source, the counter of good and bad calls of the scenarios (metric, its
// good and bad kinds), and the SLI scenario's: every counter the SLI reads and some it must
// not, and the calls per step the SLI counts in all, as bad and, without failures, as good —
// written by hand from the definition (what).
type sliCase struct {
	metric                    catalog.Metric
	good, bad                 string
	inputs                    []sliInput
	total, badCalls, goodOnly float64
	what                      string
}

// sliFallbacks are the calls a fallback answered, bad unless fallbacks_good.
const sliFallbacks = 30 + 40

var sliFallbackInputs = []sliInput{
	{catalog.FallbackCalls, catalog.LabelCause, catalog.CauseCircuitOpen.String(), 30},
	{catalog.FallbackCalls, catalog.LabelCause, catalog.CauseRetriesExhausted.String(), 40},
}

var sliCases = map[SLOSource]sliCase{
	SLOSourceBreaker: {
		metric: catalog.BreakerCalls, good: catalog.CallSuccessful.String(), bad: catalog.CallFailed.String(),
		inputs: []sliInput{
			{catalog.BreakerCalls, catalog.LabelKind, catalog.CallSuccessful.String(), 600},
			{catalog.BreakerCalls, catalog.LabelKind, catalog.CallSlowSuccessful.String(), 50},
			{catalog.BreakerCalls, catalog.LabelKind, catalog.CallFailed.String(), 100},
			{catalog.BreakerCalls, catalog.LabelKind, catalog.CallSlowFailed.String(), 50},
			{catalog.BreakerCalls, catalog.LabelKind, catalog.CallIgnored.String(), 40},
			{catalog.BreakerNotPermitted, "", "", 60},
			{catalog.BulkheadCalls, catalog.LabelKind, catalog.AdmissionPermitted.String(), 900},
			{catalog.BulkheadCalls, catalog.LabelKind, catalog.AdmissionRejected.String(), 30},
		},
		total: 600 + 50 + 100 + 50 + 60 + 30, badCalls: 100 + 50 + 60 + 30, goodOnly: 600,
		what: "successful and slow successful calls are good; failed and slow failed calls and the breaker's and the bulkhead's rejections are bad; ignored calls are neither",
	},
	SLOSourceRetry: {
		metric: catalog.RetryCalls, good: catalog.RetrySuccessfulWithoutRetry.String(), bad: catalog.RetryFailedWithRetry.String(),
		inputs: []sliInput{
			{catalog.RetryCalls, catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String(), 600},
			{catalog.RetryCalls, catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String(), 100},
			{catalog.RetryCalls, catalog.LabelKind, catalog.RetryFailedWithoutRetry.String(), 150},
			{catalog.RetryCalls, catalog.LabelKind, catalog.RetryFailedWithRetry.String(), 100},
			{catalog.RetryCalls, catalog.LabelKind, catalog.RetryAborted.String(), 50},
			{catalog.RetryErrors, catalog.LabelClass, catalog.ClassHTTP4xx.String(), 50},
			{catalog.RetryErrors, catalog.LabelClass, catalog.ClassHTTP5xx.String(), 120},
			{catalog.RetryErrors, catalog.LabelClass, catalog.ClassRejected.String(), 30},
		},
		total: 600 + 100 + 150 + 100, badCalls: 150 + 100 - 50, goodOnly: 600,
		what: "successful calls (with or without retry) and calls that failed on a 4xx answer are good; other failed calls (the breaker's and the bulkhead's rejections and deadlines included) are bad; aborted calls are neither",
	},
}

// sloScenario is one test group of one SLO.
type sloScenario struct {
	name   string
	sim    *sloSim
	checks []int // evaluations at which the alerts are checked
	exprs  []yamlExprTest
	series []yamlSeries // when set, replaces the good and bad counters of sim
}

// sloTester builds the scenarios of one SLO.
type sloTester struct {
	r     *resolved
	s     *resolvedSLO
	lv    map[string]string // label values of the test series (the name satisfies the SLO)
	peers []*resolvedSLO    // the other SLOs of that name and source: their alerts fire too
	calls float64           // calls per step of ordinary traffic (callsPerStep)
	every time.Duration     // the evaluation interval
}

// sloTests are the promtool test groups of every SLO.
func (r *resolved) sloTests(lv map[string]string) ([]yamlTestGroup, error) {
	var out []yamlTestGroup
	for _, s := range r.slos {
		slv, err := r.sloTestLabels(lv, s)
		if err != nil {
			return nil, err
		}
		t := &sloTester{r: r, s: s, lv: slv, calls: callsPerStep(s), every: r.sloEvalInterval()}
		for _, o := range r.slos {
			if o != s && o.Source == s.Source && o.name.Matches(slv[catalog.LabelName]) {
				t.peers = append(t.peers, o)
			}
		}
		for _, build := range sloScenarios {
			scs, err := build(t)
			if err != nil {
				return nil, fmt.Errorf("rules: generating the tests of SLO %q: %w", s.ID, err)
			}
			for _, sc := range scs {
				out = append(out, t.render(sc))
			}
		}
	}
	return out, nil
}

// callsPerStep is the tester's calls: enough traffic for every guard to let the alerts fire.
func callsPerStep(s *resolvedSLO) float64 {
	calls := float64(sloCallsPerStep)
	for _, b := range s.burns {
		calls = max(calls, math.Ceil(2*float64(b.minCalls)*step.Seconds()/b.long.Seconds()))
	}
	return calls
}

// sloTestLabels picks the test label values of an SLO: a name the SLO selects.
func (r *resolved) sloTestLabels(lv map[string]string, s *resolvedSLO) (map[string]string, error) {
	cands := []string{lv[catalog.LabelName]}
	if s.Name != "" {
		cands = []string{s.Name}
	} else if sample, ok := sampleRegexp(s.NameRegex); ok {
		cands = append([]string{sample}, cands...)
	}
	cands = slices.DeleteFunc(cands, func(c string) bool { return !s.name.Matches(c) })
	if v, err := r.pickLabelValue(catalog.LabelName, cands); err == nil && slices.Contains(cands, v) {
		out := maps.Clone(lv)
		out[catalog.LabelName] = v
		return out, nil
	}
	return nil, fieldErr(sloPath(s.index, "name"), nil, "cannot generate tests: no name the SLO selects also satisfies the selector %s", r.selectorString())
}

// newSim replays the SLO's rules and its peers' over the counters of traffic tr.
func (t *sloTester) newSim(evals int, tr traffic) *sloSim {
	good, bad := counters(tr, t.every, evals)
	sim := replaySLO(t.s, t.every, evals, good, bad)
	for _, p := range t.peers {
		sim.peers = append(sim.peers, replaySLO(p, t.every, evals, good, bad))
	}
	return sim
}

// failing is the tester's traffic with bad of its calls failing after warm evaluations.
func (t *sloTester) failing(warm int, bad float64) traffic {
	return traffic{calls: t.calls, bad: bad, from: warm * t.evalEvery(), to: -1}
}

// evalsIn is d in evaluations, rounded up.
func (t *sloTester) evalsIn(d time.Duration) int { return int((d + t.every - 1) / t.every) }

// evalTime is the time of evaluation k.
func (t *sloTester) evalTime(k int) time.Duration { return time.Duration(k) * t.every }

// evalEvery is the number of samples per evaluation.
func (t *sloTester) evalEvery() int { return samplesPer(t.every) }

// budgetShare is 1 − objective as PromQL reads the generated literal.
func (s *resolvedSLO) budgetShare() float64 { return decimalFloat(decimal(s.budget)) }

// around returns the checks that pin the first firing of marks: the last certain evaluation
// before the first mark and after floor, and the first certain one at or after each mark.
func (sim *sloSim) around(floor int, marks ...int) ([]int, error) {
	checks := []int{sim.settle(marks[0]-1, -1, floor+1)}
	for _, m := range marks {
		checks = append(checks, sim.settle(m, 1, min(m+10, sim.evals()-1)))
	}
	if slices.Contains(checks, -1) {
		return nil, errors.New("no certain evaluation around the alerts' first firing")
	}
	return checks, nil
}

// fastBurn: after a long window of healthy traffic, calls start failing at 50 times the rate
// the objective allows (all of them, for objectives below 98%). The fast page must fire within
// the time its long window needs to reach the threshold, plus a base window of smoothing and
// an evaluation.
func (t *sloTester) fastBurn() ([]sloScenario, error) {
	s, b0, budget := t.s, t.s.burns[0], t.s.budgetShare()
	bad := math.Max(1, math.Round(math.Min(1, 50*budget)*t.calls))
	share := bad / t.calls
	warm := t.evalsIn(b0.long + s.base())
	sim := t.newSim(warm+2*t.evalsIn(b0.long)+t.evalsIn(s.base()), t.failing(warm, bad))
	first := sim.first(warm, func(b resolvedBurn) bool { return b == b0 }, true)
	windowMath := time.Duration(decimalFloat(b0.threshold) / share * float64(b0.long))
	took := t.evalTime(first - warm)
	if first < 0 || took > windowMath+s.base()+t.every {
		return nil, fmt.Errorf("a %s burn did not page within the window math (%s + a %s base window)",
			pct(share), FormatDuration(windowMath.Round(time.Second)), FormatDuration(s.base()))
	}
	checks, err := sim.around(warm, first)
	return []sloScenario{{
		name: fmt.Sprintf("a fast burn (%s× the budget: %s of calls failing after %s of healthy traffic) pages %s later; the %s window reaches %s× after about %s",
			num(share/budget), pct(share), FormatDuration(t.evalTime(warm)), FormatDuration(took),
			FormatDuration(b0.long), num(b0.Factor), FormatDuration(windowMath.Round(time.Second))),
		sim: sim, checks: checks,
	}}, err
}

// slowBurn: calls fail at 4.5 times the allowed rate. The tickets fire; the pages never do.
// The scenario ends at its last check.
func (t *sloTester) slowBurn() ([]sloScenario, error) {
	s, budget := t.s, t.s.budgetShare()
	warm := t.evalsIn(s.burns[0].long + s.base())
	tr := t.failing(warm, slowBurnFactor*budget*t.calls)
	sim := t.newSim(warm+4*t.evalsIn(s.burns[3].short)+4*warm, tr)
	one, both := sim.first(warm, ticketBurns, false), sim.first(warm, ticketBurns, true)
	if one < 0 || both < 0 {
		return nil, fmt.Errorf("a %s× burn did not open both tickets", num(slowBurnFactor))
	}
	checks, err := sim.around(warm, one, both)
	if err != nil {
		return nil, err
	}
	if sim = t.newSim(checks[2]+1, tr); !sim.silent(pageBurns) {
		return nil, fmt.Errorf("a %s× burn paged", num(slowBurnFactor))
	}
	return []sloScenario{{
		name: fmt.Sprintf("a slow burn (%s× the budget: %s of calls failing after %s of healthy traffic) opens a ticket after %s, both after %s, and never pages",
			num(slowBurnFactor), pct(slowBurnFactor*budget), FormatDuration(t.evalTime(warm)),
			FormatDuration(t.evalTime(one-warm)), FormatDuration(t.evalTime(both-warm))),
		sim: sim, checks: checks,
	}}, nil
}

// quiet is the scenario of traffic tr over evals evaluations, checked at checks, if no alert
// fires in it.
func (t *sloTester) quiet(name string, evals int, tr traffic, checks ...int) ([]sloScenario, error) {
	if sim := t.newSim(evals, tr); sim.silent(allBurns) {
		return []sloScenario{{name: name, sim: sim, checks: checks}}, nil
	}
	return nil, fmt.Errorf("%q raised an alert", name)
}

// blip: one step (15s) of failures amid healthy traffic. All of the step's calls fail unless
// that alone would spend more than half the fast page's share of the budget (objectives of
// 99.99% and above), in which case the share is lowered to that. The healthy traffic before
// the blip is long enough for every long window to dilute it, as a production history would.
func (t *sloTester) blip() (scs []sloScenario, err error) {
	s, b0 := t.s, t.s.burns[0]
	share := math.Min(1, 0.5*decimalFloat(b0.threshold)*b0.long.Seconds()/step.Seconds())
	bad := math.Max(1, math.Floor(share*t.calls))
	share = bad / t.calls
	before := t.evalsIn(b0.long + s.base())
	for _, b := range s.burns {
		before = max(before, t.evalsIn(time.Duration(1.25*share/decimalFloat(b.threshold)*float64(step))))
	}
	for try := 0; try < 6; try, before = try+1, before*2 {
		at := before*t.evalEvery() + 1 // the blip's sample, right after an evaluation
		evals := before + t.evalsIn(b0.long+s.base()) + 2
		name := fmt.Sprintf("a 15s blip of failures (%s of the calls of one scrape) after %s of healthy traffic stays silent", pct(share), FormatDuration(t.evalTime(before)))
		scs, err = t.quiet(name, evals, traffic{calls: t.calls, bad: bad, from: at - 1, to: at},
			before+1, before+t.evalsIn(s.base()), before+t.evalsIn(b0.long), evals-1)
		if err == nil {
			break
		}
	}
	return scs, err
}

// idle: the counters exist and do not move. No ratio is recorded, no alert fires.
func (t *sloTester) idle() ([]sloScenario, error) {
	evals := t.evalsIn(t.s.burns[0].long+t.s.base()) + 2
	return t.quiet("idle (no calls) stays silent", evals, traffic{}, t.evalsIn(t.s.base())+1, evals-1)
}

// lowTraffic: a dependency with half the calls the guard needs sees one of them fail. The
// ratios exceed the thresholds; the guard keeps every alert silent. Left out when the guard is
// off (min_calls 1).
func (t *sloTester) lowTraffic() ([]sloScenario, error) {
	s, b0 := t.s, t.s.burns[0]
	every := 1 // a call every `every` samples
	for _, b := range s.burns {
		if b.minCalls == 0 {
			return nil, nil
		}
		every = max(every, int(math.Ceil(2*b.long.Seconds()/(float64(b.minCalls)*step.Seconds()))))
	}
	fail := max(t.evalsIn(b0.long+s.base())*t.evalEvery()/every*every, every) // the sample of a call that fails
	evals := fail/t.evalEvery() + t.evalsIn(b0.long+s.base()) + 2
	seen := fail/t.evalEvery() + 1 // the first evaluation that sees the failure
	name := fmt.Sprintf("low traffic (a call every %s: half the guard's %d calls in %s) with one failed call stays silent",
		FormatDuration(time.Duration(every)*step), b0.minCalls, FormatDuration(b0.long))
	return t.quiet(name, evals, traffic{calls: 1, bad: 1, every: every, from: fail - 1, to: fail},
		seen, seen+t.evalsIn(s.base()), evals-1)
}

// budget: calls fail at exactly half the rate the objective allows. Every window records
// that ratio, and half of the error budget remains.
func (t *sloTester) budget() ([]sloScenario, error) {
	s, budget := t.s, t.s.budgetShare()
	at := t.evalsIn(s.burns[0].long + s.base())
	sim := t.newSim(at+1, traffic{calls: t.calls, bad: budget / 2 * t.calls, to: -1})
	sc := sloScenario{
		name: fmt.Sprintf("budget arithmetic: %s of calls failing (half the %s budget) leaves %s of the budget; every window records %s",
			pct(budget/2), pct(budget), pct(0.5), pct(budget/2)),
		sim: sim, checks: []int{at},
	}
	for _, w := range append(slices.Clone(s.windows), s.Period) {
		if r, ok := sim.ratio(at, w); !ok || math.Round(1000*r/budget) != 500 {
			return nil, fmt.Errorf("the %s error ratio is %v, not half the budget", FormatDuration(w), r)
		}
		sc.exprs = append(sc.exprs, t.expect(at, "round(1000 * "+t.r.sloSel(s, t.r.recSLOErrorRatio(w))+" / "+decimal(s.budget)+")", 500))
	}
	sc.exprs = append(sc.exprs, t.expect(at, "round(1000 * "+t.r.sloSel(s, t.r.recSLOBudgetRemaining(s))+")", 500))
	return []sloScenario{sc}, nil
}

// composition: every counter the SLI reads (and some it must not), steady (sliCases); the base
// rates count exactly the calls the SLI definition says. A second case has no failure series at
// all (they appear on the first failure): the bad-call rate is 0 and the error ratio 0, not
// absent.
func (t *sloTester) composition() ([]sloScenario, error) {
	s, c := t.s, sliCases[t.s.Source]
	at := t.evalsIn(2*s.base()) + 1
	bad, what := c.badCalls, c.what+"; calls a fallback answered stay bad"
	if s.FallbacksGood {
		bad, what = c.badCalls-sliFallbacks, c.what+"; calls a fallback answered are good"
	}
	perSecond := func(perStep float64) float64 { return math.Round(1000 * perStep / step.Seconds()) }
	exprs := func(total, bad float64) []yamlExprTest {
		return []yamlExprTest{
			t.expect(at, "round(1000 * "+t.r.sloSel(s, t.r.recSLOCalls(s))+")", perSecond(total)),
			t.expect(at, "round(1000 * "+t.r.sloSel(s, t.r.recSLOBadCalls(s))+")", perSecond(bad)),
			t.expect(at, "round(1000000 * "+t.r.sloSel(s, t.r.recSLOErrorRatio(s.base()))+")", math.Round(1e6*bad/total)),
		}
	}
	var series []yamlSeries
	for _, in := range slices.Concat(c.inputs, sliFallbackInputs) {
		series = append(series, t.series(in.m, t.steady(at, in.inc), in.label, in.value))
	}
	idle := t.newSim(at+1, traffic{})
	return []sloScenario{
		{name: "SLI: " + what, sim: idle, series: series, exprs: exprs(c.total, bad)},
		{name: "SLI before the first failure (no failure series yet): the bad-call rate and the error ratio are 0, not absent",
			sim: idle, series: []yamlSeries{t.series(c.metric, t.steady(at, c.goodOnly), catalog.LabelKind, c.good)}, exprs: exprs(c.goodOnly, 0)},
	}, nil
}

// expect is a PromQL check at evaluation k: expr has the value v on the SLO's recorded series.
func (t *sloTester) expect(k int, expr string, v float64) yamlExprTest {
	m := map[string]string{LabelSLO: t.s.ID}
	for _, l := range t.r.labels(false) {
		m[l] = t.lv[l]
	}
	return yamlExprTest{Expr: expr, EvalTime: FormatDuration(t.evalTime(k)), ExpSamples: []yamlSample{{Labels: seriesString("", m), Value: v}}}
}

// series is a test series of metric m on the tester's labels (and label=value, unless label is
// empty).
func (t *sloTester) series(m catalog.Metric, values, label, value string) yamlSeries {
	labels := maps.Clone(t.lv)
	if label != "" {
		labels[label] = value
	}
	return yamlSeries{Series: seriesString(t.r.name(m), labels), Values: values}
}

// offsetCounter renders counter values v in promtool's expanding notation.
func offsetCounter(v []float64) string {
	parts := []string{fnum(v[0])}
	for i := 1; i < len(v); {
		d, j := v[i]-v[i-1], i
		for j+1 < len(v) && v[j+1]-v[j] == d {
			j++
		}
		if j == i {
			parts = append(parts, fnum(v[i]))
		} else {
			parts = append(parts, fnum(v[i])+"+"+fnum(d)+"x"+strconv.Itoa(j-i))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// steady renders the samples of a counter growing by inc per step, up to evaluation k.
func (t *sloTester) steady(k int, inc float64) string {
	good, _ := counters(traffic{calls: inc}, t.every, k+1)
	return offsetCounter(good)
}

// render turns a scenario into a promtool test group: at every check, the alerts of the SLO
// and its peers the replay says fire.
func (t *sloTester) render(sc sloScenario) yamlTestGroup {
	g := yamlTestGroup{Name: AlertErrorBudgetBurn + " (slo " + strconv.Quote(t.s.ID) + "): " + sc.name, Interval: FormatDuration(step),
		InputSeries: sc.series, PromqlExprTests: sc.exprs}
	if sc.series == nil {
		c := sliCases[t.s.Source]
		g.InputSeries = []yamlSeries{t.series(c.metric, offsetCounter(sc.sim.good), catalog.LabelKind, c.good), t.series(c.metric, offsetCounter(sc.sim.bad), catalog.LabelKind, c.bad)}
	}
	for _, k := range sc.checks {
		if !sc.sim.certain(k) {
			continue // a peer within rounding of its threshold: the scenarios chose checks certain for their own SLO
		}
		at := yamlAlertTest{EvalTime: FormatDuration(t.evalTime(k)), Alertname: AlertErrorBudgetBurn, ExpAlerts: []yamlExpAlert{}}
		for _, sim := range append([]*sloSim{sc.sim}, sc.sim.peers...) {
			for b := range sim.s.burns {
				if st := sim.state(k, b); st.firing {
					at.ExpAlerts = append(at.ExpAlerts, t.expAlert(sim.s, sim.s.burns[b], st.value))
				}
			}
		}
		g.AlertRuleTests = append(g.AlertRuleTests, at)
	}
	return g
}

// expAlert is the alert burn rule b of SLO s (the tester's or a peer's) fires with value.
func (t *sloTester) expAlert(s *resolvedSLO, b resolvedBurn, value float64) yamlExpAlert {
	labels := map[string]string{labelSeverity: b.severity, LabelSLO: s.ID,
		LabelLongWindow: FormatDuration(b.long), LabelShortWindow: FormatDuration(b.short)}
	for _, l := range t.r.labels(false) {
		if t.lv[l] != "" {
			labels[l] = t.lv[l]
		}
	}
	maps.Copy(labels, s.Labels)
	return yamlExpAlert{
		ExpLabels: labels,
		ExpAnnotations: map[string]string{
			"summary":       burnSummary(b),
			"description":   t.r.burnDescription(s, b, func(l string) string { return t.lv[l] }, func(s string) string { return s }, humanizePercentage(value)),
			"runbook_url":   t.r.runbookURL(AlertErrorBudgetBurn),
			"dashboard_url": t.r.sloDashboardURL(t.r.grafanaBase, func(l string) string { return url.QueryEscape(t.lv[l]) }),
		},
	}
}
