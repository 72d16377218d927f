package rules

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// The scenario builders of the generated promtool tests, per alert.
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
	AlertDependencyOutage:       outageScenarios,
	AlertRetryStormContained:    containedScenarios,
}

// kind is the label pair of a kind label value.
func kind(k fmt.Stringer) []string { return []string{catalog.LabelKind, k.String()} }

// value is the alert's value at time at, computed from the input series as the rule computes
// it (for the alerts whose scenarios do not set it).
func (c *scenario) value(tracks []*track, at time.Duration) float64 {
	w := c.r.rateWindow
	rate := func(m catalog.Metric, match ...string) float64 { return sumRate(tracks, at, w, m, match...) }
	switch c.sp.name {
	case AlertRejectingCalls:
		np := rate(catalog.BreakerNotPermitted)
		return np / (rate(catalog.BreakerCalls) + np)
	case AlertRetryRateHigh, AlertRetryRateSpike:
		return rate(catalog.RetryAttempts) / rate(catalog.RetryCalls)
	case AlertRetryBudgetExhausted:
		d := rate(catalog.RetryBudgetDenied)
		return d / (d + rate(catalog.RetryAttempts))
	case AlertDependencyOutage:
		failed := rate(catalog.RetryCalls, kind(catalog.RetryFailedWithRetry)...) + rate(catalog.RetryCalls, kind(catalog.RetryFailedWithoutRetry)...)
		calls := rate(catalog.RetryCalls)
		if len(selectTracks(tracks, catalog.RetryCalls)) == 0 {
			np := rate(catalog.BreakerNotPermitted)
			failed, calls = rate(catalog.BreakerCalls, kind(catalog.CallFailed)...)+np, rate(catalog.BreakerCalls)+np
		}
		return max(failed-rate(catalog.FallbackCalls), 0) / calls
	case AlertRetryStormContained:
		return (rate(catalog.RetryAttempts) + rate(catalog.RetryBudgetDenied)) / rate(catalog.RetryCalls)
	case AlertRetriesNotRescuing:
		ok := rate(catalog.RetryCalls, kind(catalog.RetrySuccessfulWithRetry)...)
		return ok / (ok + rate(catalog.RetryCalls, kind(catalog.RetryFailedWithRetry)...))
	case AlertBulkheadRejectionsHigh:
		return rate(catalog.BulkheadCalls, kind(catalog.AdmissionRejected)...) / rate(catalog.BulkheadCalls)
	case AlertBulkheadSaturated:
		return maxAvg(tracks, at, w, catalog.BulkheadInflight) / maxLast(tracks, at, w, catalog.BulkheadMaxConcurrent)
	case AlertFallbackSustained:
		return rate(catalog.FallbackCalls)
	case AlertSlowCallRateHigh:
		return maxLast(tracks, at, w, catalog.BreakerSlowCallRate)
	case AlertFlapping:
		return sumIncrease(tracks, at, flappingWindow, catalog.BreakerTransitions, closedToOpen...)
	}
	if v, ok := limitValue(c, tracks, at); ok {
		return v
	}
	if v, ok := hedgeValue(c, tracks, at); ok {
		return v
	}
	panic("rules: no value for the checks of " + c.sp.name)
}

// --- alerts on counters and gauges: one set of cases each ---

// trafficBuild builds the series of an alert on counters from the number of bad and good
// events at each step.
type trafficBuild func(end time.Duration, bad, good func(time.Duration) float64) []*track

