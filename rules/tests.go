package rules

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
)

// step is the scrape and evaluation interval of the generated tests.
const step = 15 * time.Second

// t0 is when the interesting part of most scenarios begins.
const t0 = time.Minute

// GenerateTests renders promtool unit tests (`promtool test rules`) for the rules of cfg.
// ruleFile is the rule file path written into rule_files, relative to the test file; it must
// be a plain Prometheus rule file (GeneratePrometheus).
//
// For every enabled alert there is a test group where it fires at the expected evaluation
// time, one where a 15-second blip does not fire it, one where idle traffic does not fire it
// and one where it resolves after recovery (some alerts have more); a further group checks
// the values of the recording rules. The scenarios follow the configured thresholds and
// durations, so a configuration whose for is shorter than its rate window fails the blip
// test — on purpose: such a configuration pages on blips.
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
	lv, err := r.testLabels()
	if err != nil {
		return nil, err
	}
	file := yamlTestFile{RuleFiles: []string{ruleFile}, EvaluationInterval: FormatDuration(step)}
	for _, g := range r.groups() {
		file.GroupEvalOrder = append(file.GroupEvalOrder, g.Name)
	}
	file.Tests = append(file.Tests, r.recordingTest(lv).render(r, lv, alertSpec{}, settings{}))
	for _, sp := range specs {
		s := r.alerts[sp.name]
		if !s.enabled {
			continue
		}
		c := &scenario{r: r, sp: sp, s: s, lv: lv}
		cases, err := scenarios[sp.name](c)
		if err != nil {
			return nil, err
		}
		for _, tc := range cases {
			file.Tests = append(file.Tests, tc.render(r, lv, sp, s))
		}
	}
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

// --- scenarios ---

// testCase is one promtool test group.
type testCase struct {
	name   string
	series []yamlSeries
	checks []check
	exprs  []yamlExprTest
	// instanceless alerts expect labels without instance.
}

// check says whether the alert is firing at an evaluation time.
type check struct {
	at     time.Duration
	firing bool
}

func (tc testCase) render(r *resolved, lv map[string]string, sp alertSpec, s settings) yamlTestGroup {
	g := yamlTestGroup{Name: tc.name, Interval: FormatDuration(step), InputSeries: tc.series, PromqlExprTests: tc.exprs}
	for _, c := range tc.checks {
		at := yamlAlertTest{EvalTime: FormatDuration(c.at), Alertname: sp.name, ExpAlerts: []yamlExpAlert{}}
		if c.firing {
			labels := map[string]string{"severity": s.severity}
			for _, l := range r.labels(sp.perInstance) {
				if lv[l] != "" {
					labels[l] = lv[l]
				}
			}
			at.ExpAlerts = append(at.ExpAlerts, yamlExpAlert{
				ExpLabels: labels,
				ExpAnnotations: map[string]string{
					"summary":     sp.summary,
					"description": sp.description(r, s, func(l string) string { return lv[l] }),
					"runbook_url": r.runbookURL(sp.name),
				},
			})
		}
		g.AlertRuleTests = append(g.AlertRuleTests, at)
	}
	return g
}

// scenario carries what a scenario builder needs.
type scenario struct {
	r  *resolved
	sp alertSpec
	s  settings
	lv map[string]string
}

// series renders one input series of metric m with the scenario's labels plus extra
// label pairs, sampled every step from 0 to end.
func (c *scenario) series(m catalog.Metric, end time.Duration, values string, extra ...string) yamlSeries {
	return c.seriesWith(c.lv, m, values, extra...)
}

func (c *scenario) seriesWith(lv map[string]string, m catalog.Metric, values string, extra ...string) yamlSeries {
	labels := maps.Clone(lv)
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	return yamlSeries{Series: seriesString(c.r.name(m), labels), Values: values}
}

// name prefixes a test group name with the alert name.
func (c *scenario) name(format string, args ...any) string {
	return c.sp.name + ": " + fmt.Sprintf(format, args...)
}

func (c *scenario) forDur() time.Duration { return c.s.forDur }
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

// silent returns not-firing checks at the given times.
func silent(ats ...time.Duration) []check {
	out := make([]check, len(ats))
	for i, a := range ats {
		out[i] = check{at: a}
	}
	return out
}

