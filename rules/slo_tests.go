package rules

import (
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

// This file generates the promtool tests of the SLOs. Burn-rate alerts react to the history of
// hours of traffic through error ratios summed over recorded rates, so the expected alerts —
// when they fire and the error ratio their description states — are computed by replaying the
// SLO's rules over the scenario's samples exactly as Prometheus evaluates them (rate()'s
// extrapolation, left-open ranges, Kahan sums, rules of a group reading the ones before them at
// the same timestamp). Each scenario also asserts, while it is built, what the workbook's math
// says: a fast burn pages within the time its long window needs, a slow burn opens tickets and
// never pages, a blip and idle traffic stay silent, traffic under the guard stays silent, and
// the budget arithmetic is right. A generator that broke those properties fails to generate;
// Prometheus disagreeing with the replay fails the promtool tests.

// sloTestOffset is where the scenarios' counters start: a process that has been running a
// while, so rate() never extrapolates a counter towards zero.
const sloTestOffset = 1_000_000

// sloCallsPerStep is the calls per step (15s) of the scenarios with ordinary traffic, unless
// the SLO's minimum-traffic guard needs more (sloTester.callsPerStep).
const sloCallsPerStep = 1000

// Bounds of the evaluation interval of the SLO tests. The rules' results do not depend on it
// (their long windows average recorded rates, and the burn alerts have no for), but
// promtool's work grows with the square of the evaluations a scenario spans (every evaluation
// sums every long window), so SLOs of long periods are tested at a longer interval.
const (
	// minSLOEvalInterval is Prometheus' default evaluation interval, the shortest one the SLO
	// tests use.
	minSLOEvalInterval = time.Minute
	// maxSLOEvalInterval is the longest: a third of the base window of a 90-day period.
	maxSLOEvalInterval = 5 * time.Minute
	// sloEvalsPerBase is the fewest evaluations per base window above the shortest interval:
	// every sample a base rate reads is seen by several evaluations, as in production.
	sloEvalsPerBase = 3
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

// sloSim replays one SLO's rules over a scenario of two counters sampled every step: good
// calls and bad calls (the source's successful and failed kinds). The rules are evaluated every
// sloEvalInterval, from 0; evaluation k sees the samples up to sample k·evalEvery.
type sloSim struct {
	s         *resolvedSLO
	every     time.Duration // the evaluation interval
	peers     []*sloSim     // the other SLOs reading the same counters (same dependency and source)
	good, bad []float64     // counter values by sample
	calls     []float64     // recorded base rate of all calls, by evaluation; NaN where absent
	badCalls  []float64     // recorded base rate of bad calls (present from the first evaluation)
	thr       []float64     // thresholds of the burn rules, as PromQL parses them
}

// newSLOSim builds the counters of evals evaluations, every apart, whose increments at sample
// i ≥ 1 are good(i) and bad(i), and records the base rates.
func newSLOSim(s *resolvedSLO, every time.Duration, evals int, good, bad func(i int) float64) *sloSim {
	n := (evals-1)*samplesPer(every) + 1
	g, b := make([]float64, n), make([]float64, n)
	g[0] = counterStart(n, good, bad)
	b[0] = g[0]
	for i := 1; i < n; i++ {
		g[i] = g[i-1] + good(i)
		b[i] = b[i-1] + bad(i)
	}
	return replaySLO(s, every, evals, g, b)
}

// counterStart is where counters of n samples with increments good and bad start:
// sloTestOffset, or a power of ten times it large enough that no step adds more than a
// hundredth of it. Heavy traffic (the guard of a min_calls of 10⁹ needs millions of calls per
// step) on a small start would make rate() extrapolate the good counter towards zero in the
// first evaluations and not the bad one, skewing the early error ratios of the long windows.
func counterStart(n int, good, bad func(i int) float64) float64 {
	var most float64
	for i := 1; i < n; i++ {
		most = max(most, good(i), bad(i))
	}
	start := float64(sloTestOffset)
	for start < 100*most {
		start *= 10
	}
	return start
}

// samplesPer is the number of samples (steps) per evaluation interval every.
func samplesPer(every time.Duration) int { return int(every / step) }

// replaySLO replays s's rules over the counters good and bad for evals evaluations, every
// apart.
func replaySLO(s *resolvedSLO, every time.Duration, evals int, good, bad []float64) *sloSim {
	sim := &sloSim{s: s, every: every, good: good, bad: bad, calls: make([]float64, evals), badCalls: make([]float64, evals)}
	for _, b := range s.burns {
		sim.thr = append(sim.thr, decimalFloat(b.threshold))
	}
	w := s.base()
	for k := range evals {
		rg, okG := rateAt(sim.good, k*samplesPer(every), w)
		rb, okB := rateAt(sim.bad, k*samplesPer(every), w)
		if okG && okB {
			sim.calls[k] = kahanTotal([]float64{rb, rg}) // sum orders series by labels: failed before successful
		} else {
			sim.calls[k] = math.NaN()
		}
		if okB {
			sim.badCalls[k] = math.Max(rb-0, 0) // (rate or zero) - (zero), clamped
		}
	}
	return sim
}

// evals is the number of evaluations of the scenario.
func (sim *sloSim) evals() int { return len(sim.calls) }

// firstIn is the index of the first point, of points spaced by spacing from 0, inside the
// left-open range (t−w, t].
func firstIn(t, w, spacing time.Duration) int {
	start := t - w
	if start < 0 {
		return 0
	}
	return int(start/spacing) + 1
}

// rateAt is Prometheus' rate() of a counter without resets over w at sample i.
func rateAt(v []float64, i int, w time.Duration) (float64, bool) {
	t := time.Duration(i) * step
	j := firstIn(t, w, step)
	if i-j+1 < 2 {
		return 0, false
	}
	delta := v[i] - v[j]
	durationToStart := (time.Duration(j)*step - (t - w)).Seconds()
	durationToEnd := 0.0
	sampled := (time.Duration(i-j) * step).Seconds()
	avg := sampled / float64(i-j)
	if delta > 0 && v[j] >= 0 {
		if dz := sampled * (v[j] / delta); dz < durationToStart {
			durationToStart = dz
		}
	}
	threshold := avg * 1.1
	ext := sampled
	if durationToStart < threshold {
		ext += durationToStart
	} else {
		ext += avg / 2
	}
	if durationToEnd < threshold {
		ext += durationToEnd
	} else {
		ext += avg / 2
	}
	factor := ext / sampled
	factor /= w.Seconds()
	return delta * factor, true
}

// kahanSumInc is Prometheus' compensated summation step (Neumaier's variant).
func kahanSumInc(inc, sum, c float64) (float64, float64) {
	t := sum + inc
	switch {
	case math.IsInf(t, 0):
		c = 0
	case math.Abs(sum) >= math.Abs(inc):
		c += (sum - t) + inc
	default:
		c += (inc - t) + sum
	}
	return t, c
}

// kahanTotal is sum_over_time's (and sum's) result over xs.
func kahanTotal(xs []float64) float64 {
	var sum, c float64
	for _, x := range xs {
		sum, c = kahanSumInc(x, sum, c)
	}
	if math.IsInf(sum, 0) {
		return sum
	}
	return sum + c
}

// window returns the recorded samples of series in (t−w, t] at evaluation k, skipping absent
// ones.
func (sim *sloSim) window(series []float64, k int, w time.Duration) []float64 {
	var out []float64
	for j := firstIn(time.Duration(k)*sim.every, w, sim.every); j <= k; j++ {
		if !math.IsNaN(series[j]) {
			out = append(out, series[j])
		}
	}
	return out
}

// ratio is the recorded error ratio over w at evaluation k.
func (sim *sloSim) ratio(k int, w time.Duration) (float64, bool) {
	if w == sim.s.base() {
		if math.IsNaN(sim.calls[k]) || !(sim.calls[k] > 0) {
			return 0, false
		}
		return sim.badCalls[k] / sim.calls[k], true
	}
	calls := sim.window(sim.calls, k, w)
	if len(calls) == 0 {
		return 0, false
	}
	total := kahanTotal(calls)
	if !(total > 0) {
		return 0, false
	}
	return kahanTotal(sim.window(sim.badCalls, k, w)) / total, true
}

// callsIn is the guard's estimate of the calls in the long window w at evaluation k:
// avg_over_time(calls[w]) × w.
func (sim *sloSim) callsIn(k int, w time.Duration) (float64, bool) {
	xs := sim.window(sim.calls, k, w)
	if len(xs) == 0 {
		return 0, false
	}
	sum, c := xs[0], 0.0
	for _, x := range xs[1:] {
		sum, c = kahanSumInc(x, sum, c)
	}
	n := float64(len(xs))
	return (sum/n + c/n) * float64(int64(w/time.Second)), true
}

// burnState is one burn rule's state at one evaluation.
type burnState struct {
	firing bool
	value  float64 // the short window's error ratio, the alert's $value
	// margin is the smallest relative distance of any of the rule's comparisons from its
	// threshold: near 0, float rounding could decide differently in Prometheus.
	margin float64
}

// state evaluates burn rule b at evaluation k.
func (sim *sloSim) state(k, b int) burnState {
	br := sim.s.burns[b]
	st := burnState{margin: math.Inf(1)}
	cmp := func(v, thr float64) bool {
		st.margin = min(st.margin, math.Abs(v/thr-1))
		return v > thr
	}
	rs, okS := sim.ratio(k, br.short)
	rl, okL := sim.ratio(k, br.long)
	st.firing = okS && okL
	if okS {
		st.firing = cmp(rs, sim.thr[b]) && st.firing
		st.value = rs
	}
	if okL {
		st.firing = cmp(rl, sim.thr[b]) && st.firing
	}
	if br.minCalls > 0 {
		n, ok := sim.callsIn(k, br.long)
		if ok {
			st.margin = min(st.margin, math.Abs(n/float64(br.minCalls)-1))
		}
		st.firing = st.firing && ok && n >= float64(br.minCalls)
	}
	return st
}

// states evaluates every burn rule at evaluation k.
func (sim *sloSim) states(k int) []burnState {
	out := make([]burnState, len(sim.s.burns))
	for b := range sim.s.burns {
		out[b] = sim.state(k, b)
	}
	return out
}

// certain reports whether the outcome at evaluation k, of this SLO's rules and of its peers',
// cannot depend on float rounding.
func (sim *sloSim) certain(k int) bool {
	if !sim.certainAlone(k) {
		return false
	}
	for _, p := range sim.peers {
		if !p.certainAlone(k) {
			return false
		}
	}
	return true
}

// certainAlone reports whether the outcome of this SLO's rules at evaluation k cannot depend
// on float rounding: no comparison near its threshold, and no firing alert's value near a
// rounding boundary of its four-digit description.
func (sim *sloSim) certainAlone(k int) bool {
	for _, st := range sim.states(k) {
		if st.margin < 1e-9 {
			return false
		}
		if st.firing {
			v := st.value * 100
			h := humanizePercentage(st.value)
			if h != fmt.Sprintf("%.4g%%", v*(1+1e-12)) || h != fmt.Sprintf("%.4g%%", v*(1-1e-12)) {
				return false
			}
		}
	}
	return true
}

// humanizePercentage is Prometheus' template function of that name.
func humanizePercentage(v float64) string { return fmt.Sprintf("%.4g%%", v*100) }

// anyFiring reports whether any burn rule selected by want fires at evaluation k.
func (sim *sloSim) anyFiring(k int, want func(resolvedBurn) bool) bool {
	for b, st := range sim.states(k) {
		if st.firing && want(sim.s.burns[b]) {
			return true
		}
	}
	return false
}

// silentThroughout reports whether no burn rule fires at any evaluation.
func (sim *sloSim) silentThroughout() bool {
	for k := range sim.evals() {
		if sim.anyFiring(k, allBurns) {
			return false
		}
	}
	return true
}

func allBurns(resolvedBurn) bool    { return true }
func pageBurns(b resolvedBurn) bool { return b.Page }

// settle returns an evaluation at or after k (at most 10 later, and before the end) whose
// outcome is certain, or -1. It prefers one where the peers' outcomes are certain too; failing
// that, one where this SLO's is (render leaves a check out where a peer's is not).
func (sim *sloSim) settle(k int) int {
	for _, certain := range []func(int) bool{sim.certain, sim.certainAlone} {
		for j := k; j < sim.evals() && j <= k+10; j++ {
			if certain(j) {
				return j
			}
		}
	}
	return -1
}

// settleBefore returns the last certain evaluation at or before k and after floor, or -1, with
// settle's preference.
func (sim *sloSim) settleBefore(k, floor int) int {
	for _, certain := range []func(int) bool{sim.certain, sim.certainAlone} {
		for j := k; j > floor; j-- {
			if certain(j) {
				return j
			}
		}
	}
	return -1
}

// evalsIn is d in evaluations, rounded up.
func (t *sloTester) evalsIn(d time.Duration) int { return int((d + t.every - 1) / t.every) }

// evalTime is the time of evaluation k.
func (t *sloTester) evalTime(k int) time.Duration { return time.Duration(k) * t.every }

// evalEvery is the number of samples per evaluation.
func (t *sloTester) evalEvery() int { return samplesPer(t.every) }

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
	r  *resolved
	s  *resolvedSLO
	lv map[string]string // label values of the test series (name satisfies the SLO)
	// peers are the other SLOs that select the test series' name and read the same counters
	// (same source): their alerts fire on this SLO's scenarios too, and promtool compares all
	// the alerts of a name, so every check expects theirs as well.
	peers []*resolvedSLO
	// calls is the calls per step of the scenarios with ordinary traffic: sloCallsPerStep, or
	// twice what the SLO's minimum-traffic guards need in their long windows.
	calls float64
	every time.Duration // the evaluation interval
}

// newSim replays the SLO's rules and its peers' over the same counters.
func (t *sloTester) newSim(evals int, good, bad func(i int) float64) *sloSim {
	sim := newSLOSim(t.s, t.every, evals, good, bad)
	for _, p := range t.peers {
		sim.peers = append(sim.peers, replaySLO(p, t.every, evals, sim.good, sim.bad))
	}
	return sim
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
	out := maps.Clone(lv)
	cands := []string{lv[catalog.LabelName]}
	if s.Name != "" {
		cands = []string{s.Name}
	} else if sample, ok := sampleRegexp(s.NameRegex); ok {
		cands = append([]string{sample}, cands...)
	}
	for _, c := range cands {
		if !s.name.Matches(c) {
			continue
		}
		if v, err := r.pickLabelValue(catalog.LabelName, []string{c}); err == nil && v == c {
			out[catalog.LabelName] = c
			return out, nil
		}
	}
	return nil, fieldErr(sloPath(s.index, "name"), nil, "cannot generate tests: no name the SLO selects also satisfies the selector %s", r.selectorString())
}

// kinds are the metric and kind labels of the good and bad counters of the SLO's source.
func (t *sloTester) kinds() (metric catalog.Metric, good, bad string) {
	if t.s.Source == SLOSourceBreaker {
		return catalog.BreakerCalls, catalog.CallSuccessful.String(), catalog.CallFailed.String()
	}
	return catalog.RetryCalls, catalog.RetrySuccessfulWithoutRetry.String(), catalog.RetryFailedWithRetry.String()
}

func (t *sloTester) series(m catalog.Metric, values string, extra ...string) yamlSeries {
	labels := maps.Clone(t.lv)
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	return yamlSeries{Series: seriesString(t.r.name(m), labels), Values: values}
}

// offsetCounter renders counter values v in promtool's expanding notation.
func offsetCounter(v []float64) string {
	parts := []string{fnum(v[0])}
	for i := 1; i < len(v); {
		d := v[i] - v[i-1]
		j := i
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

// steadyCounter renders n samples of a counter from sloTestOffset growing by inc per step.
func steadyCounter(n int, inc float64) string {
	v := make([]float64, n)
	v[0] = sloTestOffset
	for i := 1; i < n; i++ {
		v[i] = v[i-1] + inc
	}
	return offsetCounter(v)
}

// render turns a scenario into a promtool test group.
func (t *sloTester) render(sc sloScenario) yamlTestGroup {
	g := yamlTestGroup{Name: AlertErrorBudgetBurn + " (slo " + strconv.Quote(t.s.ID) + "): " + sc.name, Interval: FormatDuration(step),
		PromqlExprTests: sc.exprs}
	if sc.series != nil {
		g.InputSeries = sc.series
	} else {
		m, good, bad := t.kinds()
		g.InputSeries = []yamlSeries{
			t.series(m, offsetCounter(sc.sim.good), catalog.LabelKind, good),
			t.series(m, offsetCounter(sc.sim.bad), catalog.LabelKind, bad),
		}
	}
	for _, k := range sc.checks {
		if !sc.sim.certain(k) {
			// A peer's comparison within rounding of its threshold: the scenarios choose
			// their own checks where they are certain, a peer may still be undecided there.
			continue
		}
		at := yamlAlertTest{EvalTime: FormatDuration(t.evalTime(k)), Alertname: AlertErrorBudgetBurn, ExpAlerts: []yamlExpAlert{}}
		for _, sim := range append([]*sloSim{sc.sim}, sc.sim.peers...) {
			for b, st := range sim.states(k) {
				if st.firing {
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

// sloTests are the promtool test groups of every SLO.
func (r *resolved) sloTests(lv map[string]string) ([]yamlTestGroup, error) {
	var out []yamlTestGroup
	every := r.sloEvalInterval()
	for _, s := range r.slos {
		slv, err := r.sloTestLabels(lv, s)
		if err != nil {
			return nil, err
		}
		t := &sloTester{r: r, s: s, lv: slv, calls: callsPerStep(s), every: every}
		for _, o := range r.slos {
			if o != s && o.Source == s.Source && o.name.Matches(slv[catalog.LabelName]) {
				t.peers = append(t.peers, o)
			}
		}
		for _, build := range []func() ([]sloScenario, error){t.fastBurn, t.slowBurn, t.blip, t.idle, t.lowTraffic, t.budget, t.composition} {
			scs, err := build()
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

func none(int) float64 { return 0 }

// from returns an increment function that is a at samples after start and b before.
func from(start int, a, b float64) func(int) float64 {
	return func(i int) float64 {
		if i > start {
			return a
		}
		return b
	}
}

// budgetShare is 1 − objective as PromQL reads the generated literal.
func (s *resolvedSLO) budgetShare() float64 { return decimalFloat(decimal(s.budget)) }

// fastBurn: after a long window of healthy traffic, calls start failing at 50 times the rate
// the objective allows (all of them, for objectives below 98%). The fast page must fire within
// the time its long window needs to reach the threshold, plus a base window of smoothing and
// an evaluation.
func (t *sloTester) fastBurn() ([]sloScenario, error) {
	s := t.s
	b0 := s.burns[0]
	budget := s.budgetShare()
	bad := math.Max(1, math.Round(math.Min(1, 50*budget)*t.calls))
	share := bad / t.calls
	warmEvals := t.evalsIn(b0.long + s.base())
	warm := warmEvals * t.evalEvery() // the last healthy sample
	evals := warmEvals + 2*t.evalsIn(b0.long) + t.evalsIn(s.base())
	sim := t.newSim(evals, from(warm, t.calls-bad, t.calls), from(warm, bad, 0))
	first := -1
	for k := warmEvals; k < evals; k++ {
		if sim.state(k, 0).firing {
			first = k
			break
		}
	}
	if first < 0 {
		return nil, fmt.Errorf("a %s burn never paged", pct(share))
	}
	windowMath := time.Duration(decimalFloat(b0.threshold) / share * float64(b0.long))
	took := t.evalTime(first - warmEvals)
	if took > windowMath+s.base()+t.every {
		return nil, fmt.Errorf("a %s burn paged after %s, later than the window math allows (%s + a %s base window)",
			pct(share), FormatDuration(took), FormatDuration(windowMath.Round(time.Second)), FormatDuration(s.base()))
	}
	fire, quiet := sim.settle(first), sim.settleBefore(first-1, warmEvals)
	if fire < 0 || quiet < 0 {
		return nil, fmt.Errorf("no certain evaluation around the fast page at %s", FormatDuration(t.evalTime(first)))
	}
	return []sloScenario{{
		name: fmt.Sprintf("a fast burn (%s× the budget: %s of calls failing after %s of healthy traffic) pages %s later; the %s window reaches %s× after about %s",
			num(share/budget), pct(share), FormatDuration(t.evalTime(warmEvals)), FormatDuration(took),
			FormatDuration(b0.long), num(b0.Factor), FormatDuration(windowMath.Round(time.Second))),
		sim:    sim,
		checks: []int{quiet, fire},
	}}, nil
}

// slowBurnFactor is the burn rate of the slow-burn scenario: above the tickets' 3×, below the
// pages' 6×.
const slowBurnFactor = 4.5

// slowBurn: calls fail at 4.5 times the allowed rate. The tickets fire; the pages never do.
func (t *sloTester) slowBurn() ([]sloScenario, error) {
	s := t.s
	budget := s.budgetShare()
	bad := slowBurnFactor * budget * t.calls
	warmEvals := t.evalsIn(s.burns[0].long + s.base())
	warm := warmEvals * t.evalEvery()
	limit := warmEvals + 4*t.evalsIn(s.burns[3].short) + 4*warmEvals
	sim := t.newSim(limit, from(warm, t.calls-bad, t.calls), from(warm, bad, 0))
	firstTicket, allTickets := -1, -1
	for k := warmEvals; k < limit && allTickets < 0; k++ {
		both := true
		for b, x := range sim.states(k) {
			switch {
			case x.firing && s.burns[b].Page:
				return nil, fmt.Errorf("a %s× burn paged (%s over %s) at %s",
					num(slowBurnFactor), FormatDuration(s.burns[b].long), FormatDuration(s.burns[b].short), FormatDuration(t.evalTime(k)))
			case !s.burns[b].Page && !x.firing:
				both = false
			case !s.burns[b].Page && firstTicket < 0:
				firstTicket = k
			}
		}
		if both {
			allTickets = k
		}
	}
	if firstTicket < 0 || allTickets < 0 {
		return nil, fmt.Errorf("a %s× burn did not open both tickets", num(slowBurnFactor))
	}
	end := sim.settle(allTickets)
	fire, quiet := sim.settle(firstTicket), sim.settleBefore(firstTicket-1, warmEvals)
	if end < 0 || fire < 0 || quiet < 0 {
		return nil, fmt.Errorf("no certain evaluation around the tickets")
	}
	// The scenario ends at its last check.
	sim = t.newSim(end+1, from(warm, t.calls-bad, t.calls), from(warm, bad, 0))
	for k := range sim.evals() {
		if sim.anyFiring(k, pageBurns) {
			return nil, fmt.Errorf("a %s× burn paged", num(slowBurnFactor))
		}
	}
	return []sloScenario{{
		name: fmt.Sprintf("a slow burn (%s× the budget: %s of calls failing after %s of healthy traffic) opens a ticket after %s, both after %s, and never pages",
			num(slowBurnFactor), pct(slowBurnFactor*budget), FormatDuration(t.evalTime(warmEvals)),
			FormatDuration(t.evalTime(firstTicket-warmEvals)), FormatDuration(t.evalTime(allTickets-warmEvals))),
		sim:    sim,
		checks: []int{quiet, fire, end},
	}}, nil
}

// blip: one step (15s) of failures amid healthy traffic. All of the step's calls fail unless
// that alone would spend more than half the fast page's share of the budget (objectives of
// 99.99% and above), in which case the share is lowered to that. The healthy traffic before
// the blip is long enough for every long window to dilute it, as a production history would.
func (t *sloTester) blip() ([]sloScenario, error) {
	s := t.s
	b0 := s.burns[0]
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
		sim := t.newSim(evals,
			func(i int) float64 { return t.calls - onlyIf(i == at, bad) },
			func(i int) float64 { return onlyIf(i == at, bad) })
		if !sim.silentThroughout() {
			continue
		}
		return []sloScenario{{
			name: fmt.Sprintf("a 15s blip of failures (%s of the calls of one scrape) after %s of healthy traffic stays silent",
				pct(share), FormatDuration(t.evalTime(before))),
			sim:    sim,
			checks: []int{before + 1, before + t.evalsIn(s.base()), before + t.evalsIn(b0.long), evals - 1},
		}}, nil
	}
	return nil, fmt.Errorf("a 15s blip of %s failures raised an alert after any history", pct(share))
}

// onlyIf is v if cond, else 0.
func onlyIf(cond bool, v float64) float64 {
	if cond {
		return v
	}
	return 0
}

// idle: the counters exist and do not move. No ratio is recorded, no alert fires.
func (t *sloTester) idle() ([]sloScenario, error) {
	s := t.s
	evals := t.evalsIn(s.burns[0].long+s.base()) + 2
	sim := t.newSim(evals, none, none)
	if !sim.silentThroughout() {
		return nil, fmt.Errorf("idle traffic raised an alert")
	}
	return []sloScenario{{
		name:   "idle (no calls) stays silent",
		sim:    sim,
		checks: []int{t.evalsIn(s.base()) + 1, evals - 1},
	}}, nil
}

// lowTraffic: a dependency with half the calls the guard needs sees one of them fail. The
// ratios exceed the thresholds; the guard keeps every alert silent. Left out when the guard is
// off (min_calls 1).
func (t *sloTester) lowTraffic() ([]sloScenario, error) {
	s := t.s
	every := 1 // a call every `every` samples
	for _, b := range s.burns {
		if b.minCalls == 0 {
			return nil, nil
		}
		every = max(every, int(math.Ceil(2*b.long.Seconds()/(float64(b.minCalls)*step.Seconds()))))
	}
	b0 := s.burns[0]
	failEval := t.evalsIn(b0.long + s.base())
	fail := max(failEval*t.evalEvery()/every*every, every) // the sample of a call that fails
	evals := fail/t.evalEvery() + t.evalsIn(b0.long+s.base()) + 2
	sim := t.newSim(evals,
		func(i int) float64 { return onlyIf(i%every == 0 && i != fail, 1) },
		func(i int) float64 { return onlyIf(i == fail, 1) })
	if !sim.silentThroughout() {
		return nil, fmt.Errorf("one failed call among a call every %s raised an alert", FormatDuration(time.Duration(every)*step))
	}
	failEval = fail/t.evalEvery() + 1 // the first evaluation that sees the failure
	return []sloScenario{{
		name: fmt.Sprintf("low traffic (a call every %s: half the guard's %d calls in %s) with one failed call stays silent",
			FormatDuration(time.Duration(every)*step), b0.minCalls, FormatDuration(b0.long)),
		sim:    sim,
		checks: []int{failEval, failEval + t.evalsIn(s.base()), evals - 1},
	}}, nil
}

// budget: calls fail at exactly half the rate the objective allows. Every window records
// that ratio, and half of the error budget remains.
func (t *sloTester) budget() ([]sloScenario, error) {
	s := t.s
	budget := s.budgetShare()
	bad := budget / 2 * t.calls
	at := t.evalsIn(s.burns[0].long + s.base())
	sim := t.newSim(at+1, func(int) float64 { return t.calls - bad }, func(int) float64 { return bad })
	labels := t.aggLabels()
	sc := sloScenario{
		name: fmt.Sprintf("budget arithmetic: %s of calls failing (half the %s budget) leaves %s of the budget; every window records %s",
			pct(budget/2), pct(budget), pct(0.5), pct(budget/2)),
		sim:    sim,
		checks: []int{at},
	}
	expect := func(expr string, v float64) {
		sc.exprs = append(sc.exprs, yamlExprTest{Expr: expr, EvalTime: FormatDuration(t.evalTime(at)), ExpSamples: []yamlSample{{Labels: labels, Value: v}}})
	}
	for _, w := range append(slices.Clone(s.windows), s.Period) {
		r, ok := sim.ratio(at, w)
		if !ok || math.Round(1000*r/budget) != 500 {
			return nil, fmt.Errorf("the %s error ratio is %v, not half the budget", FormatDuration(w), r)
		}
		expect("round(1000 * "+t.r.sloSel(s, t.r.recSLOErrorRatio(w))+" / "+decimal(s.budget)+")", 500)
	}
	expect("round(1000 * "+t.r.sloSel(s, t.r.recSLOBudgetRemaining(s))+")", 500)
	return []sloScenario{sc}, nil
}

// aggLabels renders the label set of the SLO's recorded series in the test.
func (t *sloTester) aggLabels() string {
	m := map[string]string{LabelSLO: t.s.ID}
	for _, l := range t.r.labels(false) {
		m[l] = t.lv[l]
	}
	return seriesString("", m)
}

// composition: every counter the SLI reads (and some it must not), steady; the base rates
// count exactly the calls the SLI definition says. A second case has no failure series at all
// (they appear on the first failure): the bad-call rate is 0 and the error ratio 0, not absent.
func (t *sloTester) composition() ([]sloScenario, error) {
	s := t.s
	at := t.evalsIn(2*s.base()) + 1
	n := at*t.evalEvery() + 1
	type in struct {
		m     catalog.Metric
		inc   float64
		extra []string
	}
	var ins []in
	var total, bad, goodOnly float64
	const fallbacks = 70.0
	switch s.Source {
	case SLOSourceBreaker:
		ins = []in{
			{catalog.BreakerCalls, 600, []string{catalog.LabelKind, catalog.CallSuccessful.String()}},
			{catalog.BreakerCalls, 50, []string{catalog.LabelKind, catalog.CallSlowSuccessful.String()}},
			{catalog.BreakerCalls, 100, []string{catalog.LabelKind, catalog.CallFailed.String()}},
			{catalog.BreakerCalls, 50, []string{catalog.LabelKind, catalog.CallSlowFailed.String()}},
			{catalog.BreakerCalls, 40, []string{catalog.LabelKind, catalog.CallIgnored.String()}},
			{catalog.BreakerNotPermitted, 60, nil},
			{catalog.BulkheadCalls, 900, []string{catalog.LabelKind, catalog.AdmissionPermitted.String()}},
			{catalog.BulkheadCalls, 30, []string{catalog.LabelKind, catalog.AdmissionRejected.String()}},
		}
		// Good: successful and slow_successful; bad: failed, slow_failed, and the rejections of
		// the breaker and of the bulkhead; ignored (business errors, cancellations): neither.
		total, bad, goodOnly = 600+50+100+50+60+30, 100+50+60+30, 600
	default:
		ins = []in{
			{catalog.RetryCalls, 600, []string{catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()}},
			{catalog.RetryCalls, 100, []string{catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()}},
			{catalog.RetryCalls, 150, []string{catalog.LabelKind, catalog.RetryFailedWithoutRetry.String()}},
			{catalog.RetryCalls, 100, []string{catalog.LabelKind, catalog.RetryFailedWithRetry.String()}},
			{catalog.RetryCalls, 50, []string{catalog.LabelKind, catalog.RetryAborted.String()}},
			{catalog.RetryErrors, 50, []string{catalog.LabelClass, catalog.ClassHTTP4xx.String()}},
			{catalog.RetryErrors, 120, []string{catalog.LabelClass, catalog.ClassHTTP5xx.String()}},
			{catalog.RetryErrors, 30, []string{catalog.LabelClass, catalog.ClassRejected.String()}},
		}
		// Good: successful with or without retry, and failed calls that ended on a 4xx answer;
		// bad: the other failed calls; aborted: neither.
		total, bad, goodOnly = 600+100+150+100, 150+100-50, 600
	}
	ins = append(ins,
		in{catalog.FallbackCalls, 30, []string{catalog.LabelCause, catalog.CauseCircuitOpen.String()}},
		in{catalog.FallbackCalls, 40, []string{catalog.LabelCause, catalog.CauseRetriesExhausted.String()}})
	if s.FallbacksGood {
		bad -= fallbacks
	}
	labels := t.aggLabels()
	evalAt := FormatDuration(t.evalTime(at))
	perSecond := func(perStep float64) float64 { return math.Round(1000 * perStep / step.Seconds()) }
	exprs := func(total, bad float64) []yamlExprTest {
		return []yamlExprTest{
			{Expr: "round(1000 * " + t.r.sloSel(s, t.r.recSLOCalls(s)) + ")", EvalTime: evalAt, ExpSamples: []yamlSample{{Labels: labels, Value: perSecond(total)}}},
			{Expr: "round(1000 * " + t.r.sloSel(s, t.r.recSLOBadCalls(s)) + ")", EvalTime: evalAt, ExpSamples: []yamlSample{{Labels: labels, Value: perSecond(bad)}}},
			{Expr: "round(1000000 * " + t.r.sloSel(s, t.r.recSLOErrorRatio(s.base())) + ")", EvalTime: evalAt, ExpSamples: []yamlSample{{Labels: labels, Value: math.Round(1e6 * bad / total)}}},
		}
	}
	var series []yamlSeries
	for _, x := range ins {
		series = append(series, t.series(x.m, steadyCounter(n, x.inc), x.extra...))
	}
	idle := t.newSim(at+1, none, none)
	what := "successful calls (with or without retry) and calls that failed on a 4xx answer are good; other failed calls (the breaker's and the bulkhead's rejections and deadlines included) are bad; aborted calls are neither"
	if s.Source == SLOSourceBreaker {
		what = "successful and slow successful calls are good; failed and slow failed calls and the breaker's and the bulkhead's rejections are bad; ignored calls are neither"
	}
	if s.FallbacksGood {
		what += "; calls a fallback answered are good"
	} else {
		what += "; calls a fallback answered stay bad"
	}
	m, good, _ := t.kinds()
	return []sloScenario{
		{name: "SLI: " + what, sim: idle, series: series, exprs: exprs(total, bad)},
		{name: "SLI before the first failure (no failure series yet): the bad-call rate and the error ratio are 0, not absent",
			sim: idle, series: []yamlSeries{t.series(m, steadyCounter(n, goodOnly), catalog.LabelKind, good)}, exprs: exprs(goodOnly, 0)},
	}, nil
}
