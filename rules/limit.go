package rules

import (
	"fmt"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// The adaptive limiter's and the client-side throttle's alerts live in their own group and file:
// the specs, the promtool scenarios and the runbooks below, registered into the generator's
// tables by init.
const GroupLimit = "stormwatch-limit"

// The limiter and throttle alerts.
const (
	AlertLimiterPinnedAtMinimum = "LimiterPinnedAtMinimum"
	AlertLimiterSaturated       = "LimiterSaturated"
	AlertLimiterRejectionsHigh  = "LimiterRejectionsHigh"
	AlertLimiterBaselineDrift   = "LimiterBaselineDrifting"
	AlertThrottleShedding       = "ThrottleShedding"
)

// LimiterRejectionFloor is the call rate (calls per second, over the rate window) below which
// LimiterRejectionsHigh stays silent whatever the ratio: a handful of calls is no evidence.
const LimiterRejectionFloor = 0.1

// baselineHorizon is the window over which LimiterBaselineDrifting finds the lowest baseline.
const baselineHorizon = time.Hour

// rowLimits is the dashboard row the runbooks point at.
const rowLimits = "Adaptive limits and throttles"

func init() {
	GroupNames = append(GroupNames, GroupLimit)
	specs = append(specs, limitSpecs...)
	for name, f := range limitScenarios {
		scenarios[name] = f
	}
	for name, rb := range limitRunbooks {
		runbooks[name] = rb
	}
}

var limitSpecs = []alertSpec{
	{
		name: AlertLimiterPinnedAtMinimum, group: GroupLimit, perInstance: true, severity: "warning",
		threshold: 1, bounds: bounds{min: 1, max: 10},
		thresholdDoc: "multiple of the limiter's configured minimum at or below which its limit counts as pinned",
		forDur:       10 * time.Minute,
		summary:      "Adaptive limiter is pinned at its minimum.",
		value:        valueCount,
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			return fmt.Sprintf("max by (%[1]s) (%[2]s)\n<= %[3]s * max by (%[1]s) (%[4]s)", gi,
				r.last(r.sel(r.name(catalog.LimiterLimit))), num(s.threshold), r.last(r.sel(r.name(catalog.LimiterMinLimit))))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Adaptive limiter %s has held its limit at %s, its minimum, for %s: the dependency is slow at any concurrency (an incident, or a lasting slowdown the limiter will not learn under full load), and most calls beyond the minimum are rejected.",
				r.subject(true, a.ref), a.value, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertLimiterSaturated, group: GroupLimit, severity: "warning",
		threshold: 0.9, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: "share (0..1) of the limit in use on average over the {window} window, on the busiest instance",
		forDur:       10 * time.Minute,
		summary:      "Adaptive limiter is running at its limit.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			return fmt.Sprintf("max by (%s) (\n  avg_over_time(%s)\n/\n  (%s > 0)\n) > %s", r.by(false),
				r.rangeOf(r.sel(r.name(catalog.LimiterInflight))), r.last(r.sel(r.name(catalog.LimiterLimit))), num(s.threshold))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Adaptive limiter %s had %s of its limit in use on average over the last %s on its busiest instance (threshold %s), for %s: demand meets what the dependency can take, and the next burst is rejected.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertLimiterRejectionsHigh, group: GroupLimit, severity: "warning",
		threshold: 0.05, bounds: bounds{min: 0, max: 1, minOpen: true, maxOpen: true},
		thresholdDoc: fmt.Sprintf("share (0..1) of calls rejected by the adaptive limiter over the {window} window, with at least %s calls per second", num(LimiterRejectionFloor)),
		forDur:       5 * time.Minute,
		summary:      "Adaptive limiter is rejecting calls.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			g := r.by(false)
			all := fmt.Sprintf("sum by (%s) (rate(%s))", g, r.rangeOf(r.sel(r.name(catalog.LimiterCalls))))
			rej := fmt.Sprintf("sum by (%s) (rate(%s))", g, r.rangeOf(r.sel(r.name(catalog.LimiterCalls), eq(catalog.LabelKind, catalog.AdmissionRejected.String()))))
			return fmt.Sprintf("%s\n/\n%s\n> %s\nand\n%s >= %s", rej, all, num(s.threshold), all, num(LimiterRejectionFloor))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Adaptive limiter %s rejected %s of calls over the last %s (threshold %s), for %s: offered load exceeds what the dependency serves at its normal latency.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertLimiterBaselineDrift, group: GroupLimit, perInstance: true, severity: "info",
		threshold: 2, bounds: bounds{min: 1, max: 100, minOpen: true},
		thresholdDoc: "ratio of the limiter's baseline latency to its lowest value in the last hour",
		forDur:       15 * time.Minute,
		summary:      "Adaptive limiter has a rising latency baseline.",
		value:        valueNumber,
		expr: func(r *resolved, s settings) string {
			gi := r.by(true)
			b := r.sel(r.name(catalog.LimiterBaselineLatency))
			return fmt.Sprintf("max by (%[1]s) (%[2]s)\n/\nmax by (%[1]s) (min_over_time(%[3]s[%[4]s]) > 0)\n> %[5]s", gi,
				r.last(b), b, FormatDuration(baselineHorizon), num(s.threshold))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Adaptive limiter %s now takes %s times its lowest baseline latency of the last %s as normal (threshold %s), for %s: the dependency became slower even under light load.",
				r.subject(true, a.ref), a.value, FormatDuration(baselineHorizon), num(s.threshold), FormatDuration(s.forDur))
		},
	},
	{
		name: AlertThrottleShedding, group: GroupLimit, severity: "warning",
		threshold: 0, bounds: bounds{min: 0, max: 1, maxOpen: true},
		thresholdDoc: "shedding probability (0..1) of the client-side throttle, on the busiest instance",
		forDur:       5 * time.Minute,
		summary:      "Client-side throttle is shedding requests.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			return fmt.Sprintf("max by (%s) (%s) > %s", r.by(false), r.last(r.sel(r.name(catalog.ThrottleProbability))), num(s.threshold))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Client-side throttle %s sheds %s of new requests locally, for %s: the dependency refuses more than half of what is sent.",
				r.subject(false, a.ref), a.value, FormatDuration(s.forDur))
		},
	},
}