func lastCheck(cs []check) time.Duration {
	var m time.Duration
	for _, c := range cs {
		m = max(m, c.at)
	}
	return m
}

func ceilStep(d time.Duration) time.Duration { return (d + step - 1) / step * step }

// afterStep returns the first step strictly after d.
func afterStep(d time.Duration) time.Duration { return d/step*step + step }

// gauge renders a gauge sampled every step from 0 to end in promtool's expanding notation.
func gauge(end time.Duration, v func(t time.Duration) float64) string {
	var parts []string
	n := int(end / step)
	for i := 0; i <= n; {
		x := v(time.Duration(i) * step)
		j := i
		for j+1 <= n && same(v(time.Duration(j+1)*step), x) {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, fnum(x))
		case math.IsNaN(x): // promtool has no expanding notation for NaN
			parts = append(parts, strings.TrimSpace(strings.Repeat("NaN ", j-i+1)))
		default:
			parts = append(parts, fnum(x)+"x"+strconv.Itoa(j-i))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// counter renders a counter that starts at 0 and grows by inc(t) at each sample t > 0.
func counter(end time.Duration, inc func(t time.Duration) float64) string {
	var parts []string
	n := int(end / step)
	val := 0.0
	parts = append(parts, "0")
	for i := 1; i <= n; {
		d := inc(time.Duration(i) * step)
		j := i
		for j+1 <= n && same(inc(time.Duration(j+1)*step), d) {
			j++
		}
		first := val + d
		if j == i {
			parts = append(parts, fnum(first))
		} else {
			parts = append(parts, fnum(first)+"+"+fnum(d)+"x"+strconv.Itoa(j-i))
		}
		val += d * float64(j-i+1)
		i = j + 1
	}
	return strings.Join(parts, " ")
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func fnum(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// when returns a counter increment / gauge value function that is a inside [from, to) and
// b outside it.
func when(from, to time.Duration, a, b float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t >= from && t < to {
			return a
		}
		return b
	}
}

// forever is an end time beyond any scenario.
const forever = 1000 * time.Hour

func zero(time.Duration) float64 { return 0 }

// perStep is the number of calls per step in the traffic scenarios; large enough that
// ratios are exact in thousandths.
const perStep = 1000

// share returns a count of perStep that is strictly above ratio*perStep (ratio < 1) and about
// halfway to all of them.
func shareAbove(ratio float64) float64 {
	n := math.Round((ratio + (1-ratio)/2) * perStep)
	if n <= ratio*perStep {
		n = math.Floor(ratio*perStep) + 1
	}
	return min(n, perStep)
}

// The scenario builders, per alert.
var scenarios = map[string]func(c *scenario) ([]testCase, error){
	AlertStuckOpen:              stuckOpenScenarios,
	AlertFlapping:               flappingScenarios,
	AlertOpenFleetWide:          fleetWideScenarios,
	AlertRejectingCalls:         rejectingCallsScenarios,
	AlertRetryRateHigh:          retryRateHighScenarios,
	AlertRetryRateSpike:         retryRateSpikeScenarios,
	AlertRetryBudgetExhausted:   budgetScenarios,
	AlertRetriesNotRescuing:     notRescuingScenarios,
	AlertBulkheadRejectionsHigh: bulkheadRejectionScenarios,
	AlertBulkheadSaturated:      saturatedScenarios,
	AlertFallbackSustained:      fallbackScenarios,
	AlertSlowCallRateHigh:       slowCallScenarios,
}

func stuckOpenScenarios(c *scenario) ([]testCase, error) {
	T := time.Duration(c.s.threshold) * time.Second
	C := afterStep(t0 + T) // first evaluation with time() - trip > threshold
	trip := float64(t0 / time.Second)
	halfOpenOpen := []string{catalog.LabelFrom, catalog.StateHalfOpen.String(), catalog.LabelTo, catalog.StateOpen.String()}
	build := func(end time.Duration, tripped, rejections, failedProbes func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{
			c.series(catalog.BreakerTrippedSince, end, gauge(end, tripped)),
			c.series(catalog.BreakerNotPermitted, end, counter(end, rejections)),
			c.series(catalog.BreakerTransitions, end, counter(end, failedProbes), halfOpenOpen...),
		}
	}
	var out []testCase

	fire := c.fires(C, C)
	end := lastCheck(fire) + 2*time.Minute
	out = append(out, testCase{
		name:   c.name("fires %s after the trip (not closed for over %s, then for %s) while calls are rejected", FormatDuration(C+c.forDur()-t0), FormatDuration(T), FormatDuration(c.forDur())),
		series: build(end, when(t0, forever, trip, 0), when(t0+step, forever, 20, 0), zero),
		checks: fire,
	})

	// Half-open scrapes: the breaker cycles open → half_open → open every 30s; the probes fail
	// and no call is rejected in between. The episode is still one episode.
	cycle := 30 * time.Second
	probes := func(t time.Duration) float64 {
		if t > t0 && (t-t0)%cycle == 0 {
			return 1
		}
		return 0
	}
	stateSeries := func(state string, inState func(time.Duration) bool) yamlSeries {
		return c.series(catalog.BreakerState, end, gauge(end, func(t time.Duration) float64 {
			if inState(t) {
				return 1
			}
			return 0
		}), catalog.LabelState, state)
	}
	halfOpen := func(t time.Duration) bool { return t >= t0 && (t-t0)%cycle == cycle-step }
	out = append(out, testCase{
		name: c.name("fires on failed half-open probes without rejections; half-open scrapes do not reset it"),
		series: append(build(end, when(t0, forever, trip, 0), zero, probes),
			stateSeries(catalog.StateClosed.String(), func(t time.Duration) bool { return t < t0 }),
			stateSeries(catalog.StateOpen.String(), func(t time.Duration) bool { return t >= t0 && !halfOpen(t) }),
			stateSeries(catalog.StateHalfOpen.String(), halfOpen)),
		checks: fire,
	})

	blipChecks := silent(C+c.forDur(), C+c.forDur()+5*time.Minute)
	end = lastCheck(blipChecks) + time.Minute
	out = append(out, testCase{
		name:   c.name("a 15s open blip with rejections does not fire"),
		series: build(end, when(t0, t0+step, trip, 0), when(t0+step, t0+2*step, 20, 0), zero),
		checks: blipChecks,
	})

	idleChecks := silent(C+c.forDur(), C+c.forDur()+10*time.Minute)
	end = lastCheck(idleChecks) + time.Minute
	out = append(out, testCase{
		name:   c.name("idle: an open breaker without traffic (no rejections, no probes) does not fire"),
		series: build(end, when(t0, forever, trip, 0), zero, zero),
		checks: idleChecks,
	})

	R := C + c.forDur() + time.Minute
	res := slices.Concat(fire, c.resolves(R, R))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves once the breaker closes"),
		series: build(end, when(t0, R, trip, 0), when(t0+step, R, 20, 0), zero),
		checks: res,
	})
	return out, nil
}

func flappingScenarios(c *scenario) ([]testCase, error) {
	n := int(c.s.threshold)
	sp := time.Minute
	if time.Duration(n)*sp > 10*time.Minute {
		sp = max(step, 10*time.Minute/time.Duration(n)/step*step)
	}
	tripAt := func(i int) time.Duration { return t0 + time.Duration(i)*sp } // i from 0
	trips := func(count int, until time.Duration) func(time.Duration) float64 {
		return func(t time.Duration) float64 {
			if t < t0 || t > until || (t-t0)%sp != 0 {
				return 0
			}
			if count >= 0 && int((t-t0)/sp) >= count {
				return 0
			}
			return 1
		}
	}
	closedOpen := []string{catalog.LabelFrom, catalog.StateClosed.String(), catalog.LabelTo, catalog.StateOpen.String()}
	tN := tripAt(n - 1)
	build := func(end time.Duration, inc func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{c.series(catalog.BreakerTransitions, end, counter(end, inc), closedOpen...)}
	}
	var out []testCase

	fire := c.fires(tN, tN)
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("fires on trip number %d within %s (one trip every %s)", n, FormatDuration(flappingWindow), FormatDuration(sp)),
		series: build(end, trips(-1, forever)),
		checks: fire,
	})

	quiet := silent(tN+c.forDur(), tN+c.forDur()+5*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("a single 15s trip (a blip) does not fire"),
		series: build(end, trips(1, forever)),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("%d trips within %s stay below the threshold", n-1, FormatDuration(flappingWindow)),
		series: build(end, trips(n-1, forever)),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("an idle breaker without transitions does not fire"),
		series: build(end, zero),
		checks: quiet,
	})

	stop := tN + c.forDur()
	lastTrip := t0 + (stop-t0)/sp*sp
	res := []check{{at: stop, firing: true}, {at: ceilStep(lastTrip+flappingWindow+c.keep()) + step}}
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves once the trips have left the %s window", FormatDuration(flappingWindow)),
		series: build(end, trips(-1, stop)),
		checks: res,
	})
	return out, nil
}