// trafficScenarios are the cases of an alert on counters: bad traffic starts at t0 + step (so
// ratios of two counters are exact from the first increment on); the blip is one step of bad
// traffic amid good traffic; idle has no traffic; low traffic is one call a minute and a single
// bad event; recovery turns all traffic good; restarts reset the counters and miss scrapes; a
// failed scrape; the target disappears. window is the alert's own window (how long a
// disappeared target's samples still count).
func trafficScenarios(c *scenario, build trafficBuild, badPerStep float64, condSureLag time.Duration,
	fireDesc, blipDesc string, clearLag, window time.Duration) []testCase {
	start := t0 + step // first sample with an increment
	steady := func(to time.Duration, after float64) func(time.Duration) []*track {
		return func(end time.Duration) []*track {
			return build(end, when(start, to, badPerStep, 0), func(t time.Duration) float64 {
				return max(when(start, to, perStep-badPerStep, 0)(t), when(to, forever, after, 0)(t))
			})
		}
	}
	fire := c.fires(start, start+condSureLag)
	bt, lt := 5*time.Minute, start+2*time.Minute
	idle := start + condSureLag + c.forDur()
	recover := idle + time.Minute
	gone := lastCheck(fire) + time.Minute
	out := []testCase{
		c.tc(fireDesc, fire, steady(forever, 0)),
		c.tc(blipDesc, silent(bt+time.Minute, bt+c.forDur(), bt+c.forDur()+2*time.Minute), func(end time.Duration) []*track {
			return build(end, when(bt, bt+step, perStep, 0), when(bt, bt+step, 0, perStep))
		}),
		c.tc("idle (no calls) does not fire", silent(idle, idle+10*time.Minute), func(end time.Duration) []*track { return build(end, zero, zero) }),
		c.tc("low traffic (one call a minute): a single bad event does not fire", silent(lt, lt+step, lt+window/2, lt+c.forDur(), lt+window+c.forDur()+step),
			func(end time.Duration) []*track {
				return build(end, when(lt, lt+step, 1, 0), every(start, time.Minute, 1, 0))
			}),
		c.tc("resolves after recovery", slices.Concat(fire, c.resolves(recover, recover+clearLag)), steady(recover, perStep)),
	}
	if window >= 4*step {
		out = append(out, trafficGapScenarios(c, steady(forever, 0), condSureLag, window, fire)...)
	}
	goneChecks := slices.Concat(fire, []check{{at: gone - step, firing: true}, {at: ceilStep(gone+window+c.keep()) + step}})
	return append(out, c.tc(fmt.Sprintf("resolves within its window (%s) when the target disappears", FormatDuration(window)), goneChecks,
		func(end time.Duration) []*track {
			tracks := steady(forever, 0)(end)
			disappear(gone, tracks...)
			return tracks
		}))
}

// trafficGapScenarios are the cases of an alert on counters with scrapes missing: restarts
// (one while pending, one while firing; each resets the counters and misses two scrapes) and
// one failed scrape while pending. A window of fewer than four scrapes cannot ride out missed
// scrapes (a rate needs two samples in it): those cases need a wider window.
func trafficGapScenarios(c *scenario, build func(time.Duration) []*track, condSureLag, window time.Duration, fire []check) []testCase {
	start, firing, gap := t0+step, lastCheck(fire), 2*step
	// The first restart while pending, but not before the counters have grown past what the new
	// process counts by its first scrape (or the reset would go unnoticed: a real process has
	// been counting for far longer).
	r1 := max(start+condSureLag+ceilStep(c.forDur()/2), start+5*step)
	r2 := firing + time.Minute
	restarts := sortChecks(slices.Concat(fire, firingAt(r2-step, r2, r2+step, r2+gap, r2+gap+window)))
	return []testCase{
		c.tc(fmt.Sprintf("fires on time and keeps firing through process restarts at %s and %s (counters reset, two missed scrapes each)", FormatDuration(r1), FormatDuration(r2)),
			restarts, func(end time.Duration) []*track { return restarted(build(end), r1, r2, gap) }),
		c.tc(fmt.Sprintf("fires on time although one scrape failed at %s while it was pending", FormatDuration(r1)),
			sortChecks(append(slices.Clone(fire), check{at: max(r1, firing), firing: true})),
			func(end time.Duration) []*track { tracks := build(end); failScrape(r1, tracks...); return tracks }),
	}
}

// restarted restarts the process of tracks at r1 (unless that overlaps r2) and at r2.
func restarted(tracks []*track, r1, r2, gap time.Duration) []*track {
	if r1+gap < r2 {
		restart(r1, gap, tracks...)
	}
	restart(r2, gap, tracks...)
	return tracks
}