// The scenarios' inputs.
const (
	scenarioMinLimit   = 2
	scenarioLimit      = 20
	scenarioBaselineLo = 0.05
)

var limitScenarios = map[string]func(c *scenario) ([]testCase, error){
	AlertLimiterPinnedAtMinimum: func(c *scenario) ([]testCase, error) {
		build := func(end time.Duration, limit func(time.Duration) float64) []*track {
			return []*track{
				c.gauge(catalog.LimiterMinLimit, end, func(time.Duration) float64 { return scenarioMinLimit }),
				c.gauge(catalog.LimiterLimit, end, limit),
			}
		}
		pinned := scenarioMinLimit * c.s.threshold
		return gaugeScenarios(c, build, pinned, scenarioLimit*c.s.threshold, scenarioLimit*c.s.threshold, 0, 0,
			"fires when the limit sits at its minimum", "a 15s blip at the minimum does not fire", "an idle limiter at its initial limit does not fire"), nil
	},
	AlertLimiterSaturated: func(c *scenario) ([]testCase, error) {
		build := func(end time.Duration, inflight func(time.Duration) float64) []*track {
			return []*track{
				c.gauge(catalog.LimiterLimit, end, func(time.Duration) float64 { return scenarioLimit }),
				c.gauge(catalog.LimiterInflight, end, inflight),
			}
		}
		probe := build(t0+c.r.rateWindow+time.Minute, when(t0, forever, scenarioLimit, 0))
		lag := time.Duration(0)
		for maxAvg(probe, t0+lag, c.r.rateWindow, catalog.LimiterInflight)/scenarioLimit <= c.s.threshold {
			lag += step
		}
		return gaugeScenarios(c, build, scenarioLimit, 0, 0, lag, c.r.rateWindow,
			"fires when the whole limit is in use", "a 15s blip at the limit does not fire", "idle (no calls in flight) does not fire"), nil
	},
	AlertLimiterRejectionsHigh: func(c *scenario) ([]testCase, error) {
		bad := shareAbove(c.s.threshold)
		build := func(end time.Duration, rejected, permitted func(time.Duration) float64) []*track {
			return []*track{
				c.counter(catalog.LimiterCalls, end, permitted, catalog.LabelKind, catalog.AdmissionPermitted.String()),
				c.counter(catalog.LimiterCalls, end, rejected, catalog.LabelKind, catalog.AdmissionRejected.String()),
			}
		}
		return trafficScenarios(c, build, bad, step,
			fmt.Sprintf("fires when %s of calls are rejected", pct(bad/perStep)),
			"a 15s blip rejecting every call does not fire", c.r.rateWindow, c.r.rateWindow), nil
	},
	AlertLimiterBaselineDrift: func(c *scenario) ([]testCase, error) {
		build := func(end time.Duration, baseline func(time.Duration) float64) []*track {
			return []*track{c.gauge(catalog.LimiterBaselineLatency, end, baseline)}
		}
		high := scenarioBaselineLo * (c.s.threshold + 1)
		return gaugeScenarios(c, build, high, scenarioBaselineLo, scenarioBaselineLo, 0, 0,
			fmt.Sprintf("fires when the baseline rises to %s times its lowest value", num(c.s.threshold+1)),
			"a 15s blip of a high baseline does not fire", "idle (a steady baseline) does not fire"), nil
	},
	AlertThrottleShedding: func(c *scenario) ([]testCase, error) {
		build := func(end time.Duration, p func(time.Duration) float64) []*track {
			return []*track{c.gauge(catalog.ThrottleProbability, end, p)}
		}
		high := c.s.threshold + (1-c.s.threshold)/2
		return gaugeScenarios(c, build, high, 0, 0, 0, 0,
			fmt.Sprintf("fires when the throttle sheds %s of requests", pct(high)),
			"a 15s blip of shedding does not fire", "idle (nothing shed) does not fire"), nil
	},
}