func fleetWideScenarios(c *scenario) ([]testCase, error) {
	const instances = 10
	insts, err := c.r.instanceValues(instances)
	if err != nil {
		return nil, err
	}
	open := min(int(math.Floor(c.s.threshold*instances))+1, instances)
	trip := float64(t0 / time.Second)
	build := func(end time.Duration, openCount int, from, to time.Duration) []yamlSeries {
		var ss []yamlSeries
		for i, inst := range insts {
			lv := maps.Clone(c.lv)
			lv[labelInstance] = inst
			v := func(time.Duration) float64 { return 0 }
			if i < openCount {
				v = when(from, to, trip, 0)
			}
			ss = append(ss, c.seriesWith(lv, catalog.BreakerTrippedSince, gauge(end, v)))
		}
		return ss
	}
	var out []testCase
	fire := c.fires(t0, t0)
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("fires when %d of %d instances have the breaker not closed", open, instances),
		series: build(end, open, t0, forever),
		checks: fire,
	})
	quiet := silent(t0, t0+c.forDur(), t0+c.forDur()+5*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("a 15s blip on %d of %d instances does not fire", open, instances),
		series: build(end, open, t0, t0+step),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("idle: all breakers closed, no traffic, does not fire"),
		series: build(end, 0, t0, forever),
		checks: quiet,
	})
	if open > 1 {
		out = append(out, testCase{
			name:   c.name("%d of %d instances (not more than %s) do not fire", open-1, instances, pct(c.s.threshold)),
			series: build(end, open-1, t0, forever),
			checks: quiet,
		})
	}
	R := t0 + c.forDur() + time.Minute
	res := slices.Concat(fire, c.resolves(R, R))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves once the breakers close"),
		series: build(end, open, t0, R),
		checks: res,
	})
	return out, nil
}