// bridges says whether the gauge lookback rides out n missed scrapes at the tests' sampling
// (every step): the cases with failed scrapes and restarts need it. With scrapes faster than
// the tests sample (a scrape_interval under 15s) those cases cannot be modelled and are left out.
func (c *scenario) bridges(n int) bool { return c.r.gaugeLookback > time.Duration(n)*step }

// goneBy is when an alert on gauges has surely resolved after its target disappeared at g (a
// stale marker at g, nothing after): the gauge lookback no longer holds the last sample, one
// evaluation later, after keep_firing_for.
func (c *scenario) goneBy(g time.Duration) time.Duration {
	return ceilStep(g-step+c.r.gaugeLookback+c.keep()) + step
}

// gaugeScenarios are the cases of an alert on a gauge that is high from t0 on.
//
// lag is how long after t0 the condition is surely true (0 for a gauge read as it is; for one
// averaged over the rate window, until the average crosses the threshold), clearLag how long
// after the recovery it is surely false again.
func gaugeScenarios(c *scenario, build func(end time.Duration, v func(time.Duration) float64) []*track,
	high, low, idleValue float64, lag, clearLag time.Duration, fireDesc, blipDesc, idleDesc string) []testCase {
	high1 := func(from, to time.Duration) func(time.Duration) []*track {
		return func(end time.Duration) []*track { return build(end, when(from, to, high, low)) }
	}
	fire := c.fires(t0+lag, t0+lag)
	firing := lastCheck(fire)
	quiet := silent(t0, t0+c.forDur(), t0+c.forDur()+5*time.Minute) // during the blip, too
	recover := firing + time.Minute
	out := []testCase{
		c.tc(fireDesc, fire, high1(t0, forever)),
		// A blip must not outlive the window through last_over_time: the next sample replaces it.
		c.tc(blipDesc, quiet, high1(t0, t0+step)),
		c.tc(idleDesc, quiet, func(end time.Duration) []*track { return build(end, func(time.Duration) float64 { return idleValue }) }),
		c.tc("resolves after recovery", slices.Concat(fire, c.resolves(recover, recover+clearLag)), high1(t0, recover)),
	}
	// A failed scrape and restarts: the gauges are read over three scrape intervals, which must
	// hold more than the missed scrapes at the tests' sampling.
	if c.bridges(2) {
		fs, gap, r2 := t0+lag+ceilStep(c.forDur()/2), 2*step, firing+time.Minute
		out = append(out,
			c.tc(fmt.Sprintf("fires on time although one scrape failed at %s while it was pending", FormatDuration(fs)),
				sortChecks(append(slices.Clone(fire), check{at: max(fs, firing), firing: true})),
				func(end time.Duration) []*track {
					tracks := high1(t0, forever)(end)
					failScrape(fs, tracks...)
					return tracks
				}),
			c.tc(fmt.Sprintf("fires on time and keeps firing through process restarts at %s and %s (two missed scrapes each)", FormatDuration(fs), FormatDuration(r2)),
				sortChecks(slices.Concat(fire, firingAt(r2-step, r2, r2+step, r2+gap, r2+gap+time.Minute))),
				func(end time.Duration) []*track { return restarted(high1(t0, forever)(end), fs, r2, gap) }))
	}
	return append(out, c.goneCase(fire, firing+time.Minute, "target disappears", high1(t0, forever)))
}

// goneCase is the case of a firing alert on gauges whose target disappears at gone.
func (c *scenario) goneCase(fire []check, gone time.Duration, what string, build func(time.Duration) []*track) testCase {
	return c.tc(fmt.Sprintf("resolves within 2× the scrape interval and one evaluation (%s) when the %s", FormatDuration(c.goneBy(gone)-gone), what),
		slices.Concat(fire, []check{{at: gone - step, firing: true}, {at: c.goneBy(gone)}}),
		func(end time.Duration) []*track { tracks := build(end); disappear(gone, tracks...); return tracks })
}

// twoCounters builds the bad and good events as two counters (m and its label pairs each).
func twoCounters(c *scenario, bad catalog.Metric, badLabels []string, good catalog.Metric, goodLabels []string) trafficBuild {
	return func(end time.Duration, b, g func(time.Duration) float64) []*track {
		return []*track{c.counter(good, end, g, goodLabels...), c.counter(bad, end, b, badLabels...)}
	}
}