// limitValue is the alert's value at time at, as the rule computes it from the scenario's series.
func limitValue(c *scenario, tracks []*track, at time.Duration) (float64, bool) {
	w := c.r.rateWindow
	switch c.sp.name {
	case AlertLimiterPinnedAtMinimum:
		return maxLast(tracks, at, w, catalog.LimiterLimit), true
	case AlertLimiterSaturated:
		return maxAvg(tracks, at, w, catalog.LimiterInflight) / maxLast(tracks, at, w, catalog.LimiterLimit), true
	case AlertLimiterRejectionsHigh:
		rej := sumRate(tracks, at, w, catalog.LimiterCalls, catalog.LabelKind, catalog.AdmissionRejected.String())
		return rej / sumRate(tracks, at, w, catalog.LimiterCalls), true
	case AlertLimiterBaselineDrift:
		// Every scenario starts at the low baseline, so the hour's minimum is that input.
		return maxLast(tracks, at, w, catalog.LimiterBaselineLatency) / scenarioBaselineLo, true
	case AlertThrottleShedding:
		return maxLast(tracks, at, w, catalog.ThrottleProbability), true
	}
	return 0, false
}

var limitRunbooks = map[string]runbook{
	AlertLimiterPinnedAtMinimum: {
		meaning: "The adaptive limiter has held its limit at its configured minimum for the `for` duration. It shrinks the limit while the latency it measures stays far above its no-load baseline; at the minimum it cannot shrink further, so the dependency is slow even at the lowest concurrency allowed.",
		impact:  "Most calls beyond the minimum concurrency are rejected at once (`limit.ErrLimited`); callers see errors or fallbacks instead of slow answers.",
		causes: []string{
			"The dependency is in an incident: slow at any load (a degraded database, a saturated downstream of its own).",
			"The dependency became permanently slower under full load; the limiter does not raise its baseline while callers press against the limit, by design, so it keeps the limit low until load drops.",
			"The minimum is set too high for the dependency's real capacity (then the limit would sit there without rejections).",
		},
		queries: func(r *resolved, s settings) []query {
			return []query{
				{"Limit, minimum and in-flight:", r.nameSel(r.name(catalog.LimiterLimit)) + "\nor " + r.nameSel(r.name(catalog.LimiterMinLimit)) + "\nor " + r.nameSel(r.name(catalog.LimiterInflight))},
				{"Sample latency against the baseline:", r.nameSel(r.name(catalog.LimiterSampleLatency)) + "\n/\n" + r.nameSel(r.name(catalog.LimiterBaselineLatency))},
			}
		},
		panels: []panel{{rowLimits, "Limit vs in-flight"}, {rowLimits, "Latency vs baseline"}, {rowLimits, "Limiter rejection ratio"}},
		mitigation: []string{
			"Treat it as a dependency incident first: check the dependency's own dashboards and its latency under low load.",
			"If the dependency is healthy but permanently slower (a new release, a bigger payload), restart the process during low load so the limiter learns the new baseline, or lower the offered load briefly.",
			"Do not raise MinLimit to silence it: that sends more concurrency into a dependency that is already slow.",
		},
	},
	AlertLimiterSaturated: {
		meaning: "On the busiest instance, more than the configured share of the adaptive limit has been in use, on average over the last {window words}, for the `for` duration. The limiter is the bottleneck: demand meets what the dependency serves at its normal latency.",
		impact:  "None yet, or a few rejections; the next burst is rejected rather than queued at the dependency.",
		causes: []string{
			"Traffic grew towards the dependency's capacity.",
			"The dependency got slower, so each call holds its permit longer and the limit shrank.",
		},
		queries: func(r *resolved, s settings) []query {
			return []query{{"Utilisation per instance:", r.nameSel(r.name(catalog.LimiterInflight)) + "\n/\n" + r.nameSel(r.name(catalog.LimiterLimit))}}
		},
		panels: []panel{{rowLimits, "Limit vs in-flight"}, {rowLimits, "Latency vs baseline"}},
		mitigation: []string{
			"Scale the dependency if the traffic is legitimate: the limiter follows its capacity.",
			"Shed or defer low-priority traffic before it reaches the limiter.",
		},
	},
	AlertLimiterRejectionsHigh: {
		meaning: "More than the configured share of calls were rejected by the adaptive limiter over the last {window words}, for the `for` duration, with at least a minimum call rate. Offered load exceeds what the dependency serves at close to its no-load latency.",
		impact:  "Users see the rejected calls as errors (or fallbacks answering `bulkhead_full`); the calls that pass keep a normal latency.",
		causes: []string{
			"A traffic spike or a retry storm upstream.",
			"The dependency lost capacity (fewer replicas, a slow node), so the limit shrank.",
		},
		queries: func(r *resolved, s settings) []query {
			return []query{
				{"Rejections by reason:", "sum by (reason) (rate(" + r.rangeOf(r.nameSel(r.name(catalog.LimiterRejections))) + "))"},
				{"Limit and in-flight:", r.nameSel(r.name(catalog.LimiterLimit)) + "\nor " + r.nameSel(r.name(catalog.LimiterInflight))},
			}
		},
		panels: []panel{{rowLimits, "Limiter rejection ratio"}, {rowLimits, "Limiter rejections by reason"}, {rowLimits, "Limit vs in-flight"}},
		mitigation: []string{
			"Find where the extra load comes from (retries, a batch job) and stop it at the source.",
			"Add capacity to the dependency; the limit grows with it by itself.",
			"If short bursts are the problem, give the limiter a short queue (MaxWait) instead of rejecting at once.",
		},
	},
	AlertLimiterBaselineDrift: {
		meaning: "The limiter's baseline — its estimate of the dependency's latency without queueing — is more than the configured multiple of its lowest value in the last hour, for the `for` duration. The baseline only rises from windows in which the limiter's own load cannot explain the latency, so the dependency itself became slower.",
		impact:  "None directly; the limiter now accepts a higher latency as normal, and the service's own latency rises with it.",
		causes: []string{
			"A release or configuration change of the dependency made it slower.",
			"The requests changed (bigger payloads, a different mix).",
		},
		queries: func(r *resolved, s settings) []query {
			return []query{{"Baseline and sample latency:", r.nameSel(r.name(catalog.LimiterBaselineLatency)) + "\nor " + r.nameSel(r.name(catalog.LimiterSampleLatency))}}
		},
		panels: []panel{{rowLimits, "Latency vs baseline"}},
		mitigation: []string{
			"Check the dependency's recent changes; roll back if the slowdown is not intended.",
			"If it is intended, nothing to do: the limiter has followed it.",
		},
	},
	AlertThrottleShedding: {
		meaning: "The client-side throttle has been shedding requests locally for the `for` duration: over its window the dependency accepted less than 1/K of the requests (K = 2 by default), so the throttle drops new requests with probability max(0, (requests − K·accepts)/(requests + 1)) instead of sending them.",
		impact:  "Shed requests fail at once with `throttle.ErrThrottled` (or a fallback); they would most likely have been refused by the dependency anyway.",
		causes: []string{
			"The dependency is overloaded or down and answers with 429/5xx or times out.",
			"A quota or rate limit of the dependency was lowered.",
		},
		queries: func(r *resolved, s settings) []query {
			return []query{{"Outcomes:", "sum by (kind) (rate(" + r.rangeOf(r.nameSel(r.name(catalog.ThrottleCalls))) + "))"}}
		},
		panels: []panel{{rowLimits, "Throttle shedding probability"}, {rowLimits, "Throttle outcomes"}},
		mitigation: []string{
			"Treat it as the dependency's incident; the throttle protects it while it recovers and stops shedding as soon as it accepts again.",
			"Check for a lowered quota on the dependency's side.",
		},
	},
}