// trafficScenarios are the four cases of an alert on counters: bad traffic starts at t0 (so
// ratios of two counters are exact from the first increment on); the blip is one step of bad
// traffic amid good traffic; idle has no traffic; recovery turns all traffic good.
func trafficScenarios(c *scenario, build func(end time.Duration, bad, good func(time.Duration) float64) []yamlSeries,
	badPerStep float64, condSureLag time.Duration, fireDesc, blipDesc string, clearLag time.Duration) []testCase {
	var out []testCase
	start := t0 + step // first sample with an increment
	fire := c.fires(start, start+condSureLag)
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("%s", fireDesc),
		series: build(end, when(start, forever, badPerStep, 0), when(start, forever, perStep-badPerStep, 0)),
		checks: fire,
	})
	bt := 5 * time.Minute
	quiet := silent(bt+time.Minute, bt+c.forDur(), bt+c.forDur()+2*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("%s", blipDesc),
		series: build(end, when(bt, bt+step, perStep, 0), when(bt, bt+step, 0, perStep)),
		checks: quiet,
	})
	idle := silent(start+condSureLag+c.forDur(), start+condSureLag+c.forDur()+10*time.Minute)
	end = lastCheck(idle) + time.Minute
	out = append(out, testCase{
		name:   c.name("idle (no calls) does not fire"),
		series: build(end, zero, zero),
		checks: idle,
	})
	R := start + condSureLag + c.forDur() + time.Minute
	res := slices.Concat(fire, c.resolves(R, R+clearLag))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name: c.name("resolves after recovery"),
		series: build(end, when(start, R, badPerStep, 0), func(t time.Duration) float64 {
			switch {
			case t >= R:
				return perStep
			case t >= start:
				return perStep - badPerStep
			}
			return 0
		}),
		checks: res,
	})
	return out
}

func rejectingCallsScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	build := func(end time.Duration, rejected, permitted func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{
			c.series(catalog.BreakerCalls, end, counter(end, permitted), catalog.LabelKind, catalog.CallSuccessful.String()),
			c.series(catalog.BreakerNotPermitted, end, counter(end, rejected)),
		}
	}
	return trafficScenarios(c, build, bad, step,
		fmt.Sprintf("fires when %s of calls are rejected", pct(bad/perStep)),
		"a 15s blip rejecting every call does not fire", c.r.rateWindow), nil
}

func bulkheadRejectionScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	build := func(end time.Duration, rejected, permitted func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{
			c.series(catalog.BulkheadCalls, end, counter(end, permitted), catalog.LabelKind, catalog.AdmissionPermitted.String()),
			c.series(catalog.BulkheadCalls, end, counter(end, rejected), catalog.LabelKind, catalog.AdmissionRejected.String()),
		}
	}
	return trafficScenarios(c, build, bad, step,
		fmt.Sprintf("fires when %s of calls are rejected", pct(bad/perStep)),
		"a 15s blip rejecting every call does not fire", c.r.rateWindow), nil
}

func notRescuingScenarios(c *scenario) ([]testCase, error) {
	rescued := math.Floor(c.s.threshold * perStep / 2)
	build := func(end time.Duration, failedRetried, rescuedOrOK func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{
			c.series(catalog.RetryCalls, end, counter(end, rescuedOrOK), catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()),
			c.series(catalog.RetryCalls, end, counter(end, failedRetried), catalog.LabelKind, catalog.RetryFailedWithRetry.String()),
		}
	}
	// The generic builder's "good" calls are rescued retries here, so the blip is a 15s burst
	// of retried calls that all fail amid calls that were all rescued.
	return trafficScenarios(c, build, perStep-rescued, step,
		fmt.Sprintf("fires when only %s of retried calls are rescued", pct(rescued/perStep)),
		"a 15s blip in which no retried call is rescued does not fire", c.r.rateWindow), nil
}

func retryRateHighScenarios(c *scenario) ([]testCase, error) {
	attempts := math.Floor(2*c.s.threshold*perStep) + 1
	build := func(end time.Duration, retried, plain func(time.Duration) float64) []yamlSeries {
		// retried(t) is perStep calls in the bad state, scaled into attempts below.
		return []yamlSeries{
			c.series(catalog.RetryCalls, end, counter(end, func(t time.Duration) float64 { return retried(t) + plain(t) }),
				catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()),
			c.series(catalog.RetryAttempts, end, counter(end, func(t time.Duration) float64 {
				return retried(t) / perStep * attempts
			})),
		}
	}
	return trafficScenarios(c, build, perStep, step,
		fmt.Sprintf("fires at %s extra attempts per call", fnum(attempts/perStep)),
		fmt.Sprintf("a 15s blip of %s extra attempts per call does not fire", fnum(attempts/perStep)), c.r.rateWindow), nil
}

func budgetScenarios(c *scenario) ([]testCase, error) {
	denials := math.Ceil((2*c.s.threshold + 1) * step.Seconds())
	build := func(end time.Duration, bad, _ func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{c.series(catalog.RetryBudgetDenied, end, counter(end, func(t time.Duration) float64 {
			return bad(t) / perStep * denials
		}))}
	}
	lag := step
	if c.s.threshold > 0 {
		lag = 2*time.Minute + step // the 2m rate ramps up
	}
	return trafficScenarios(c, build, perStep, lag,
		fmt.Sprintf("fires when the budget denies %s retries/s continuously", fnum(denials/step.Seconds())),
		"a 15s blip of denials does not fire", 2*time.Minute), nil
}

func fallbackScenarios(c *scenario) ([]testCase, error) {
	calls := math.Ceil((2*c.s.threshold + 1) * step.Seconds())
	build := func(end time.Duration, bad, _ func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{c.series(catalog.FallbackCalls, end, counter(end, func(t time.Duration) float64 {
			return bad(t) / perStep * calls
		}), catalog.LabelCause, catalog.CauseCircuitOpen.String())}
	}
	lag := step
	if c.s.threshold > 0 {
		lag = c.r.rateWindow + step // the rate over the rate window ramps up
	}
	return trafficScenarios(c, build, perStep, lag,
		fmt.Sprintf("fires when fallbacks run at %s/s continuously", fnum(calls/step.Seconds())),
		"a 15s blip of fallbacks does not fire", c.r.rateWindow), nil
}