// onRates are the traffic cases of an alert on a rate over the rate window, firing from the
// first step of bad traffic.
func onRates(c *scenario, build trafficBuild, bad float64, fireDesc, blipDesc string) []testCase {
	return trafficScenarios(c, build, bad, step, fireDesc, blipDesc, c.r.rateWindow, c.r.rateWindow)
}

func rejectingCallsScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	return onRates(c, twoCounters(c, catalog.BreakerNotPermitted, nil, catalog.BreakerCalls, kind(catalog.CallSuccessful)), bad,
		fmt.Sprintf("fires when %s of calls are rejected", pct(bad/perStep)), "a 15s blip rejecting every call does not fire"), nil
}

func bulkheadRejectionScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	build := twoCounters(c, catalog.BulkheadCalls, kind(catalog.AdmissionRejected), catalog.BulkheadCalls, kind(catalog.AdmissionPermitted))
	// A trickle: one call a minute, every fourth one rejected — a high share, but below the
	// minimum volume.
	trickle := silent(10*time.Minute, 20*time.Minute, 30*time.Minute)
	return append(onRates(c, build, bad, fmt.Sprintf("fires when %s of calls are rejected", pct(bad/perStep)), "a 15s blip rejecting every call does not fire"),
		c.tc("a trickle (one call a minute, one rejected every 4m) never pages", trickle, func(end time.Duration) []*track {
			return build(end, every(t0+step+4*time.Minute, 4*time.Minute, 1, 0), every(t0+step, time.Minute, 1, 0))
		})), nil
}

// notRescuingScenarios: the "good" calls are rescued retries here, so the blip is a 15s burst
// of retried calls that all fail amid calls that were all rescued.
func notRescuingScenarios(c *scenario) ([]testCase, error) {
	rescued := math.Floor(c.s.threshold * perStep / 2)
	return onRates(c, twoCounters(c, catalog.RetryCalls, kind(catalog.RetryFailedWithRetry), catalog.RetryCalls, kind(catalog.RetrySuccessfulWithRetry)), perStep-rescued,
		fmt.Sprintf("fires when only %s of retried calls are rescued", pct(rescued/perStep)), "a 15s blip in which no retried call is rescued does not fire"), nil
}

func retryRateHighScenarios(c *scenario) ([]testCase, error) {
	// Per perStep retried calls; at least twice the volume floor within one step.
	attempts := math.Max(math.Floor(2*c.s.threshold*perStep)+1, 2*MinEvents)
	build := func(end time.Duration, retried, plain func(time.Duration) float64) []*track {
		return []*track{
			c.counter(catalog.RetryCalls, end, func(t time.Duration) float64 { return retried(t) + plain(t) }, kind(catalog.RetrySuccessfulWithRetry)...),
			c.counter(catalog.RetryAttempts, end, func(t time.Duration) float64 { return retried(t) / perStep * attempts }),
		}
	}
	return onRates(c, build, perStep, fmt.Sprintf("fires at %s extra attempts per call", fnum(attempts/perStep)),
		fmt.Sprintf("a 15s blip of %s extra attempts per call does not fire", fnum(attempts/perStep))), nil
}

func budgetScenarios(c *scenario) ([]testCase, error) {
	// bad are retries refused, good retries made.
	build := twoCounters(c, catalog.RetryBudgetDenied, nil, catalog.RetryAttempts, nil)
	bad := shareAbove(c.s.threshold)
	out := onRates(c, build, bad,
		fmt.Sprintf("fires when the budget refuses %s of the retries wanted", pct(bad/perStep)), "a 15s blip in which every retry is refused does not fire")
	// One call a second in an outage: every call wants a retry, the budget lets one in eight
	// through. It fires within the for plus one evaluation of the outage's start.
	lowBad := math.Max(math.Floor(step.Seconds()*(c.s.threshold+(1-c.s.threshold)/2)), 1)
	if lowBad/step.Seconds() <= c.s.threshold || lowBad*c.r.rateWindow.Seconds()/step.Seconds() < 2*MinEvents {
		return out, nil
	}
	start := t0 + step
	fire := c.fires(start, start+ceilStep(time.Duration(float64(MinEvents)/lowBad*float64(step)))+step)
	return append(out, c.tc(fmt.Sprintf("at one call a second, fires within %s of an outage's start", FormatDuration(lastCheck(fire)-start)), fire,
		func(end time.Duration) []*track {
			return build(end, when(start, forever, lowBad, 0), when(start, forever, step.Seconds()-lowBad, 0))
		})), nil
}

