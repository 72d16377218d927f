package rules

import (
	"fmt"
	"math"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// The hedges' alerts live in their own group and file: the specs, the promtool scenarios and
// the runbooks below, registered into the generator's tables by init. Each reads the two hedge
// counters once per rate() (a hedge has 6 series), so they need no recorded series of their own.
const GroupHedge = "stormwatch-hedge"

// The hedge alerts.
const (
	AlertHedgeExtraLoadHigh   = "HedgeExtraLoadHigh"
	AlertHedgesRarelyWinning  = "HedgesRarelyWinning"
	AlertHedgeBudgetExhausted = "HedgeBudgetExhausted"
)

func init() {
	GroupNames = append(GroupNames, GroupHedge)
	specs = append(specs, hedgeSpecs...)
	for name, f := range hedgeScenarios {
		scenarios[name] = f
	}
}

// hedgesRan is the per-second rate of hedges that ran (won, lost or cancelled): the extra
// attempts hedging sent to the dependency.
func (r *resolved) hedgesRan() string {
	return r.hedgeRate(catalog.HedgeWon, catalog.HedgeLost, catalog.HedgeCancelled)
}

// hedgeRate is the per-second rate of hedges with one of outcomes, by dependency.
func (r *resolved) hedgeRate(outcomes ...catalog.HedgeOutcome) string {
	names := make([]string, len(outcomes))
	for i, o := range outcomes {
		names[i] = o.String()
	}
	m := eq(catalog.LabelOutcome, names[0])
	if len(names) > 1 {
		m = re(catalog.LabelOutcome, names...)
	}
	return fmt.Sprintf("sum by (%s) (rate(%s))", r.by(false), r.rangeOf(r.sel(r.name(catalog.HedgeAttempts), m)))
}

var hedgeSpecs = []alertSpec{
	{
		name: AlertHedgeExtraLoadHigh, group: GroupHedge, severity: "warning",
		threshold: 0.1, bounds: bounds{min: 0, max: 10, minOpen: true},
		thresholdDoc: "extra load from hedging: hedges that ran (won, lost or cancelled) per call over the {window} window",
		forDur:       15 * time.Minute,
		summary:      "Hedging adds a lot of load to %s.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			calls := fmt.Sprintf("sum by (%s) (rate(%s))", r.by(false), r.rangeOf(r.sel(r.name(catalog.HedgeCalls))))
			return fmt.Sprintf("%s\n/\n%s\n> %s%s", r.hedgesRan(), calls, num(s.threshold), r.floor(r.hedgesRan()))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Hedge %s sent %s extra attempts per call to the dependency over the last %s (threshold %s, at least %d hedges), for %s: more calls than usual outlast the hedge delay (the dependency's latency tail grew), or the delay is too short for its latency.",
				r.subject(false, a.ref), a.value, r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertHedgesRarelyWinning, group: GroupHedge, severity: "info",
		threshold: 0.2, bounds: bounds{min: 0, max: 1, minOpen: true},
		thresholdDoc: "share (0..1) of the hedges that ran over the {window} window whose answer was the call's: won / (won + lost + cancelled)",
		forDur:       15 * time.Minute,
		summary:      "Hedges of %s rarely win: their load is wasted.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			return fmt.Sprintf("%s\n/\n%s\n< %s%s", r.hedgeRate(catalog.HedgeWon), r.hedgesRan(), num(s.threshold), r.floor(r.hedgesRan()))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("Only %s of the hedges of %s won over the last %s (threshold %s, at least %d hedges), for %s: the others failed or were cancelled when the first attempt answered — load the dependency served for nothing. Its slow calls are slow whatever attempt serves them, or the hedge delay is too short.",
				a.value, r.subject(false, a.ref), r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
	{
		name: AlertHedgeBudgetExhausted, group: GroupHedge, severity: "warning",
		threshold: 0.1, bounds: bounds{min: 0, max: 1, maxOpen: true},
		thresholdDoc: "share (0..1) of the hedges due over the {window} window that the budget refused: budget_denied / all hedges",
		forDur:       10 * time.Minute,
		summary:      "Hedge budget of %s is exhausted.",
		value:        valuePercent,
		expr: func(r *resolved, s settings) string {
			all := fmt.Sprintf("sum by (%s) (rate(%s))", r.by(false), r.rangeOf(r.sel(r.name(catalog.HedgeAttempts))))
			denied := r.hedgeRate(catalog.HedgeBudgetDenied)
			return fmt.Sprintf("%s\n/\n%s\n> %s%s", denied, all, num(s.threshold), r.floor(denied))
		},
		description: func(r *resolved, s settings, a descArgs) string {
			return fmt.Sprintf("The budget refused %s of the hedges %s was due to start over the last %s (threshold %s, at least %d refusals), for %s: calls in the latency tail go unhedged. In a pipeline the budget is the retry's, so retries may have spent it.",
				a.value, r.subject(false, a.ref), r.window(), pct(s.threshold), MinEvents, FormatDuration(s.forDur))
		},
	},
}

var hedgeScenarios = map[string]func(c *scenario) ([]testCase, error){
	AlertHedgeExtraLoadHigh: func(c *scenario) ([]testCase, error) {
		// Per perStep hedged calls, hedges hedges (at least twice the volume floor in one step).
		hedges := math.Max(math.Floor(2*c.s.threshold*perStep)+1, 2*MinEvents)
		build := func(end time.Duration, hedged, plain func(time.Duration) float64) []*track {
			return []*track{
				c.counter(catalog.HedgeCalls, end, func(t time.Duration) float64 { return hedged(t) + plain(t) }),
				c.counter(catalog.HedgeAttempts, end, func(t time.Duration) float64 { return hedged(t) / perStep * hedges },
					catalog.LabelOutcome, catalog.HedgeWon.String()),
			}
		}
		out := trafficScenarios(c, build, perStep, step,
			fmt.Sprintf("fires at %s hedges per call", fnum(hedges/perStep)),
			fmt.Sprintf("a 15s blip of %s hedges per call does not fire", fnum(hedges/perStep)), c.r.rateWindow, c.r.rateWindow)
		// A trickle of calls, each hedged more than the threshold allows, too few hedges per
		// window for the minimum volume (no such trickle exists when one call's hedges reach it).
		th := math.Floor(c.s.threshold) + 1
		if th >= MinEvents/2 {
			return out, nil
		}
		p := tricklePeriod(c, th)
		return append(out, trickle(c, fmt.Sprintf("a trickle (one call every %s, %s hedges per call) stays silent", FormatDuration(p), fnum(th)),
			[]*track{
				c.counter(catalog.HedgeCalls, trickleEnd, every(t0+step, p, 1, 0)),
				c.counter(catalog.HedgeAttempts, trickleEnd, every(t0+step, p, th, 0), catalog.LabelOutcome, catalog.HedgeWon.String()),
			})), nil
	},
	AlertHedgesRarelyWinning: func(c *scenario) ([]testCase, error) {
		won := math.Floor(c.s.threshold * perStep / 2)
		build := func(end time.Duration, wasted, won func(time.Duration) float64) []*track {
			return []*track{
				c.counter(catalog.HedgeAttempts, end, won, catalog.LabelOutcome, catalog.HedgeWon.String()),
				c.counter(catalog.HedgeAttempts, end, wasted, catalog.LabelOutcome, catalog.HedgeCancelled.String()),
			}
		}
		out := trafficScenarios(c, build, perStep-won, step,
			fmt.Sprintf("fires when only %s of hedges win", pct(won/perStep)),
			"a 15s blip in which no hedge wins does not fire", c.r.rateWindow, c.r.rateWindow)
		// A trickle of hedges, none of them winning — below the minimum volume.
		p := tricklePeriod(c, 1)
		return append(out, trickle(c, fmt.Sprintf("a trickle (one hedge every %s, none winning) stays silent", FormatDuration(p)),
			build(trickleEnd, every(t0+step, p, 1, 0), zero))), nil
	},
	AlertHedgeBudgetExhausted: func(c *scenario) ([]testCase, error) {
		// bad are hedges refused, good hedges that ran.
		build := func(end time.Duration, bad, good func(time.Duration) float64) []*track {
			return []*track{
				c.counter(catalog.HedgeAttempts, end, good, catalog.LabelOutcome, catalog.HedgeWon.String()),
				c.counter(catalog.HedgeAttempts, end, bad, catalog.LabelOutcome, catalog.HedgeBudgetDenied.String()),
			}
		}
		bad := shareAbove(c.s.threshold)
		out := trafficScenarios(c, build, bad, step,
			fmt.Sprintf("fires when the budget refuses %s of the hedges due", pct(bad/perStep)),
			"a 15s blip in which every hedge is refused does not fire", c.r.rateWindow, c.r.rateWindow)
		// Refusals at half the threshold's share, far above the minimum volume.
		below := math.Floor(c.s.threshold * perStep / 2)
		return append(out, trickle(c, fmt.Sprintf("a steady %s of hedges refused (below the threshold) stays silent", pct(below/perStep)),
			build(trickleEnd, when(t0+step, forever, below, 0), when(t0+step, forever, perStep-below, 0)))), nil
	},
}

// trickleEnd is the end of the series of a case built by trickle.
const trickleEnd = 31 * time.Minute

// tricklePeriod is the period of a trickle of calls that bring perCall events each: at least a
// minute, and long enough that a rate window holds at most half the minimum volume.
func tricklePeriod(c *scenario, perCall float64) time.Duration {
	return max(time.Minute, ceilStep(time.Duration(float64(c.r.rateWindow)*perCall*2/MinEvents)))
}

// trickle is a case in which the alert stays silent for 30 minutes.
func trickle(c *scenario, desc string, tracks []*track) testCase {
	return testCase{name: c.name("%s", desc), tracks: tracks, checks: silent(10*time.Minute, 20*time.Minute, 30*time.Minute)}
}

// hedgeValue is the alert's value at time at, as the rule computes it from the scenario's series.
func hedgeValue(c *scenario, tracks []*track, at time.Duration) (float64, bool) {
	w := c.r.rateWindow
	rate := func(o catalog.HedgeOutcome) float64 {
		return sumRate(tracks, at, w, catalog.HedgeAttempts, catalog.LabelOutcome, o.String())
	}
	ran := rate(catalog.HedgeWon) + rate(catalog.HedgeLost) + rate(catalog.HedgeCancelled)
	switch c.sp.name {
	case AlertHedgeExtraLoadHigh:
		return ran / sumRate(tracks, at, w, catalog.HedgeCalls), true
	case AlertHedgesRarelyWinning:
		return rate(catalog.HedgeWon) / ran, true
	case AlertHedgeBudgetExhausted:
		d := rate(catalog.HedgeBudgetDenied)
		return d / (d + ran), true
	}
	return 0, false
}