func retryRateSpikeScenarios(c *scenario) ([]testCase, error) {
	const base = 4.0 // attempts per perStep calls: 0.4%
	spike := math.Floor(max(2*c.s.threshold*base, 2*RetrySpikeFloor*perStep)) + 1
	w := c.r.rateWindow
	tS := time.Hour + w + 5*time.Minute // over an hour (plus a rate window) of baseline first
	build := func(end time.Duration, attempts func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{
			c.series(catalog.RetryCalls, end, counter(end, func(time.Duration) float64 { return perStep }),
				catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()),
			c.series(catalog.RetryAttempts, end, counter(end, attempts)),
		}
	}
	var out []testCase
	start := tS + step
	sure := tS + w + 2*step // the rate over the rate window has fully caught up
	fire := c.fires(start, sure)
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("fires when the retry rate jumps from %s to %s extra attempts per call", fnum(base/perStep), fnum(spike/perStep)),
		series: build(end, when(start, forever, spike, base)),
		checks: fire,
	})
	bt := tS + 5*time.Minute
	quiet := silent(bt+time.Minute, bt+c.forDur(), bt+c.forDur()+2*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("a 15s blip of 3 extra attempts per call does not fire"),
		series: build(end, when(bt, bt+step, 3*perStep, base)),
		checks: quiet,
	})
	idle := silent(sure+c.forDur(), sure+c.forDur()+5*time.Minute)
	end = lastCheck(idle) + time.Minute
	out = append(out, testCase{
		name: c.name("idle (no calls) does not fire"),
		series: []yamlSeries{
			c.series(catalog.RetryCalls, end, counter(end, zero), catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()),
			c.series(catalog.RetryAttempts, end, counter(end, zero)),
		},
		checks: idle,
	})
	out = append(out, testCase{
		name:   c.name("a steady high retry rate (no change from an hour ago) does not fire"),
		series: build(end, func(time.Duration) float64 { return 10 * spike }),
		checks: idle,
	})
	R := sure + c.forDur() + time.Minute
	res := slices.Concat(fire, c.resolves(R, R+w))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves once the retry rate is back to its baseline"),
		series: build(end, when(start, R, spike, base)),
		checks: res,
	})
	return out, nil
}

func saturatedScenarios(c *scenario) ([]testCase, error) {
	const permits = 10
	build := func(end time.Duration, inflight func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{
			c.series(catalog.BulkheadMaxConcurrent, end, gauge(end, func(time.Duration) float64 { return permits })),
			c.series(catalog.BulkheadInflight, end, gauge(end, inflight)),
		}
	}
	return gaugeScenarios(c, build, permits, 0, 0,
		"fires when every permit is in use", "a 15s blip with every permit in use does not fire", "idle (no calls in flight) does not fire"), nil
}

func slowCallScenarios(c *scenario) ([]testCase, error) {
	const breakerThreshold = 0.5
	high := breakerThreshold * (c.s.threshold + (1-c.s.threshold)/2)
	if c.s.threshold == 1 {
		high = 0.6
	}
	build := func(end time.Duration, rate func(time.Duration) float64) []yamlSeries {
		return []yamlSeries{
			c.series(catalog.BreakerSlowCallRateThreshold, end, gauge(end, func(time.Duration) float64 { return breakerThreshold })),
			c.series(catalog.BreakerSlowCallRate, end, gauge(end, rate)),
		}
	}
	return gaugeScenarios(c, build, high, 0, math.NaN(),
		fmt.Sprintf("fires at a slow-call rate of %s against a threshold of %s", fnum(high), fnum(breakerThreshold)),
		"a 15s blip of slow calls does not fire",
		"idle (rate NaN below the minimum number of calls) does not fire"), nil
}