func fallbackScenarios(c *scenario) ([]testCase, error) {
	calls := math.Ceil((2*c.s.threshold + 1) * step.Seconds())
	build := func(end time.Duration, bad, _ func(time.Duration) float64) []*track {
		return []*track{c.counter(catalog.FallbackCalls, end, func(t time.Duration) float64 { return math.Ceil(bad(t)/perStep) * calls },
			catalog.LabelCause, catalog.CauseCircuitOpen.String())}
	}
	lag := step
	if c.s.threshold > 0 {
		lag = c.r.rateWindow + step // the rate over the rate window ramps up
	}
	return trafficScenarios(c, build, perStep, lag, fmt.Sprintf("fires when fallbacks run at %s/s continuously", fnum(calls/step.Seconds())),
		"a 15s blip of fallbacks does not fire", c.r.rateWindow, c.r.rateWindow), nil
}

func saturatedScenarios(c *scenario) ([]testCase, error) {
	const permits = 10
	build := func(end time.Duration, inflight func(time.Duration) float64) []*track {
		return []*track{
			c.gauge(catalog.BulkheadMaxConcurrent, end, func(time.Duration) float64 { return permits }),
			c.gauge(catalog.BulkheadInflight, end, inflight),
		}
	}
	return gaugeScenarios(c, build, permits, 0, 0, saturationLag(c, build, catalog.BulkheadInflight, permits), c.r.rateWindow,
		"fires when every permit is in use", "a 15s blip with every permit in use does not fire", "idle (no calls in flight) does not fire"), nil
}

// saturationLag is how long after t0 the utilisation averaged over the rate window crosses the
// threshold once all of capacity is in use from t0 on (fewer samples than the window holds
// at first, while the window still reaches back before the first sample).
func saturationLag(c *scenario, build func(time.Duration, func(time.Duration) float64) []*track, inflight catalog.Metric, capacity float64) time.Duration {
	probe := build(t0+c.r.rateWindow+time.Minute, when(t0, forever, capacity, 0))
	lag := time.Duration(0)
	for maxAvg(probe, t0+lag, c.r.rateWindow, inflight)/capacity <= c.s.threshold {
		lag += step
	}
	return lag
}

func slowCallScenarios(c *scenario) ([]testCase, error) {
	const breakerThreshold = 0.5
	high := breakerThreshold * (c.s.threshold + (1-c.s.threshold)/2)
	if c.s.threshold == 1 {
		high = 0.6
	}
	build := func(end time.Duration, rate func(time.Duration) float64) []*track {
		return []*track{
			c.gauge(catalog.BreakerSlowCallRateThreshold, end, func(time.Duration) float64 { return breakerThreshold }),
			c.gauge(catalog.BreakerSlowCallRate, end, rate),
		}
	}
	return gaugeScenarios(c, build, high, 0, math.NaN(), 0, 0,
		fmt.Sprintf("fires at a slow-call rate of %s against a threshold of %s", fnum(high), fnum(breakerThreshold)),
		"a 15s blip of slow calls does not fire", "idle (rate NaN below the minimum number of calls) does not fire"), nil
}

