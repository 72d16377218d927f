package rules

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

const (
	// step is the scrape and evaluation interval of the generated tests.
	step = 15 * time.Second
	// t0 is when the interesting part of most scenarios begins.
	t0 = time.Minute
	// forever is an end time beyond any scenario.
	forever = 1000 * time.Hour
	// perStep is the number of calls per step in the traffic scenarios; large enough that
	// ratios are exact in thousandths.
	perStep = 1000
)

// GenerateTests renders promtool unit tests (`promtool test rules`) for the rules of cfg.
// ruleFile is the rule file path written into rule_files, relative to the test file; it must
// be a plain Prometheus rule file (GeneratePrometheus).
//
// For every enabled alert there is a test case where it fires at the expected evaluation
// time (with its description, measured value and trip cause), one where a 15-second blip does
// not fire it, one where idle traffic does not fire it and one where it resolves after
// recovery; and, where they apply, the cases an on-call engineer worries about: a failed scrape
// (which marks every series of the target stale) does not delay it, a process restart mid-incident
// (counters reset, scrapes missed) does not resolve it, a target that disappears resolves it,
// single events at low traffic do not page, and the fleet-wide alert stays silent on a
// single-instance job, on one stuck instance of two and on idle breakers. A further group checks
// the values of the recording rules. The scenarios follow the configured thresholds and
// durations, so a configuration whose for is shorter than its rate window fails the blip test
// — on purpose: such a configuration pages on blips. Cases of alerts that share no series run
// side by side in one test group (pack.go).
func GenerateTests(cfg Config, ruleFile string) ([]byte, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if ruleFile == "" {
		return nil, fieldErr("rule_file", ruleFile, "empty")
	}
	return r.renderTests(ruleFile)
}

// renderTests renders the promtool tests of the resolved configuration.
func (r *resolved) renderTests(ruleFile string) ([]byte, error) {
	return r.renderTestFile(ruleFile, true)
}

// renderTestFile renders the promtool tests, the cases packed side by side or each in a test
// group of its own (where one alert's cases run alone: the mutation tests).
func (r *resolved) renderTestFile(ruleFile string, packed bool) ([]byte, error) {
	lv, err := r.testLabels()
	if err != nil {
		return nil, err
	}
	file := yamlTestFile{RuleFiles: []string{ruleFile}, EvaluationInterval: FormatDuration(step)}
	for _, g := range r.groups() {
		file.GroupEvalOrder = append(file.GroupEvalOrder, g.Name)
	}
	file.Tests = append(file.Tests, r.recordingTest(lv).render(&scenario{r: r, lv: lv}))
	var all []caseGroup
	for _, sp := range specs {
		if s := r.alerts[sp.name]; s.enabled {
			c := &scenario{r: r, sp: sp, s: s, lv: lv}
			cases, err := scenarios[sp.name](c)
			if err != nil {
				return nil, err
			}
			if packed {
				cases = c.quietTogether(cases)
			}
			for _, tc := range cases {
				all = append(all, caseGroup{alert: sp.name, end: lastCheck(tc.checks), g: tc.render(c)})
			}
		}
	}
	if !packed {
		for _, cg := range all {
			file.Tests = append(file.Tests, cg.g)
		}
		return marshal(file)
	}
	file.Tests = append(file.Tests, pack(all, r.seriesUse(all))...)
	return marshal(file)
}

// --- promtool test file shape ---

type yamlTestFile struct {
	RuleFiles          []string        `yaml:"rule_files"`
	EvaluationInterval string          `yaml:"evaluation_interval"`
	GroupEvalOrder     []string        `yaml:"group_eval_order"`
	Tests              []yamlTestGroup `yaml:"tests"`
}

type yamlTestGroup struct {
	Name            string          `yaml:"name"`
	Interval        string          `yaml:"interval"`
	InputSeries     []yamlSeries    `yaml:"input_series"`
	AlertRuleTests  []yamlAlertTest `yaml:"alert_rule_test,omitempty"`
	PromqlExprTests []yamlExprTest  `yaml:"promql_expr_test,omitempty"`
}

type yamlSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type yamlAlertTest struct {
	EvalTime  string         `yaml:"eval_time"`
	Alertname string         `yaml:"alertname"`
	ExpAlerts []yamlExpAlert `yaml:"exp_alerts"`
}

type yamlExpAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

type yamlExprTest struct {
	Expr       string       `yaml:"expr"`
	EvalTime   string       `yaml:"eval_time"`
	ExpSamples []yamlSample `yaml:"exp_samples"`
}

type yamlSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// --- input series ---

// sampleKind says what a scrape left in the TSDB at one step: a value, a stale marker
// (Prometheus marks every series of a target stale when a scrape fails, and a series stale
// when a scrape no longer contains it) or nothing (further failed scrapes, a series not exported).
type sampleKind uint8

const (
	sampled sampleKind = iota
	staleMarker
	noSample
)

// track is one input series of a test case, one entry per step from 0 to its end.
type track struct {
	metric  catalog.Metric
	labels  map[string]string
	counter bool
	// vals are a gauge's values, or a counter's increments at each step (vals[0] is ignored:
	// counters start at 0). Increments at steps without a sample still count.
	vals  []float64
	kinds []sampleKind
	// resets are the steps at which a counter restarts from 0 (a process restart), before
	// that step's increment.
	resets map[int]bool
}

func idx(t time.Duration) int { return int(t / step) }

// newTrack samples f at every step from 0 to end: a gauge's values, or a counter's increments
// (from 0, growing by f(t) at each step t > 0). extra are further label pairs.
func newTrack(lv map[string]string, m catalog.Metric, end time.Duration, counter bool, f func(time.Duration) float64, extra ...string) *track {
	labels := maps.Clone(lv)
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	n := idx(end) + 1
	tr := &track{metric: m, labels: labels, counter: counter, vals: make([]float64, n), kinds: make([]sampleKind, n), resets: map[int]bool{}}
	for i := range tr.vals {
		if !counter || i > 0 {
			tr.vals[i] = f(time.Duration(i) * step)
		}
	}
	return tr
}

// gauge and counter are the scenario's own target's series.
func (c *scenario) gauge(m catalog.Metric, end time.Duration, v func(time.Duration) float64, extra ...string) *track {
	return newTrack(c.lv, m, end, false, v, extra...)
}

func (c *scenario) counter(m catalog.Metric, end time.Duration, inc func(time.Duration) float64, extra ...string) *track {
	return newTrack(c.lv, m, end, true, inc, extra...)
}

// values returns the samples as stored (a counter's running sum).
func (tr *track) values() []float64 {
	out := make([]float64, len(tr.vals))
	cum := 0.0
	for i, v := range tr.vals {
		if tr.counter {
			if tr.resets[i] {
				cum = 0
			}
			if i > 0 {
				cum += v
			}
			v = cum
		}
		out[i] = v
	}
	return out
}