// gaugeScenarios are the four cases of an alert on a gauge that is high from t0 on.
func gaugeScenarios(c *scenario, build func(end time.Duration, v func(time.Duration) float64) []yamlSeries,
	high, low, idleValue float64, fireDesc, blipDesc, idleDesc string) []testCase {
	var out []testCase
	fire := c.fires(t0, t0)
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{name: c.name("%s", fireDesc), series: build(end, when(t0, forever, high, low)), checks: fire})
	quiet := silent(t0, t0+c.forDur(), t0+c.forDur()+5*time.Minute) // during the blip, too
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{name: c.name("%s", blipDesc), series: build(end, when(t0, t0+step, high, low)), checks: quiet})
	out = append(out, testCase{name: c.name("%s", idleDesc), series: build(end, func(time.Duration) float64 { return idleValue }), checks: quiet})
	R := t0 + c.forDur() + time.Minute
	res := slices.Concat(fire, c.resolves(R, R))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{name: c.name("resolves after recovery"), series: build(end, when(t0, R, high, low)), checks: res})
	return out
}

// recordingTest feeds steady traffic to every recorded metric and checks the recorded values
// (×1000, rounded, so the comparison is exact).
func (r *resolved) recordingTest(lv map[string]string) testCase {
	c := &scenario{r: r, lv: lv}
	// Evaluated once the rate window holds only steady traffic (10m for the default 5m).
	at := max(10*time.Minute, r.rateWindow+5*time.Minute)
	end := at + time.Minute
	steady := func(n float64) string { return counter(end, func(time.Duration) float64 { return n }) }
	tc := testCase{name: "recording rules: expected values under steady traffic"}
	tc.series = []yamlSeries{
		c.series(catalog.BreakerCalls, end, steady(1200), catalog.LabelKind, catalog.CallSuccessful.String()),
		c.series(catalog.BreakerCalls, end, steady(300), catalog.LabelKind, catalog.CallFailed.String()),
		c.series(catalog.BreakerNotPermitted, end, steady(500)),
		c.series(catalog.RetryCalls, end, steady(1200), catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()),
		c.series(catalog.RetryCalls, end, steady(150), catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()),
		c.series(catalog.RetryCalls, end, steady(150), catalog.LabelKind, catalog.RetryFailedWithRetry.String()),
		c.series(catalog.RetryAttempts, end, steady(450)),
		c.series(catalog.BulkheadCalls, end, steady(1470), catalog.LabelKind, catalog.AdmissionPermitted.String()),
		c.series(catalog.BulkheadCalls, end, steady(30), catalog.LabelKind, catalog.AdmissionRejected.String()),
		c.series(catalog.FallbackCalls, end, steady(150), catalog.LabelCause, catalog.CauseCircuitOpen.String()),
	}
	agg := map[string]string{}
	for _, l := range r.labels(false) {
		agg[l] = lv[l]
	}
	with := func(extra ...string) string {
		m := maps.Clone(agg)
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return seriesString("", m)
	}
	expect := func(rec string, value float64, extra ...string) {
		tc.exprs = append(tc.exprs, yamlExprTest{
			Expr:       "round(1000 * " + rec + ")",
			EvalTime:   FormatDuration(at),
			ExpSamples: []yamlSample{{Labels: with(extra...), Value: value}},
		})
	}
	// Calls per step / 15s × 1000.
	expect(r.recBreakerCalls(), 100000)
	expect(r.recBreakerNotPermitted(), 33333)
	expect(r.recBreakerRejectionRatio(), 250)
	expect(r.recRetryCallsByKind()+`{kind="`+catalog.RetrySuccessfulWithoutRetry.String()+`"}`, 80000, catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String())
	expect(r.recRetryCallsByKind()+`{kind="`+catalog.RetrySuccessfulWithRetry.String()+`"}`, 10000, catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String())
	expect(r.recRetryCallsByKind()+`{kind="`+catalog.RetryFailedWithRetry.String()+`"}`, 10000, catalog.LabelKind, catalog.RetryFailedWithRetry.String())
	expect(r.recRetryAttempts(), 30000)
	expect(r.recRetryRate(), 300)
	expect(r.recRescueRate(), 500)
	expect(r.recBulkheadCallsByKind()+`{kind="`+catalog.AdmissionPermitted.String()+`"}`, 98000, catalog.LabelKind, catalog.AdmissionPermitted.String())
	expect(r.recBulkheadCallsByKind()+`{kind="`+catalog.AdmissionRejected.String()+`"}`, 2000, catalog.LabelKind, catalog.AdmissionRejected.String())
	expect(r.recBulkheadRejectionRatio(), 20)
	expect(r.recFallbacksByCause(), 10000, catalog.LabelCause, catalog.CauseCircuitOpen.String())
	return tc
}