func retryRateSpikeScenarios(c *scenario) ([]testCase, error) {
	const base = 4.0 // attempts per perStep calls: 0.4%
	spike := math.Floor(max(2*c.s.threshold*base, 2*RetrySpikeFloor*perStep)) + 1
	w := c.r.rateWindow
	calls := func(end time.Duration, n float64, attempts func(time.Duration) float64) []*track {
		return []*track{c.counter(catalog.RetryCalls, end, func(time.Duration) float64 { return n }, kind(catalog.RetrySuccessfulWithoutRetry)...),
			c.counter(catalog.RetryAttempts, end, attempts)}
	}
	attempts := func(f func(time.Duration) float64) func(time.Duration) []*track {
		return func(end time.Duration) []*track { return calls(end, perStep, f) }
	}
	// jump at tS: the spike's checks; sure is when the rate over the rate window has caught up.
	jump := func(tS time.Duration) (start, sure time.Duration, cs []check) {
		return tS + step, tS + w + 2*step, c.fires(tS+step, tS+w+2*step)
	}
	tS := time.Hour + w + 5*time.Minute // over an hour (plus a rate window) of baseline first
	start, sure, fire := jump(tS)
	out := []testCase{c.tc(fmt.Sprintf("fires when the retry rate jumps from %s to %s extra attempts per call", fnum(base/perStep), fnum(spike/perStep)),
		fire, attempts(when(start, forever, spike, base)))}
	// The first hour: no value an hour earlier; the baseline is the data before the last
	// spikeEarlyOffset.
	if tF := spikeEarlyOffset(c.r, c.s) + 5*time.Minute; tF+w+2*step+c.forDur() < time.Hour {
		startF, _, fireF := jump(tF)
		out = append(out, c.tc(fmt.Sprintf("fires in the first hour of data (a jump at %s), against the average before the last %s", FormatDuration(tF), FormatDuration(spikeEarlyOffset(c.r, c.s))),
			fireF, attempts(when(startF, forever, spike, base))))
	}
	bt, idle := tS+5*time.Minute, silent(sure+c.forDur(), sure+c.forDur()+5*time.Minute)
	recover := sure + c.forDur() + time.Minute
	return append(out,
		c.tc("a 15s blip of 3 extra attempts per call does not fire", silent(bt+time.Minute, bt+c.forDur(), bt+c.forDur()+2*time.Minute),
			attempts(when(bt, bt+step, 3*perStep, base))),
		c.tc("idle (no calls) does not fire", idle, func(end time.Duration) []*track { return calls(end, 0, zero) }),
		c.tc("a steady high retry rate (no change since the data began, nor from an hour ago) does not fire",
			slices.Concat(silent(w+time.Minute, 20*time.Minute), idle), attempts(func(time.Duration) float64 { return 10 * spike })),
		c.tc("resolves once the retry rate is back to its baseline", slices.Concat(fire, c.resolves(recover, recover+w)),
			attempts(when(start, recover, spike, base)))), nil
}

func outageScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	// bad calls fail after their retries, good ones succeed; fallback (0 or 1) says whether a
	// fallback answers the failed ones.
	retry := func(fallback float64) trafficBuild {
		return func(end time.Duration, bad, good func(time.Duration) float64) []*track {
			return []*track{
				c.counter(catalog.RetryCalls, end, good, kind(catalog.RetrySuccessfulWithoutRetry)...),
				c.counter(catalog.RetryCalls, end, bad, kind(catalog.RetryFailedWithRetry)...),
				c.counter(catalog.FallbackCalls, end, func(t time.Duration) float64 { return fallback * bad(t) }, catalog.LabelCause, catalog.CauseRetriesExhausted.String()),
			}
		}
	}
	start := t0 + step
	fire := c.fires(start, start+step)
	from := func(n float64) func(time.Duration) float64 { return when(start, forever, n, 0) }
	return append(onRates(c, retry(0), bad, fmt.Sprintf("a job of one instance: fires when %s of calls fail and no fallback answers them", pct(bad/perStep)),
		"a 15s blip in which every call fails does not fire"),
		c.tc("contained: a fallback answers every failed call, no page", silent(lastCheck(fire), lastCheck(fire)+10*time.Minute),
			func(end time.Duration) []*track { return retry(1)(end, from(bad), from(perStep-bad)) }),
		// A breaker without a retry: failed and rejected calls count.
		c.tc("a breaker without a retry: fires on its failed and rejected calls", fire, func(end time.Duration) []*track {
			return []*track{c.counter(catalog.BreakerCalls, end, from(perStep-bad), kind(catalog.CallSuccessful)...),
				c.counter(catalog.BreakerCalls, end, from(bad/2), kind(catalog.CallFailed)...), c.counter(catalog.BreakerNotPermitted, end, from(bad-bad/2))}
		})), nil
}