// render writes the track in promtool's expanding notation.
func (tr *track) render() string {
	vals := tr.values()
	var parts []string
	n := len(vals)
	for i := 0; i < n; {
		j := i
		switch x := vals[i]; {
		case tr.kinds[i] == noSample:
			for j+1 < n && tr.kinds[j+1] == noSample {
				j++
			}
			parts = append(parts, "_x"+strconv.Itoa(j-i+1))
		case tr.kinds[i] == staleMarker:
			parts = append(parts, "stale")
		case math.IsNaN(x): // promtool has no expanding notation for NaN
			parts = append(parts, "NaN")
		default:
			d := 0.0
			if tr.counter && i+1 < n && tr.kinds[i+1] == sampled && !tr.resets[i+1] {
				d = tr.vals[i+1]
			}
			for j+1 < n && tr.kinds[j+1] == sampled && !tr.resets[j+1] && !math.IsNaN(vals[j+1]) &&
				((tr.counter && tr.vals[j+1] == d) || (!tr.counter && vals[j+1] == x)) {
				j++
			}
			switch {
			case j == i:
				parts = append(parts, fnum(x))
			case d == 0:
				parts = append(parts, fnum(x)+"x"+strconv.Itoa(j-i))
			default:
				parts = append(parts, fnum(x)+"+"+fnum(d)+"x"+strconv.Itoa(j-i))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// failScrape marks the samples of tracks at t stale, as a failed scrape does.
func failScrape(t time.Duration, tracks ...*track) {
	for _, tr := range tracks {
		if i := idx(t); i < len(tr.kinds) && tr.kinds[i] == sampled {
			tr.kinds[i] = staleMarker
		}
	}
}

// miss makes the scrapes of tracks from t for span fail: stale markers, then nothing.
func miss(t, span time.Duration, tracks ...*track) {
	for _, tr := range tracks {
		for i := idx(t); i < len(tr.kinds) && i < idx(t+span); i++ {
			if i == idx(t) && tr.kinds[i] == sampled && (i == 0 || tr.kinds[i-1] == sampled) {
				tr.kinds[i] = staleMarker
			} else {
				tr.kinds[i] = noSample
			}
		}
	}
}

// disappear removes the target of tracks from t on.
func disappear(t time.Duration, tracks ...*track) { miss(t, forever, tracks...) }

// restart models a process restart right after the scrape before t: the scrapes from t for
// gap fail, the counters start again from 0 (the calls of the gap counted by the new process),
// the gauges read what their functions say for the new process.
func restart(t, gap time.Duration, tracks ...*track) {
	miss(t, gap, tracks...)
	for _, tr := range tracks {
		if tr.counter {
			tr.resets[idx(t)] = true
		}
	}
}

// --- a little of PromQL over the tracks, for the values the descriptions show ---

// points returns the samples of tr in (at-window, at].
func (tr *track) points(at, window time.Duration) (ts []time.Duration, vs []float64) {
	for i, v := range tr.values() {
		if t := time.Duration(i) * step; t > at-window && t <= at && tr.kinds[i] == sampled {
			ts, vs = append(ts, t), append(vs, v)
		}
	}
	return ts, vs
}

// increase is Prometheus's increase() of a counter track over window at time at (its
// extrapolation included); false when the window holds fewer than two samples.
func (tr *track) increase(at, window time.Duration) (float64, bool) {
	ts, vs := tr.points(at, window)
	if len(ts) < 2 {
		return 0, false
	}
	result := vs[len(vs)-1] - vs[0]
	for i := 1; i < len(vs); i++ {
		if vs[i] < vs[i-1] {
			result += vs[i-1]
		}
	}
	sampledInterval := (ts[len(ts)-1] - ts[0]).Seconds()
	avg := sampledInterval / float64(len(ts)-1)
	toStart, toEnd := (ts[0] - (at - window)).Seconds(), (at - ts[len(ts)-1]).Seconds()
	if toStart >= avg*1.1 {
		toStart = avg / 2
	}
	if result > 0 && vs[0] >= 0 {
		toStart = min(toStart, sampledInterval*(vs[0]/result))
	}
	if toEnd >= avg*1.1 {
		toEnd = avg / 2
	}
	return result * (sampledInterval + toStart + toEnd) / sampledInterval, true
}

// last and avg are last_over_time and avg_over_time of tr[window] at time at.
func (tr *track) last(at, window time.Duration) (float64, bool) {
	_, vs := tr.points(at, window)
	if len(vs) == 0 {
		return 0, false
	}
	return vs[len(vs)-1], true
}

func (tr *track) avg(at, window time.Duration) (float64, bool) {
	_, vs := tr.points(at, window)
	var sum float64
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs)), len(vs) > 0
}

// selectTracks returns the tracks of metric m whose labels include the pairs of match.
func selectTracks(tracks []*track, m catalog.Metric, match ...string) []*track {
	var out []*track
next:
	for _, tr := range tracks {
		if tr.metric.FullName("") != m.FullName("") {
			continue
		}
		for i := 0; i+1 < len(match); i += 2 {
			if tr.labels[match[i]] != match[i+1] {
				continue next
			}
		}
		out = append(out, tr)
	}
	return out
}

// aggregate folds fn over the selected tracks at time at: max of last_over_time or
// avg_over_time, sum of increase.
func aggregate(tracks []*track, at, window time.Duration, m catalog.Metric, fn func(*track, time.Duration, time.Duration) (float64, bool), sum bool, match ...string) float64 {
	out := math.Inf(-1)
	if sum {
		out = 0
	}
	for _, tr := range selectTracks(tracks, m, match...) {
		if v, ok := fn(tr, at, window); ok && sum {
			out += v
		} else if ok && v > out {
			out = v
		}
	}
	return out
}

func maxAvg(tracks []*track, at, window time.Duration, m catalog.Metric, match ...string) float64 {
	return aggregate(tracks, at, window, m, (*track).avg, false, match...)
}

func maxLast(tracks []*track, at, window time.Duration, m catalog.Metric, match ...string) float64 {
	return aggregate(tracks, at, window, m, (*track).last, false, match...)
}

func sumIncrease(tracks []*track, at, window time.Duration, m catalog.Metric, match ...string) float64 {
	return aggregate(tracks, at, window, m, (*track).increase, true, match...)
}

func sumRate(tracks []*track, at, window time.Duration, m catalog.Metric, match ...string) float64 {
	return sumIncrease(tracks, at, window, m, match...) / window.Seconds()
}

// --- test cases ---

// testCase is one case of an alert (promtool test group).
type testCase struct {
	name   string
	tracks []*track
	checks []check
	exprs  []yamlExprTest
}

// check says whether the alert is firing at an evaluation time, and how.
type check struct {
	at     time.Duration
	firing bool
	// lv are the labels of the target the alert is about (nil: the scenario's); labels are
	// further labels the alert carries (the trip cause of StuckOpen).
	lv, labels map[string]string
	// value is the alert's value when the scenario knows it; otherwise scenario.value computes
	// it from the tracks.
	value    float64
	hasValue bool
	// causes is what the description says about the trip cause(s).
	causes string
}

func (tc testCase) render(c *scenario) yamlTestGroup {
	g := yamlTestGroup{Name: tc.name, Interval: FormatDuration(step), PromqlExprTests: tc.exprs}
	for _, tr := range tc.tracks {
		g.InputSeries = append(g.InputSeries, yamlSeries{Series: seriesString(c.r.name(tr.metric), tr.labels), Values: tr.render()})
	}
	for _, ck := range tc.checks {
		at := yamlAlertTest{EvalTime: FormatDuration(ck.at), Alertname: c.sp.name, ExpAlerts: []yamlExpAlert{}}
		if ck.firing {
			at.ExpAlerts = append(at.ExpAlerts, c.expectAlert(tc, ck))
		}
		g.AlertRuleTests = append(g.AlertRuleTests, at)
	}
	return g
}

// expectAlert is the alert a firing check expects: labels and expanded annotations.
func (c *scenario) expectAlert(tc testCase, ck check) yamlExpAlert {
	lv := orLabels(ck.lv, c.lv)
	labels := map[string]string{"severity": c.s.severity}
	for _, l := range c.r.labels(c.sp.perInstance) {
		if lv[l] != "" {
			labels[l] = lv[l]
		}
	}
	maps.Copy(labels, ck.labels)
	v := ck.value
	if !ck.hasValue {
		v = c.value(tc.tracks, ck.at)
	}
	causes := ck.causes
	if causes == "" {
		causes = c.sp.causesElse
	}
	args := descArgs{ref: func(l string) string { return lv[l] }, value: c.sp.value.text(v), causes: causes}
	return yamlExpAlert{ExpLabels: labels, ExpAnnotations: c.r.annotations(c.sp, c.s, args,
		func(s string) string { return s }, func(l string) string { return url.QueryEscape(lv[l]) })}
}

func orLabels(m, def map[string]string) map[string]string {
	if m == nil {
		return def
	}
	return m
}

// quietTogether runs the cases in which the alert never fires side by side in one case, each
// on a dependency name of its own (where the selector allows one): each adds its checks at the
// others' times, and together they cost one sweep.
func (c *scenario) quietTogether(cases []testCase) []testCase {
	var out []testCase
	merged, names := -1, map[string]bool{c.lv[catalog.LabelName]: true}
	for _, tc := range cases {
		silent := len(tc.exprs) == 0
		for _, ck := range tc.checks {
			silent = silent && !ck.firing
		}
		if !silent || merged < 0 {
			if silent {
				merged = len(out)
			}
			out = append(out, tc)
			continue
		}
		name, err := c.r.pickLabelValue(catalog.LabelName, []string{c.lv[catalog.LabelName] + "-" + strconv.Itoa(len(names))})
		if err != nil || names[name] {
			out = append(out, tc)
			continue
		}
		names[name] = true
		for _, tr := range tc.tracks {
			tr.labels[catalog.LabelName] = name
		}
		m := &out[merged]
		m.name, m.tracks, m.checks = m.name+caseSeparator+tc.name, slices.Concat(m.tracks, tc.tracks), slices.Concat(m.checks, tc.checks)
	}
	return out
}

// scenario carries what a scenario builder needs.
type scenario struct {
	r  *resolved
	sp alertSpec
	s  settings
	lv map[string]string
}

// name prefixes a test case's name with the alert name.
func (c *scenario) name(format string, args ...any) string {
	return c.sp.name + ": " + fmt.Sprintf(format, args...)
}

// tc is a case whose tracks, built by build, end a minute after its last check.
func (c *scenario) tc(name string, checks []check, build func(end time.Duration) []*track) testCase {
	return testCase{name: c.sp.name + ": " + name, tracks: build(lastCheck(checks) + time.Minute), checks: checks}
}

// forDur is the alert's for as the evaluations see it: an alert fires at the first evaluation at
// least for after it became pending, so a for that is not a whole number of steps counts as the
// next whole number.
func (c *scenario) forDur() time.Duration { return ceilStep(c.s.forDur) }
func (c *scenario) keep() time.Duration   { return c.s.keep }

// fires returns the checks of a firing scenario whose condition can become true no earlier
// than condStart and is surely true from condSure on: not firing one step before
// condStart+for, firing at condSure+for.
func (c *scenario) fires(condStart, condSure time.Duration) []check {
	var out []check
	if before := condStart + c.forDur() - step; before >= 0 {
		out = append(out, check{at: before})
	}
	return append(out, check{at: condSure + c.forDur(), firing: true})
}

// resolves returns the checks of a recovery at recover whose condition is surely false from
// clearBy on: firing one step before recover, resolved after clearBy+keep_firing_for.
func (c *scenario) resolves(recover, clearBy time.Duration) []check {
	return []check{{at: recover - step, firing: true}, {at: ceilStep(clearBy+c.keep()) + step}}
}

// firingAt and silent return firing and not-firing checks at the given times.
func firingAt(ats ...time.Duration) []check {
	out := silent(ats...)
	for i := range out {
		out[i].firing = true
	}
	return out
}

func silent(ats ...time.Duration) []check {
	out := make([]check, len(ats))
	for i, a := range ats {
		out[i] = check{at: a}
	}
	return out
}

// withCauses sets the expected trip-cause text (and extra labels) of every firing check.
func withCauses(cs []check, causes string, labels map[string]string) []check {
	for i := range cs {
		if cs[i].firing {
			cs[i].causes, cs[i].labels = causes, labels
		}
	}
	return cs
}

func lastCheck(cs []check) time.Duration {
	var m time.Duration
	for _, c := range cs {
		m = max(m, c.at)
	}
	return m
}

func sortChecks(cs []check) []check {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].at < cs[j].at })
	return cs
}

func ceilStep(d time.Duration) time.Duration { return (d + step - 1) / step * step }

// afterStep returns the first step strictly after d.
func afterStep(d time.Duration) time.Duration { return d/step*step + step }

func fnum(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// when is a function of time that is a inside [from, to) and b outside it.
func when(from, to time.Duration, a, b float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t >= from && t < to {
			return a
		}
		return b
	}
}

// every is a function of time that is a at every period from start on and b otherwise.
func every(start, period time.Duration, a, b float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t >= start && (t-start)%period == 0 {
			return a
		}
		return b
	}
}

func zero(time.Duration) float64 { return 0 }

// shareAbove returns a count of perStep that is strictly above ratio*perStep (ratio < 1) and
// about halfway to all of them.
func shareAbove(ratio float64) float64 {
	n := math.Round((ratio + (1-ratio)/2) * perStep)
	if n <= ratio*perStep {
		n = math.Floor(ratio*perStep) + 1
	}
	return min(n, perStep)
}
