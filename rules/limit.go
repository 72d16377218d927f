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
}

var limitSpecs = []alertSpec{
	{
		name: AlertLimiterPinnedAtMinimum, group: GroupLimit, perInstance: true, severity: "warning",
		threshold: 1, bounds: bounds{min: 1, max: 10},
		thresholdDoc: "multiple of the limiter's configured minimum at or below which its limit counts as pinned",
		forDur:       10 * time.Minute,
		summary:      "Adaptive limiter %s is pinned at its minimum.",
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
		summary:      "Adaptive limiter %s is running at its limit.",
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
		summary:      "Adaptive limiter %s is rejecting calls.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			g := r.by(false)
			all := fmt.Sprintf("sum by (%s) (rate(%s))", g, r.rangeOf(r.sel(r.name(catalog.LimiterCalls))))
			rej := fmt.Sprintf("sum by (%s) (rate(%s))", g, r.rangeOf(r.sel(r.name(catalog.LimiterCalls), eq(catalog.LabelKind, catalog.AdmissionRejected.String()))))
			// The calls are rated once: kept where they reach the floor, they divide the rejections.
			return fmt.Sprintf("%s\n/\n(%s >= %s)\n> %s", rej, all, num(LimiterRejectionFloor), num(s.threshold))
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
		summary:      "Adaptive limiter %s has a rising latency baseline.",
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
		summary:      "Client-side throttle %s is shedding requests.",
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