func containedScenarios(c *scenario) ([]testCase, error) {
	// Per perStep calls, half made, half refused; at least twice the volume floor within one step.
	wanted := math.Max(math.Floor(2*c.s.threshold*perStep)+1, 2*MinEvents)
	start, w := t0+step, c.r.rateWindow
	stop := start + w + c.forDur() + 5*time.Minute
	// storm: retries wanted from start to to (made, refused); failed calls per step, answered by a
	// fallback or not.
	storm := func(to time.Duration, made, refused, failed, fallback float64) func(time.Duration) []*track {
		return func(end time.Duration) []*track {
			return []*track{
				c.counter(catalog.RetryCalls, end, when(start, forever, perStep-failed, 0), kind(catalog.RetrySuccessfulWithRetry)...),
				c.counter(catalog.RetryCalls, end, when(start, forever, failed, 0), kind(catalog.RetryFailedWithRetry)...),
				c.counter(catalog.RetryAttempts, end, when(start, to, made, 0)),
				c.counter(catalog.RetryBudgetDenied, end, when(start, to, refused, 0)),
				c.counter(catalog.FallbackCalls, end, when(start, forever, fallback*failed, 0), catalog.LabelCause, catalog.CauseRetriesExhausted.String()),
			}
		}
	}
	made, refused := math.Ceil(wanted/2), math.Floor(wanted/2)
	fire := c.fires(start, start+step)
	// While it is kept firing, the alert shows the last value above the threshold.
	stormTracks := storm(stop, made, refused, 0, 0)(ceilStep(stop+w+c.keep()) + 2*time.Minute)
	last := stop - step
	for c.value(stormTracks, last+step) > c.s.threshold {
		last += step
	}
	held := append(sortChecks(append(fire, firingAt(stop-step)...)),
		check{at: last + ceilStep(min(10*time.Minute, c.keep()/2)), firing: true, value: c.value(stormTracks, last), hasValue: true},
		check{at: ceilStep(last+c.keep()) + 2*step})
	quiet := silent(lastCheck(fire), lastCheck(fire)+5*time.Minute)
	// A blip once the window holds only steady traffic, half the threshold over the window.
	blip, bt := math.Min(perStep, math.Floor(c.s.threshold*perStep*float64(w/step)/2)), start+w+time.Minute
	return []testCase{
		{name: c.name("fires on a contained storm of %s retries wanted per call, holds %s after it, then resolves", fnum(wanted/perStep), FormatDuration(c.keep())),
			tracks: stormTracks, checks: held},
		c.tc("an outage (most calls failing without a fallback) is not a contained storm", quiet, storm(forever, made, refused, perStep/2, 0)),
		c.tc("fires when the failed calls are answered by a fallback (still contained)", fire, storm(forever, made, refused, perStep/2, 1)),
		c.tc(fmt.Sprintf("a 15s blip of %s retries per call does not fire", fnum(blip/perStep)), silent(bt, bt+c.forDur()+step, bt+w+c.forDur()),
			func(end time.Duration) []*track {
				tracks := storm(start, 0, 0, 0, 0)(end)
				tracks[2] = c.counter(catalog.RetryAttempts, end, when(bt, bt+step, blip, 0))
				return tracks
			}),
		c.tc("idle (no calls) does not fire", quiet, func(end time.Duration) []*track {
			return []*track{c.counter(catalog.RetryCalls, end, zero, kind(catalog.RetrySuccessfulWithRetry)...), c.counter(catalog.RetryAttempts, end, zero)}
		}),
	}, nil
}

// recordingTest feeds steady traffic to every recorded metric and checks the recorded values
// (×1000, rounded, so the comparison is exact).
func (r *resolved) recordingTest(lv map[string]string) testCase {
	c := &scenario{r: r, lv: lv}
	// Evaluated once the rate window holds only steady traffic (10m for the default 5m), and
	// the flapping window holds 15m of trips.
	at := max(20*time.Minute, r.rateWindow+5*time.Minute)
	end := at + time.Minute
	steady := func(m catalog.Metric, n float64, labels ...string) *track {
		return c.counter(m, end, func(time.Duration) float64 { return n }, labels...)
	}
	cause := []string{catalog.LabelCause, catalog.CauseCircuitOpen.String()}
	tc := testCase{name: "recording rules: expected values under steady traffic", tracks: []*track{
		steady(catalog.BreakerCalls, 1200, kind(catalog.CallSuccessful)...), steady(catalog.BreakerCalls, 300, kind(catalog.CallFailed)...),
		steady(catalog.BreakerNotPermitted, 500), c.counter(catalog.BreakerTransitions, end, every(time.Minute, time.Minute, 1, 0), closedToOpen...),
		steady(catalog.RetryCalls, 1200, kind(catalog.RetrySuccessfulWithoutRetry)...), steady(catalog.RetryCalls, 150, kind(catalog.RetrySuccessfulWithRetry)...),
		steady(catalog.RetryCalls, 150, kind(catalog.RetryFailedWithRetry)...), steady(catalog.RetryAttempts, 450), steady(catalog.RetryBudgetDenied, 60),
		steady(catalog.BulkheadCalls, 1470, kind(catalog.AdmissionPermitted)...), steady(catalog.BulkheadCalls, 30, kind(catalog.AdmissionRejected)...),
		steady(catalog.FallbackCalls, 150, cause...),
	}}
	agg := map[string]string{}
	for _, l := range r.labels(false) {
		agg[l] = lv[l]
	}
	expect := func(expr string, value float64, extra ...string) {
		labels := maps.Clone(agg)
		for i := 0; i+1 < len(extra); i += 2 {
			labels[extra[i]] = extra[i+1]
		}
		tc.exprs = append(tc.exprs, yamlExprTest{Expr: expr, EvalTime: FormatDuration(at),
			ExpSamples: []yamlSample{{Labels: seriesString("", labels), Value: value}}})
	}
	rec := func(name string, value float64, extra ...string) { expect("round(1000 * "+name+")", value, extra...) }
	byKind := func(name string, k fmt.Stringer, value float64) {
		rec(name+`{kind="`+k.String()+`"}`, value, kind(k)...)
	}
	// Calls per step / 15s × 1000.
	byKind(r.recBreakerCallsByKind(), catalog.CallFailed, 20000)
	rec(r.recBreakerCalls(), 100000)
	rec(r.recBreakerNotPermitted(), 33333)
	rec(r.recBreakerRejectionRatio(), 250)
	byKind(r.recRetryCallsByKind(), catalog.RetrySuccessfulWithoutRetry, 80000)
	byKind(r.recRetryCallsByKind(), catalog.RetrySuccessfulWithRetry, 10000)
	byKind(r.recRetryCallsByKind(), catalog.RetryFailedWithRetry, 10000)
	rec(r.recRetryCalls(), 100000)
	rec(r.recRetryAttempts(), 30000)
	rec(r.recBudgetDenied(), 4000)
	// The callers' view: the retry's failures (10/s), all answered by fallbacks (10/s).
	rec(r.recFailed(), 10000)
	rec(r.recCalls(), 100000)
	rec(r.recFallbacks(), 10000)
	rec(r.recUnrescued(), 0)
	rec(r.recUnrescuedRatio(), 0)
	rec(r.recRetryRate(), 300)
	rec(r.recRescueRate(), 500)
	byKind(r.recBulkheadCallsByKind(), catalog.AdmissionPermitted, 98000)
	byKind(r.recBulkheadCallsByKind(), catalog.AdmissionRejected, 2000)
	rec(r.recBulkheadRejectionRatio(), 20)
	rec(r.recFallbacksByCause(), 10000, cause...)
	// One trip a minute: 15 in 15 minutes (extrapolated over the window's 14m45s of samples).
	expect("round("+r.recBreakerTrips()+")", 15, labelInstance, lv[labelInstance])
	// 500 rejections every 15s: 4000 within the impact window.
	expect("round("+r.recImpact()+")", 4000, labelInstance, lv[labelInstance])
	return tc
}
