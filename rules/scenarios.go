package rules

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
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

// value is the alert's value at time at, computed from the input series as the rule computes
// it (for the alerts whose scenarios do not set it).
func (c *scenario) value(tracks []*track, at time.Duration) float64 {
	w := c.r.rateWindow
	kind := catalog.LabelKind
	switch c.sp.name {
	case AlertRejectingCalls:
		np := sumRate(tracks, at, w, catalog.BreakerNotPermitted)
		return np / (sumRate(tracks, at, w, catalog.BreakerCalls) + np)
	case AlertRetryRateHigh, AlertRetryRateSpike:
		return sumRate(tracks, at, w, catalog.RetryAttempts) / sumRate(tracks, at, w, catalog.RetryCalls)
	case AlertRetryBudgetExhausted:
		d := sumRate(tracks, at, w, catalog.RetryBudgetDenied)
		return d / (d + sumRate(tracks, at, w, catalog.RetryAttempts))
	case AlertDependencyOutage:
		failed := sumRate(tracks, at, w, catalog.RetryCalls, kind, catalog.RetryFailedWithRetry.String()) +
			sumRate(tracks, at, w, catalog.RetryCalls, kind, catalog.RetryFailedWithoutRetry.String())
		calls := sumRate(tracks, at, w, catalog.RetryCalls)
		if len(selectTracks(tracks, catalog.RetryCalls)) == 0 {
			np := sumRate(tracks, at, w, catalog.BreakerNotPermitted)
			failed = sumRate(tracks, at, w, catalog.BreakerCalls, kind, catalog.CallFailed.String()) + np
			calls = sumRate(tracks, at, w, catalog.BreakerCalls) + np
		}
		return max(failed-sumRate(tracks, at, w, catalog.FallbackCalls), 0) / calls
	case AlertRetryStormContained:
		return (sumRate(tracks, at, w, catalog.RetryAttempts) + sumRate(tracks, at, w, catalog.RetryBudgetDenied)) / sumRate(tracks, at, w, catalog.RetryCalls)
	case AlertRetriesNotRescuing:
		ok := sumRate(tracks, at, w, catalog.RetryCalls, kind, catalog.RetrySuccessfulWithRetry.String())
		return ok / (ok + sumRate(tracks, at, w, catalog.RetryCalls, kind, catalog.RetryFailedWithRetry.String()))
	case AlertBulkheadRejectionsHigh:
		return sumRate(tracks, at, w, catalog.BulkheadCalls, kind, catalog.AdmissionRejected.String()) / sumRate(tracks, at, w, catalog.BulkheadCalls)
	case AlertBulkheadSaturated:
		return maxAvg(tracks, at, w, catalog.BulkheadInflight) / maxLast(tracks, at, w, catalog.BulkheadMaxConcurrent)
	case AlertFallbackSustained:
		return sumRate(tracks, at, w, catalog.FallbackCalls)
	case AlertSlowCallRateHigh:
		return maxLast(tracks, at, w, catalog.BreakerSlowCallRate)
	case AlertFlapping:
		return sumIncrease(tracks, at, flappingWindow, catalog.BreakerTransitions,
			catalog.LabelFrom, catalog.StateClosed.String(), catalog.LabelTo, catalog.StateOpen.String())
	}
	if v, ok := limitValue(c, tracks, at); ok {
		return v
	}
	if v, ok := hedgeValue(c, tracks, at); ok {
		return v
	}
	panic("rules: no value for the checks of " + c.sp.name)
}

// --- circuit breaker episodes ---

// episode is one not-closed episode of a breaker: from its trip (at from) until it closes
// (at to), begun by a trip of cause.
type episode struct {
	from, to time.Duration
	cause    string
}

// trippedSince renders the collector's tripped_since series of one breaker over episodes (in
// time order): while closed, a series without the cause label holding 0; during an episode, a
// series labelled with its cause holding the trip's Unix time. A series that stops being
// exported gets a stale marker, as Prometheus writes one. With noCause, one series without
// the cause label holds both (collectors older than the trip-cause label).
func (c *scenario) trippedSince(lv map[string]string, end time.Duration, eps []episode, noCause bool) []*track {
	in := func(t time.Duration) (episode, bool) {
		for _, e := range eps {
			if t >= e.from && t < e.to {
				return e, true
			}
		}
		return episode{}, false
	}
	if noCause {
		return []*track{c.gaugeTrack(lv, catalog.BreakerTrippedSince, end, func(t time.Duration) float64 {
			if e, ok := in(t); ok {
				return e.from.Seconds()
			}
			return 0
		})}
	}
	closed := c.gaugeTrack(lv, catalog.BreakerTrippedSince, end, zero)
	byCause := map[string]*track{}
	var causes []string
	for _, e := range eps {
		if byCause[e.cause] == nil {
			byCause[e.cause] = c.gaugeTrack(lv, catalog.BreakerTrippedSince, end, zero, catalog.LabelCause, e.cause)
			causes = append(causes, e.cause)
		}
	}
	present := func(tr *track, i int, ok bool) {
		switch {
		case ok:
			tr.kinds[i] = sampled
		case i > 0 && tr.kinds[i-1] == sampled:
			tr.kinds[i] = staleMarker
		default:
			tr.kinds[i] = noSample
		}
	}
	for i := range closed.vals {
		t := time.Duration(i) * step
		e, ok := in(t)
		present(closed, i, !ok)
		for cause, tr := range byCause {
			tr.vals[i] = e.from.Seconds()
			present(tr, i, ok && e.cause == cause)
		}
	}
	out := []*track{closed}
	for _, cause := range causes {
		out = append(out, byCause[cause])
	}
	return out
}

// states renders the state gauge of one breaker: state(t) names its state at t.
func (c *scenario) states(lv map[string]string, end time.Duration, state func(time.Duration) catalog.State, shown ...catalog.State) []*track {
	var out []*track
	for _, s := range shown {
		out = append(out, c.gaugeTrack(lv, catalog.BreakerState, end, func(t time.Duration) float64 {
			if state(t) == s {
				return 1
			}
			return 0
		}, catalog.LabelState, s.String()))
	}
	return out
}

var (
	closedToOpen   = []string{catalog.LabelFrom, catalog.StateClosed.String(), catalog.LabelTo, catalog.StateOpen.String()}
	halfOpenToOpen = []string{catalog.LabelFrom, catalog.StateHalfOpen.String(), catalog.LabelTo, catalog.StateOpen.String()}
	causeFailure   = catalog.TripFailureRate.String()
	causeSlow      = catalog.TripSlowCallRate.String()
)

// breakerProc is one process's breaker in the stuck-open scenarios.
type breakerProc struct {
	lv                     map[string]string
	eps                    []episode
	rejections, probes     func(time.Duration) float64
	noCause                bool
	restartAt, restartSpan time.Duration
}

// procTracks are the series of the breakers of ps.
func (c *scenario) procTracks(end time.Duration, ps ...breakerProc) []*track {
	var out []*track
	for _, p := range ps {
		lv, probes := p.lv, p.probes
		if lv == nil {
			lv = c.lv
		}
		if probes == nil {
			probes = zero
		}
		ts := c.trippedSince(lv, end, p.eps, p.noCause)
		ts = append(ts, c.counterTrack(lv, catalog.BreakerNotPermitted, end, p.rejections),
			c.counterTrack(lv, catalog.BreakerTransitions, end, probes, halfOpenToOpen...))
		if p.restartSpan > 0 {
			restart(p.restartAt, p.restartSpan, ts...)
		}
		out = append(out, ts...)
	}
	return out
}

// stuck says what the checks of an episode begun at trip expect when firing.
func stuck(cs []check, trip time.Duration, cause string) []check {
	for i := range cs {
		if cs[i].firing {
			cs[i].value, cs[i].hasValue = (cs[i].at - trip).Seconds(), true
			cs[i].causes, cs[i].labels = cause, map[string]string{catalog.LabelCause: cause}
			if cause == "" {
				cs[i].causes, cs[i].labels = "an unknown cause", nil
			}
		}
	}
	return cs
}

// halfOpenCycle is a breaker open from t0 on, half-open for one scrape in every cycle, its
// probe failing as it reopens.
func halfOpenCycle(cycle time.Duration) (func(time.Duration) catalog.State, func(time.Duration) float64) {
	state := func(t time.Duration) catalog.State {
		switch {
		case t < t0:
			return catalog.StateClosed
		case (t-t0)%cycle == cycle-step:
			return catalog.StateHalfOpen
		}
		return catalog.StateOpen
	}
	probeFailures := func(t time.Duration) float64 {
		if t > t0 && (t-t0)%cycle == 0 {
			return 1
		}
		return 0
	}
	return state, probeFailures
}

// stuckCond returns the stuck-open threshold T and the first evaluation C at which a breaker
// tripped at t0 has been open for more than T.
func (c *scenario) stuckCond() (T, C time.Duration) {
	T = time.Duration(c.s.threshold) * time.Second
	return T, afterStep(t0 + T)
}

func stuckOpenScenarios(c *scenario) ([]testCase, error) {
	T, C := c.stuckCond()
	build := c.procTracks
	type proc = breakerProc
	rejecting := when(t0+step, forever, 20, 0)
	var out []testCase

	fire := stuck(c.fires(C, C), t0, causeFailure)
	end := lastCheck(fire) + 2*time.Minute
	out = append(out, testCase{
		name:   c.name("fires %s after the trip (not closed for over %s, then for %s) while calls are rejected, naming the trip cause", FormatDuration(C+c.forDur()-t0), FormatDuration(T), FormatDuration(c.forDur())),
		tracks: build(end, proc{eps: []episode{{t0, forever, causeFailure}}, rejections: rejecting}),
		checks: fire,
	})
	out = append(out, testCase{
		name:   c.name("fires on a breaker that tripped on slow calls and names the cause %s", causeSlow),
		tracks: build(end, proc{eps: []episode{{t0, forever, causeSlow}}, rejections: rejecting}),
		checks: stuck(c.fires(C, C), t0, causeSlow),
	})
	out = append(out, testCase{
		name:   c.name("fires with an unknown cause when tripped_since has no cause label (older collectors)"),
		tracks: build(end, proc{eps: []episode{{t0, forever, ""}}, rejections: rejecting, noCause: true}),
		checks: stuck(c.fires(C, C), t0, ""),
	})

	// Half-open scrapes: the breaker cycles open → half_open → open every 30s; the probes fail
	// and no call is rejected in between. The episode is still one episode.
	state, probeFailures := halfOpenCycle(30 * time.Second)
	out = append(out, testCase{
		name: c.name("fires on failed half-open probes without rejections; half-open scrapes do not reset it"),
		tracks: append(build(end, proc{eps: []episode{{t0, forever, causeFailure}}, rejections: zero, probes: probeFailures}),
			c.states(c.lv, end, state, catalog.StateClosed, catalog.StateOpen, catalog.StateHalfOpen)...),
		checks: stuck(c.fires(C, C), t0, causeFailure),
	})

	// One failed scrape while pending: every series of the target is marked stale once.
	if c.bridges(1) {
		fs := C + ceilStep(c.forDur()/2)
		tracks := build(end, proc{eps: []episode{{t0, forever, causeFailure}}, rejections: rejecting})
		failScrape(fs, tracks...)
		out = append(out, testCase{
			name:   c.name("fires on time although one scrape failed at %s while it was pending", FormatDuration(fs)),
			tracks: tracks,
			checks: stuck(sortChecks(append(c.fires(C, C), check{at: max(fs, C+c.forDur()), firing: true})), t0, causeFailure),
		})
	}

	blipChecks := silent(C+c.forDur(), C+c.forDur()+5*time.Minute)
	end = lastCheck(blipChecks) + time.Minute
	out = append(out, testCase{
		name:   c.name("a 15s open blip with rejections does not fire"),
		tracks: build(end, proc{eps: []episode{{t0, t0 + step, causeFailure}}, rejections: when(t0+step, t0+2*step, 20, 0)}),
		checks: blipChecks,
	})

	idleChecks := silent(C+c.forDur(), C+c.forDur()+10*time.Minute)
	end = lastCheck(idleChecks) + time.Minute
	out = append(out, testCase{
		name:   c.name("idle: an open breaker without traffic (no rejections, no probes) does not fire"),
		tracks: build(end, proc{eps: []episode{{t0, forever, causeFailure}}, rejections: zero}),
		checks: idleChecks,
	})

	out = append(out, stuckOpenNewCauseScenario(c))
	more, err := stuckOpenRecoveryScenarios(c)
	return append(out, more...), err
}

// stuckOpenNewCauseScenario: the breaker closes for one scrape and trips again on another
// cause. The first episode's series is still within the gauges' lookback, with the older trip
// time: the alert follows the newest episode only, so it neither fires again for the old cause
// nor ever carries two causes, and fires for the new one T after the new trip.
func stuckOpenNewCauseScenario(c *scenario) testCase {
	T, C := c.stuckCond()
	R := C + c.forDur() + time.Minute
	trip2 := R + step
	C2 := afterStep(trip2 + T)
	checks := stuck(slices.Concat(c.fires(C, C), firingAt(R-step)), t0, causeFailure)
	quiet := ceilStep(R+c.keep()) + step
	if quiet < C2+c.forDur() {
		checks = append(checks, check{at: quiet})
	}
	checks = append(checks, stuck([]check{{at: max(C2+c.forDur(), quiet), firing: true}}, trip2, causeSlow)...)
	tc := testCase{
		name: c.name("a new episode of another cause right after the breaker closes: fires for the new cause only, %s after the new trip", FormatDuration(C2+c.forDur()-trip2)),
		tracks: c.procTracks(lastCheck(checks)+time.Minute,
			breakerProc{eps: []episode{{t0, R, causeFailure}, {trip2, forever, causeSlow}}, rejections: when(t0+step, forever, 20, 0)}),
		checks: sortChecks(checks),
	}
	if c.bridges(2) {
		// At the new trip, both episodes' series are within the lookback, the old one past the
		// threshold: no alert for it, not even a pending one (the new episode is young).
		tc.exprs = []yamlExprTest{{Expr: fmt.Sprintf(`ALERTS{alertname=%q, alertstate="pending"}`, c.sp.name),
			EvalTime: FormatDuration(trip2), ExpSamples: []yamlSample{}}}
	}
	return tc
}

// stuckOpenRecoveryScenarios: two instances, recovery, a vanished target, a restart.
func stuckOpenRecoveryScenarios(c *scenario) ([]testCase, error) {
	T, C := c.stuckCond()
	build := c.procTracks
	type proc = breakerProc
	rejecting := when(t0+step, forever, 20, 0)
	var out []testCase
	var end time.Duration
	var tracks []*track
	// Two instances: one stuck, the other closed and serving.
	insts, err := c.r.instanceValues(2, c.sp.name)
	if err != nil {
		return nil, err
	}
	lv1, lv2 := maps.Clone(c.lv), maps.Clone(c.lv)
	lv1[labelInstance], lv2[labelInstance] = insts[0], insts[1]
	two := stuck(c.fires(C, C), t0, causeFailure)
	for i := range two {
		two[i].lv = lv1
	}
	end = lastCheck(two) + time.Minute
	out = append(out, testCase{
		name:   c.name("two instances, one stuck: fires for that instance only"),
		tracks: build(end, proc{lv: lv1, eps: []episode{{t0, forever, causeFailure}}, rejections: rejecting}, proc{lv: lv2, rejections: zero}),
		checks: two,
	})

	R := C + c.forDur() + time.Minute
	res := stuck(slices.Concat(c.fires(C, C), c.resolves(R, R)), t0, causeFailure)
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves once the breaker closes"),
		tracks: build(end, proc{eps: []episode{{t0, R, causeFailure}}, rejections: when(t0+step, R, 20, 0)}),
		checks: res,
	})

	G := C + c.forDur() + time.Minute
	gone := stuck(slices.Concat(c.fires(C, C), []check{{at: G - step, firing: true}, {at: c.goneBy(G)}}), t0, causeFailure)
	end = lastCheck(gone) + time.Minute
	tracks = build(end, proc{eps: []episode{{t0, forever, causeFailure}}, rejections: rejecting})
	disappear(G, tracks...)
	out = append(out, testCase{
		name:   c.name("resolves within 2× the scrape interval and one evaluation (%s) when the target disappears", FormatDuration(c.goneBy(G)-G)),
		tracks: tracks,
		checks: gone,
	})

	// A restart mid-incident: the new process's breaker trips again at once, a new episode.
	if !c.bridges(2) {
		return out, nil
	}
	Rs, gap := C+c.forDur()+time.Minute, 2*step
	trip2 := Rs + gap - step
	C2 := afterStep(trip2 + T)
	restarted := stuck(slices.Concat(c.fires(C, C), firingAt(Rs-step, Rs)), t0, causeFailure)
	if quiet := ceilStep(Rs+gap+c.keep()) + step; quiet < C2 {
		restarted = append(restarted, check{at: quiet})
	}
	restarted = append(restarted, stuck([]check{{at: C2 + c.forDur(), firing: true}}, trip2, causeFailure)...)
	end = lastCheck(restarted) + time.Minute
	out = append(out, testCase{
		name: c.name("after a process restart mid-incident (two missed scrapes) fires again once the new process's breaker has been open for %s", FormatDuration(T)),
		tracks: build(end, proc{eps: []episode{{t0, Rs, causeFailure}, {trip2, forever, causeFailure}}, rejections: rejecting,
			restartAt: Rs, restartSpan: gap}),
		checks: sortChecks(restarted),
	})
	return out, nil
}

// flapping holds what the flapping scenarios share: a burst of n trips, one every sp, the
// n-th at tN.
type flapping struct {
	c      *scenario
	n      int
	sp, tN time.Duration
}

func newFlapping(c *scenario) flapping {
	f := flapping{c: c, n: int(c.s.threshold), sp: time.Minute}
	if time.Duration(f.n)*f.sp > 10*time.Minute {
		f.sp = max(step, 10*time.Minute/time.Duration(f.n)/step*step)
	}
	f.tN = f.tripAt(f.n - 1)
	return f
}

// tripAt is the time of trip i (from 0) of the burst.
func (f flapping) tripAt(i int) time.Duration { return t0 + time.Duration(i)*f.sp }

// build renders trips at the given times, each a one-step episode caused by cause.
func (f flapping) build(end time.Duration, trips []time.Duration, cause string) []*track {
	inc := func(t time.Duration) float64 {
		if slices.Contains(trips, t) {
			return 1
		}
		return 0
	}
	out := []*track{f.c.counter(catalog.BreakerTransitions, end, inc, closedToOpen...)}
	if cause != "" {
		var eps []episode
		for _, t := range trips {
			eps = append(eps, episode{t, t + step, cause})
		}
		out = append(out, f.c.trippedSince(f.c.lv, end, eps, false)...)
	}
	return out
}

// burst returns the first count trips (all for count < 0) up to until.
func (f flapping) burst(count int, until time.Duration) []time.Duration {
	var out []time.Duration
	for i := 0; count < 0 || i < count; i++ {
		t := f.tripAt(i)
		if t > until {
			break
		}
		out = append(out, t)
	}
	return out
}

func flappingScenarios(c *scenario) ([]testCase, error) {
	f := newFlapping(c)
	n, sp, tN, build, burst := f.n, f.sp, f.tN, f.build, f.burst
	var out []testCase

	fire := withCauses(c.fires(tN, tN), causeFailure, nil)
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("fires on trip number %d within %s (one trip every %s), naming the last trip's cause", n, FormatDuration(flappingWindow), FormatDuration(sp)),
		tracks: build(end, burst(-1, forever), causeFailure),
		checks: fire,
	})
	out = append(out, testCase{
		name:   c.name("fires and says the cause is unknown when the breaker exports none"),
		tracks: build(end, burst(-1, forever), ""),
		checks: withCauses(c.fires(tN, tN), "unknown", nil),
	})

	quiet := silent(tN+c.forDur(), tN+c.forDur()+5*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("a single 15s trip (a blip) does not fire"),
		tracks: build(end, burst(1, forever), causeFailure),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("%d trips within %s stay below the threshold", n-1, FormatDuration(flappingWindow)),
		tracks: build(end, burst(n-1, forever), causeFailure),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("an idle breaker without transitions does not fire"),
		tracks: build(end, nil, ""),
		checks: quiet,
	})

	return append(out, flappingHoldScenarios(f)...), nil
}

// flappingHoldScenarios: resolution, hysteresis and a restart while firing.
func flappingHoldScenarios(f flapping) []testCase {
	c, n, tN, build, burst := f.c, f.n, f.tN, f.build, f.burst
	var out []testCase
	var end time.Duration
	// Resolution: at the latest flappingWindow after the last trip, whatever keep_firing_for.
	stop := tN + c.forDur()
	trips := burst(-1, stop)
	last := trips[len(trips)-1]
	res := []check{{at: stop, firing: true}, {at: ceilStep(last+flappingWindow+c.keep()) + step}}
	if hold := last + flappingWindow - 2*step; hold > stop {
		res = append(res, check{at: hold, firing: true})
	}
	res = withCauses(sortChecks(res), causeFailure, nil)
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves %s after the last trip, holding until then", FormatDuration(flappingWindow)),
		tracks: build(end, trips, causeFailure),
		checks: res,
	})

	// Hysteresis: after the burst the breaker keeps tripping at a pace that reaches the
	// threshold only now and then; the alert holds, then resolves after the last trip.
	if pace, ok := c.slowPace(n); ok {
		var slow []time.Duration
		for t := tN + pace; t <= tN+pace*6; t += pace {
			slow = append(slow, t)
		}
		all := append(burst(n, forever), slow...)
		lastSlow := slow[len(slow)-1]
		hold := firingAt(tN + c.forDur())
		for t := tN + c.forDur() + pace; t < lastSlow; t += 3 * time.Minute {
			hold = append(hold, check{at: t, firing: true})
		}
		hold = append(hold, check{at: ceilStep(lastSlow+flappingWindow+c.keep()) + step})
		hold = withCauses(hold, causeFailure, nil)
		end = lastCheck(hold) + time.Minute
		out = append(out, testCase{
			name:   c.name("keeps firing while the breaker trips every %s (below %d per %s most of the time) and resolves %s after the last trip", FormatDuration(pace), n, FormatDuration(flappingWindow), FormatDuration(flappingWindow)),
			tracks: build(end, all, causeFailure),
			checks: hold,
		})
	}

	// Hysteresis: once resolved, a single later trip does not bring it back, even while the
	// burst's trips are still within the trips' window at the start of the next window.
	tr := burst(n, forever)
	lastTrip := tr[len(tr)-1]
	resolvedAt := ceilStep(lastTrip+flappingWindow+c.keep()) + step
	again := resolvedAt + time.Minute
	once := withCauses([]check{{at: tN + c.forDur(), firing: true}, {at: resolvedAt}, {at: again}, {at: again + step},
		{at: again + 3*time.Minute}, {at: again + flappingWindow}}, causeFailure, nil)
	end = lastCheck(once) + time.Minute
	out = append(out, testCase{
		name:   c.name("hysteresis: after the episode resolves, a single later trip does not bring it back"),
		tracks: build(end, append(tr, again), causeFailure),
		checks: once,
	})

	// A process restart while firing: the trip counter starts again from 0.
	Rs := tN + c.forDur() + time.Minute
	restartChecks := withCauses(slices.Concat(c.fires(tN, tN), firingAt(Rs, Rs+step, Rs+2*step, Rs+3*time.Minute)), causeFailure, nil)
	end = lastCheck(restartChecks) + time.Minute
	tracks := build(end, burst(-1, forever), causeFailure)
	restart(Rs, 2*step, tracks...)
	out = append(out, testCase{
		name:   c.name("fires and keeps firing through a process restart (counter reset, two missed scrapes)"),
		tracks: tracks,
		checks: restartChecks,
	})
	return out
}

// slowPace returns a steady trip pace at which the number of trips in the flapping window
// reaches n only now and then (one less most of the time), if the 15s steps allow one.
func (c *scenario) slowPace(n int) (time.Duration, bool) {
	if n < 2 {
		return 0, false
	}
	// Trips are counted by increase() over the window: effectively one step less.
	eff := flappingWindow - step
	p := ceilStep(time.Duration(float64(eff) / (float64(n) - 0.5)))
	if time.Duration(n-1)*p >= eff || time.Duration(n)*p < eff {
		return 0, false
	}
	return p, true
}

// fleetMode is what one instance's breaker does in a fleet-wide scenario.
type fleetMode int

const (
	modeServing   fleetMode = iota // closed, calls permitted
	modeRejecting                  // open, rejecting calls
	modeProbing                    // open and half-open in turn, its probes failing
	modeIdle                       // open, nobody calls
	modeForced                     // forced open by an operator, rejecting calls
	modeDisabled                   // disabled
)

// fleet holds what the fleet-wide scenarios share: n instances, open of them impaired.
type fleet struct {
	c       *scenario
	n, open int
	insts   []string
}

// build renders instances instances of the breaker, the first count doing m from `from` to `to`.
func (fl fleet) build(end time.Duration, count int, m fleetMode, from, to time.Duration, instances int) []*track {
	c := fl.c
	var out []*track
	for i := range instances {
		lv := maps.Clone(c.lv)
		lv[labelInstance] = fl.insts[i]
		mi := modeServing
		if i < count {
			mi = m
		}
		during := func(t time.Duration) bool { return mi != modeServing && t >= from && t < to }
		st := func(t time.Duration) catalog.State {
			if !during(t) {
				return catalog.StateClosed
			}
			switch mi {
			case modeProbing:
				if (t-from)%(2*step) == step {
					return catalog.StateHalfOpen
				}
			case modeForced:
				return catalog.StateForcedOpen
			case modeDisabled:
				return catalog.StateDisabled
			}
			return catalog.StateOpen
		}
		shown := []catalog.State{catalog.StateClosed, catalog.StateOpen, catalog.StateHalfOpen}
		if mi == modeForced || mi == modeDisabled {
			shown = append(shown, st(from))
		}
		out = append(out, c.states(lv, end, st, shown...)...)
		var eps []episode
		switch mi {
		case modeRejecting, modeProbing, modeIdle:
			eps = []episode{{from, to, causeFailure}}
		case modeForced:
			eps = []episode{{from, to, catalog.TripForced.String()}}
		}
		out = append(out, c.trippedSince(lv, end, eps, false)...)
		rej, probes := zero, zero
		switch mi {
		case modeRejecting, modeForced:
			rej = when(from+step, to, 20, 0)
		case modeProbing:
			probes = func(t time.Duration) float64 {
				if t > from && t < to && (t-from)%(2*step) == 0 {
					return 1
				}
				return 0
			}
		}
		out = append(out, c.counterTrack(lv, catalog.BreakerNotPermitted, end, rej),
			c.counterTrack(lv, catalog.BreakerTransitions, end, probes, halfOpenToOpen...))
	}
	return out
}

// expect sets what a firing check shows: the share of impaired instances and their cause.
func (fl fleet) expect(cs []check) []check {
	for i := range cs {
		if cs[i].firing {
			cs[i].value, cs[i].hasValue = float64(fl.open)/float64(fl.n), true
			cs[i].causes = causeFailure + " on " + strconv.Itoa(fl.open)
		}
	}
	return cs
}

func fleetWideScenarios(c *scenario) ([]testCase, error) {
	minInst := c.s.minInstances
	n := max(10, minInst)
	open := min(max(int(math.Floor(c.s.threshold*float64(n)))+1, minInst), n)
	insts, err := c.r.instanceValues(n, c.sp.name)
	if err != nil {
		return nil, err
	}
	fl := fleet{c: c, n: n, open: open, insts: insts}
	return append(fleetFiringScenarios(fl), fleetQuietScenarios(fl)...), nil
}

// fleetFiringScenarios: the fleet-wide alert fires on rejections and on failed probes.
func fleetFiringScenarios(fl fleet) []testCase {
	c, n, open, build, expect := fl.c, fl.n, fl.open, fl.build, fl.expect
	start := t0 + step // first rejections: the impact is visible from here on
	var out []testCase
	fire := expect(c.fires(start, start))
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("fires when %d of %d instances have the breaker open and rejecting calls", open, n),
		tracks: build(end, open, modeRejecting, t0, forever, n),
		checks: fire,
	})
	out = append(out, testCase{
		name:   c.name("fires when %d of %d instances have the breaker open and half-open in turn, its probes failing", open, n),
		tracks: build(end, open, modeProbing, t0, forever, n),
		checks: expect(c.fires(t0+2*step, t0+2*step)),
	})
	return out
}

// fleetFailedScrape: one failed scrape of every instance while pending does not delay it.
func fleetFailedScrape(fl fleet) []testCase {
	c, start := fl.c, t0+step
	if !c.bridges(1) {
		return nil
	}
	fs := start + ceilStep(c.forDur()/2)
	failed := fl.expect(sortChecks(append(c.fires(start, start), check{at: max(fs, start+c.forDur()), firing: true})))
	end := lastCheck(failed) + time.Minute
	tracks := fl.build(end, fl.open, modeRejecting, t0, forever, fl.n)
	failScrape(fs, tracks...)
	return []testCase{{
		name:   c.name("fires on time although one scrape of every instance failed at %s while it was pending", FormatDuration(fs)),
		tracks: tracks,
		checks: failed,
	}}
}

// fleetQuietScenarios: the cases that must not page, a failed scrape, recovery, a vanished fleet.
func fleetQuietScenarios(fl fleet) []testCase {
	c, n, open, build, expect := fl.c, fl.n, fl.open, fl.build, fl.expect
	minInst := c.s.minInstances
	start := t0 + step
	var out []testCase
	var end time.Duration
	quiet := silent(start+c.forDur(), start+c.forDur()+5*time.Minute)
	end = lastCheck(quiet) + time.Minute
	if minInst >= 2 {
		out = append(out, testCase{
			name:   c.name("a job of %d instance(s), all open and rejecting, does not fire (fewer than min_instances %d)", minInst-1, minInst),
			tracks: build(end, minInst-1, modeRejecting, t0, forever, minInst-1),
			checks: quiet,
		})
	}
	if minInst >= 2 || c.s.threshold >= 0.5 {
		out = append(out, testCase{
			name:   c.name("two instances, one stuck, do not fire"),
			tracks: build(end, 1, modeRejecting, t0, forever, 2),
			checks: quiet,
		})
	}
	out = append(out, testCase{
		name:   c.name("idle: breakers open on %d of %d instances without traffic (no rejections, no probes) do not fire", open, n),
		tracks: build(end, open, modeIdle, t0, forever, n),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("breakers forced open by an operator on %d of %d instances do not fire", open, n),
		tracks: build(end, open, modeForced, t0, forever, n),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("disabled breakers on %d of %d instances do not fire", open, n),
		tracks: build(end, open, modeDisabled, t0, forever, n),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("a 15s blip on %d of %d instances does not fire", open, n),
		tracks: build(end, open, modeRejecting, t0, t0+2*step, n),
		checks: quiet,
	})
	if open-1 >= minInst {
		out = append(out, testCase{
			name:   c.name("%d of %d instances (not more than %s) do not fire", open-1, n, pct(c.s.threshold)),
			tracks: build(end, open-1, modeRejecting, t0, forever, n),
			checks: quiet,
		})
	}
	out = append(out, fleetFailedScrape(fl)...)
	R := start + c.forDur() + time.Minute
	res := expect(slices.Concat(c.fires(start, start), c.resolves(R, R)))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves once the breakers close"),
		tracks: build(end, open, modeRejecting, t0, R, n),
		checks: res,
	})
	G := start + c.forDur() + time.Minute
	gone := expect(slices.Concat(c.fires(start, start), []check{{at: G - step, firing: true}, {at: c.goneBy(G)}}))
	end = lastCheck(gone) + time.Minute
	tracks := build(end, open, modeRejecting, t0, forever, n)
	disappear(G, tracks...)
	out = append(out, testCase{
		name:   c.name("resolves within 2× the scrape interval and one evaluation (%s) when the instances disappear", FormatDuration(c.goneBy(G)-G)),
		tracks: tracks,
		checks: gone,
	})
	return out
}

// trafficBuild builds the series of an alert on counters from the number of bad and good
// events at each step.
type trafficBuild func(end time.Duration, bad, good func(time.Duration) float64) []*track

// trafficScenarios are the cases of an alert on counters: bad traffic starts at t0 + step (so
// ratios of two counters are exact from the first increment on); the blip is one step of bad
// traffic amid good traffic; idle has no traffic; recovery turns all traffic good; restarts
// reset the counters and miss scrapes; a failed scrape; the target disappears; a single bad
// event at low traffic. window is the alert's own window (how long a disappeared target's
// samples still count).
func trafficScenarios(c *scenario, build trafficBuild, badPerStep float64, condSureLag time.Duration,
	fireDesc, blipDesc string, clearLag, window time.Duration) []testCase {
	var out []testCase
	start := t0 + step // first sample with an increment
	bad, good := when(start, forever, badPerStep, 0), when(start, forever, perStep-badPerStep, 0)
	fire := c.fires(start, start+condSureLag)
	F := lastCheck(fire)
	end := F + time.Minute
	out = append(out, testCase{
		name:   c.name("%s", fireDesc),
		tracks: build(end, when(start, forever, badPerStep, 0), when(start, forever, perStep-badPerStep, 0)),
		checks: fire,
	})

	bt := 5 * time.Minute
	quiet := silent(bt+time.Minute, bt+c.forDur(), bt+c.forDur()+2*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("%s", blipDesc),
		tracks: build(end, when(bt, bt+step, perStep, 0), when(bt, bt+step, 0, perStep)),
		checks: quiet,
	})

	idle := silent(start+condSureLag+c.forDur(), start+condSureLag+c.forDur()+10*time.Minute)
	end = lastCheck(idle) + time.Minute
	out = append(out, testCase{
		name:   c.name("idle (no calls) does not fire"),
		tracks: build(end, zero, zero),
		checks: idle,
	})

	// Low traffic: one call a minute, and a single bad event.
	lt := start + 2*time.Minute
	low := silent(lt, lt+step, lt+window/2, lt+c.forDur(), lt+window+c.forDur()+step)
	end = lastCheck(low) + time.Minute
	out = append(out, testCase{
		name:   c.name("low traffic (one call a minute): a single bad event does not fire"),
		tracks: build(end, when(lt, lt+step, 1, 0), every(start, time.Minute, 1, 0)),
		checks: low,
	})

	R := start + condSureLag + c.forDur() + time.Minute
	res := slices.Concat(fire, c.resolves(R, R+clearLag))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name: c.name("resolves after recovery"),
		tracks: build(end, when(start, R, badPerStep, 0), func(t time.Duration) float64 {
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

	out = append(out, trafficGapScenarios(c, build, badPerStep, condSureLag, fire, window)...)

	G := F + time.Minute
	gone := slices.Concat(fire, []check{{at: G - step, firing: true}, {at: ceilStep(G+window+c.keep()) + step}})
	end = lastCheck(gone) + time.Minute
	tracks := build(end, bad, good)
	disappear(G, tracks...)
	out = append(out, testCase{
		name:   c.name("resolves within its window (%s) when the target disappears", FormatDuration(window)),
		tracks: tracks,
		checks: gone,
	})
	return out
}

// trafficGapScenarios are the cases of an alert on counters with scrapes missing: restarts
// (one while pending, one while firing; each resets the counters and misses two scrapes) and
// one failed scrape while pending. A window of fewer than four scrapes cannot ride out missed
// scrapes (a rate needs two samples in it): those cases need a wider window.
func trafficGapScenarios(c *scenario, build trafficBuild, badPerStep float64, condSureLag time.Duration, fire []check, window time.Duration) []testCase {
	var out []testCase
	start, F := t0+step, lastCheck(fire)
	bad, good := when(start, forever, badPerStep, 0), when(start, forever, perStep-badPerStep, 0)
	var end time.Duration
	if window >= 4*step {
		gap := 2 * step
		// The first restart while pending, but not before the counters have grown past what the new
		// process counts by its first scrape (or the reset would go unnoticed: a real process has
		// been counting for far longer).
		r1 := max(start+condSureLag+ceilStep(c.forDur()/2), start+5*step)
		r2 := F + time.Minute
		restarts := sortChecks(slices.Concat(fire, firingAt(r2-step, r2, r2+step, r2+gap, r2+gap+window)))
		end = lastCheck(restarts) + time.Minute
		tracks := build(end, bad, good)
		if r1+gap < r2 {
			restart(r1, gap, tracks...)
		}
		restart(r2, gap, tracks...)
		out = append(out, testCase{
			name:   c.name("fires on time and keeps firing through process restarts at %s and %s (counters reset, two missed scrapes each)", FormatDuration(r1), FormatDuration(r2)),
			tracks: tracks,
			checks: restarts,
		})
		fs := r1
		failed := sortChecks(append(slices.Clone(fire), check{at: max(fs, F), firing: true}))
		end = lastCheck(failed) + time.Minute
		tracks = build(end, bad, good)
		failScrape(fs, tracks...)
		out = append(out, testCase{
			name:   c.name("fires on time although one scrape failed at %s while it was pending", FormatDuration(fs)),
			tracks: tracks,
			checks: failed,
		})
	}

	return out
}

func rejectingCallsScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	build := func(end time.Duration, rejected, permitted func(time.Duration) float64) []*track {
		return []*track{
			c.counter(catalog.BreakerCalls, end, permitted, catalog.LabelKind, catalog.CallSuccessful.String()),
			c.counter(catalog.BreakerNotPermitted, end, rejected),
		}
	}
	return trafficScenarios(c, build, bad, step,
		fmt.Sprintf("fires when %s of calls are rejected", pct(bad/perStep)),
		"a 15s blip rejecting every call does not fire", c.r.rateWindow, c.r.rateWindow), nil
}

func bulkheadRejectionScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	build := func(end time.Duration, rejected, permitted func(time.Duration) float64) []*track {
		return []*track{
			c.counter(catalog.BulkheadCalls, end, permitted, catalog.LabelKind, catalog.AdmissionPermitted.String()),
			c.counter(catalog.BulkheadCalls, end, rejected, catalog.LabelKind, catalog.AdmissionRejected.String()),
		}
	}
	out := trafficScenarios(c, build, bad, step,
		fmt.Sprintf("fires when %s of calls are rejected", pct(bad/perStep)),
		"a 15s blip rejecting every call does not fire", c.r.rateWindow, c.r.rateWindow)
	// A trickle: one call a minute, every fourth one rejected — a high share, but below the
	// minimum volume.
	trickle := silent(10*time.Minute, 20*time.Minute, 30*time.Minute)
	end := lastCheck(trickle) + time.Minute
	out = append(out, testCase{
		name:   c.name("a trickle (one call a minute, one rejected every 4m) never pages"),
		tracks: build(end, every(t0+step+4*time.Minute, 4*time.Minute, 1, 0), every(t0+step, time.Minute, 1, 0)),
		checks: trickle,
	})
	return out, nil
}

func notRescuingScenarios(c *scenario) ([]testCase, error) {
	rescued := math.Floor(c.s.threshold * perStep / 2)
	build := func(end time.Duration, failedRetried, rescuedOrOK func(time.Duration) float64) []*track {
		return []*track{
			c.counter(catalog.RetryCalls, end, rescuedOrOK, catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()),
			c.counter(catalog.RetryCalls, end, failedRetried, catalog.LabelKind, catalog.RetryFailedWithRetry.String()),
		}
	}
	// The generic builder's "good" calls are rescued retries here, so the blip is a 15s burst
	// of retried calls that all fail amid calls that were all rescued.
	return trafficScenarios(c, build, perStep-rescued, step,
		fmt.Sprintf("fires when only %s of retried calls are rescued", pct(rescued/perStep)),
		"a 15s blip in which no retried call is rescued does not fire", c.r.rateWindow, c.r.rateWindow), nil
}

func retryRateHighScenarios(c *scenario) ([]testCase, error) {
	// Per perStep retried calls; at least twice the volume floor within one step.
	attempts := math.Max(math.Floor(2*c.s.threshold*perStep)+1, 2*MinEvents)
	build := func(end time.Duration, retried, plain func(time.Duration) float64) []*track {
		return []*track{
			c.counter(catalog.RetryCalls, end, func(t time.Duration) float64 { return retried(t) + plain(t) },
				catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()),
			c.counter(catalog.RetryAttempts, end, func(t time.Duration) float64 {
				return retried(t) / perStep * attempts
			}),
		}
	}
	return trafficScenarios(c, build, perStep, step,
		fmt.Sprintf("fires at %s extra attempts per call", fnum(attempts/perStep)),
		fmt.Sprintf("a 15s blip of %s extra attempts per call does not fire", fnum(attempts/perStep)), c.r.rateWindow, c.r.rateWindow), nil
}

func budgetScenarios(c *scenario) ([]testCase, error) {
	// bad are retries refused, good retries made.
	build := func(end time.Duration, bad, good func(time.Duration) float64) []*track {
		return []*track{c.counter(catalog.RetryBudgetDenied, end, bad), c.counter(catalog.RetryAttempts, end, good)}
	}
	bad := shareAbove(c.s.threshold)
	out := trafficScenarios(c, build, bad, step,
		fmt.Sprintf("fires when the budget refuses %s of the retries wanted", pct(bad/perStep)),
		"a 15s blip in which every retry is refused does not fire", c.r.rateWindow, c.r.rateWindow)
	// One call a second in an outage: every call wants a retry, the budget lets one in eight
	// through. It fires within the for plus one evaluation of the outage's start.
	lowBad := math.Max(math.Floor(step.Seconds()*(c.s.threshold+(1-c.s.threshold)/2)), 1)
	if lowBad/step.Seconds() > c.s.threshold && lowBad*c.r.rateWindow.Seconds()/step.Seconds() >= 2*MinEvents {
		start := t0 + step
		lag := ceilStep(time.Duration(float64(MinEvents)/lowBad*float64(step))) + step
		fire := c.fires(start, start+lag)
		end := lastCheck(fire) + time.Minute
		out = append(out, testCase{
			name:   c.name("at one call a second, fires within %s of an outage's start", FormatDuration(lastCheck(fire)-start)),
			tracks: build(end, when(start, forever, lowBad, 0), when(start, forever, step.Seconds()-lowBad, 0)),
			checks: fire,
		})
	}
	return out, nil
}

func fallbackScenarios(c *scenario) ([]testCase, error) {
	calls := math.Ceil((2*c.s.threshold + 1) * step.Seconds())
	build := func(end time.Duration, bad, _ func(time.Duration) float64) []*track {
		return []*track{c.counter(catalog.FallbackCalls, end, func(t time.Duration) float64 {
			return math.Ceil(bad(t)/perStep) * calls
		}, catalog.LabelCause, catalog.CauseCircuitOpen.String())}
	}
	lag := step
	if c.s.threshold > 0 {
		lag = c.r.rateWindow + step // the rate over the rate window ramps up
	}
	return trafficScenarios(c, build, perStep, lag,
		fmt.Sprintf("fires when fallbacks run at %s/s continuously", fnum(calls/step.Seconds())),
		"a 15s blip of fallbacks does not fire", c.r.rateWindow, c.r.rateWindow), nil
}

func retryRateSpikeScenarios(c *scenario) ([]testCase, error) {
	const base = 4.0 // attempts per perStep calls: 0.4%
	spike := math.Floor(max(2*c.s.threshold*base, 2*RetrySpikeFloor*perStep)) + 1
	w := c.r.rateWindow
	build := func(end time.Duration, attempts func(time.Duration) float64) []*track {
		return []*track{
			c.counter(catalog.RetryCalls, end, func(time.Duration) float64 { return perStep },
				catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()),
			c.counter(catalog.RetryAttempts, end, attempts),
		}
	}
	var out []testCase
	// jump at tS: the spike's checks.
	jump := func(tS time.Duration) (start, sure time.Duration, cs []check) {
		start = tS + step
		sure = tS + w + 2*step // the rate over the rate window has fully caught up
		return start, sure, c.fires(start, sure)
	}
	tS := time.Hour + w + 5*time.Minute // over an hour (plus a rate window) of baseline first
	start, sure, fire := jump(tS)
	end := lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("fires when the retry rate jumps from %s to %s extra attempts per call", fnum(base/perStep), fnum(spike/perStep)),
		tracks: build(end, when(start, forever, spike, base)),
		checks: fire,
	})
	// The first hour: no value an hour earlier; the baseline is the data before the last
	// spikeEarlyOffset.
	if tF := spikeEarlyOffset(c.r, c.s) + 5*time.Minute; tF+w+2*step+c.forDur() < time.Hour {
		startF, _, fireF := jump(tF)
		end = lastCheck(fireF) + time.Minute
		out = append(out, testCase{
			name:   c.name("fires in the first hour of data (a jump at %s), against the average before the last %s", FormatDuration(tF), FormatDuration(spikeEarlyOffset(c.r, c.s))),
			tracks: build(end, when(startF, forever, spike, base)),
			checks: fireF,
		})
	}
	bt := tS + 5*time.Minute
	quiet := silent(bt+time.Minute, bt+c.forDur(), bt+c.forDur()+2*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("a 15s blip of 3 extra attempts per call does not fire"),
		tracks: build(end, when(bt, bt+step, 3*perStep, base)),
		checks: quiet,
	})
	idle := silent(sure+c.forDur(), sure+c.forDur()+5*time.Minute)
	end = lastCheck(idle) + time.Minute
	out = append(out, testCase{
		name: c.name("idle (no calls) does not fire"),
		tracks: []*track{
			c.counter(catalog.RetryCalls, end, zero, catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()),
			c.counter(catalog.RetryAttempts, end, zero),
		},
		checks: idle,
	})
	out = append(out, testCase{
		name:   c.name("a steady high retry rate (no change since the data began, nor from an hour ago) does not fire"),
		tracks: build(end, func(time.Duration) float64 { return 10 * spike }),
		checks: slices.Concat(silent(w+time.Minute, 20*time.Minute), idle),
	})
	R := sure + c.forDur() + time.Minute
	res := slices.Concat(fire, c.resolves(R, R+w))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{
		name:   c.name("resolves once the retry rate is back to its baseline"),
		tracks: build(end, when(start, R, spike, base)),
		checks: res,
	})
	return out, nil
}

func saturatedScenarios(c *scenario) ([]testCase, error) {
	const permits = 10
	build := func(end time.Duration, inflight func(time.Duration) float64) []*track {
		return []*track{
			c.gauge(catalog.BulkheadMaxConcurrent, end, func(time.Duration) float64 { return permits }),
			c.gauge(catalog.BulkheadInflight, end, inflight),
		}
	}
	// Utilisation is averaged over the rate window: it crosses the threshold once enough of the
	// window's samples have every permit in use (fewer at first, while the window still reaches
	// back before the first sample).
	probe := build(t0+c.r.rateWindow+time.Minute, when(t0, forever, permits, 0))
	lag := time.Duration(0)
	for maxAvg(probe, t0+lag, c.r.rateWindow, catalog.BulkheadInflight)/permits <= c.s.threshold {
		lag += step
	}
	return gaugeScenarios(c, build, permits, 0, 0, lag, c.r.rateWindow,
		"fires when every permit is in use", "a 15s blip with every permit in use does not fire", "idle (no calls in flight) does not fire"), nil
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
		"a 15s blip of slow calls does not fire",
		"idle (rate NaN below the minimum number of calls) does not fire"), nil
}

func outageScenarios(c *scenario) ([]testCase, error) {
	bad := shareAbove(c.s.threshold)
	// bad calls fail after their retries, good ones succeed; fallback (0 or 1) says whether a
	// fallback answers the failed ones.
	retry := func(fallback float64) trafficBuild {
		return func(end time.Duration, bad, good func(time.Duration) float64) []*track {
			return []*track{
				c.counter(catalog.RetryCalls, end, good, catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()),
				c.counter(catalog.RetryCalls, end, bad, catalog.LabelKind, catalog.RetryFailedWithRetry.String()),
				c.counter(catalog.FallbackCalls, end, func(t time.Duration) float64 { return fallback * bad(t) }, catalog.LabelCause, catalog.CauseRetriesExhausted.String()),
			}
		}
	}
	out := trafficScenarios(c, retry(0), bad, step,
		fmt.Sprintf("a job of one instance: fires when %s of calls fail and no fallback answers them", pct(bad/perStep)),
		"a 15s blip in which every call fails does not fire", c.r.rateWindow, c.r.rateWindow)
	start := t0 + step
	fire := c.fires(start, start+step)
	quiet := silent(lastCheck(fire), lastCheck(fire)+10*time.Minute)
	end := lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("contained: a fallback answers every failed call, no page"),
		tracks: retry(1)(end, when(start, forever, bad, 0), when(start, forever, perStep-bad, 0)),
		checks: quiet,
	})
	// A breaker without a retry: failed and rejected calls count.
	breaker := func(end time.Duration) []*track {
		return []*track{
			c.counter(catalog.BreakerCalls, end, when(start, forever, perStep-bad, 0), catalog.LabelKind, catalog.CallSuccessful.String()),
			c.counter(catalog.BreakerCalls, end, when(start, forever, bad/2, 0), catalog.LabelKind, catalog.CallFailed.String()),
			c.counter(catalog.BreakerNotPermitted, end, when(start, forever, bad-bad/2, 0)),
		}
	}
	end = lastCheck(fire) + time.Minute
	out = append(out, testCase{
		name:   c.name("a breaker without a retry: fires on its failed and rejected calls"),
		tracks: breaker(end),
		checks: fire,
	})
	return out, nil
}

func containedScenarios(c *scenario) ([]testCase, error) {
	// Per perStep calls, half made, half refused; at least twice the volume floor within one step.
	wanted := math.Max(math.Floor(2*c.s.threshold*perStep)+1, 2*MinEvents)
	start, W := t0+step, c.r.rateWindow
	stop := start + W + c.forDur() + 5*time.Minute
	// storm: retries wanted from start to to; failed calls per step, answered by a fallback or not.
	build := func(end, to time.Duration, failed, fallback float64) []*track {
		return []*track{
			c.counter(catalog.RetryCalls, end, when(start, forever, perStep-failed, 0), catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()),
			c.counter(catalog.RetryCalls, end, when(start, forever, failed, 0), catalog.LabelKind, catalog.RetryFailedWithRetry.String()),
			c.counter(catalog.RetryAttempts, end, when(start, to, math.Ceil(wanted/2), 0)),
			c.counter(catalog.RetryBudgetDenied, end, when(start, to, math.Floor(wanted/2), 0)),
			c.counter(catalog.FallbackCalls, end, when(start, forever, fallback*failed, 0), catalog.LabelCause, catalog.CauseRetriesExhausted.String()),
		}
	}
	fire := c.fires(start, start+step)
	held := sortChecks(append(fire, firingAt(stop-step)...))
	end := ceilStep(stop+W+c.keep()) + 2*time.Minute
	storm := build(end, stop, 0, 0)
	// While it is kept firing, the alert shows the last value above the threshold.
	last := stop - step
	for c.value(storm, last+step) > c.s.threshold {
		last += step
	}
	held = append(held, check{at: last + ceilStep(min(10*time.Minute, c.keep()/2)), firing: true, value: c.value(storm, last), hasValue: true},
		check{at: ceilStep(last+c.keep()) + 2*step})
	var out []testCase
	out = append(out, testCase{
		name:   c.name("fires on a contained storm of %s retries wanted per call, holds %s after it, then resolves", fnum(wanted/perStep), FormatDuration(c.keep())),
		tracks: storm,
		checks: held,
	})
	quiet := silent(lastCheck(fire), lastCheck(fire)+5*time.Minute)
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{
		name:   c.name("an outage (most calls failing without a fallback) is not a contained storm"),
		tracks: build(end, forever, perStep/2, 0),
		checks: quiet,
	})
	out = append(out, testCase{
		name:   c.name("fires when the failed calls are answered by a fallback (still contained)"),
		tracks: build(end, forever, perStep/2, 1),
		checks: fire,
	})
	// A blip once the window holds only steady traffic, half the threshold over the window.
	blip, bt := math.Min(perStep, math.Floor(c.s.threshold*perStep*float64(W/step)/2)), start+W+time.Minute
	blipChecks := silent(bt, bt+c.forDur()+step, bt+W+c.forDur())
	blipTracks := build(lastCheck(blipChecks)+time.Minute, start, 0, 0)
	blipTracks[2] = c.counter(catalog.RetryAttempts, lastCheck(blipChecks)+time.Minute, when(bt, bt+step, blip, 0))
	blipTracks[3] = c.counter(catalog.RetryBudgetDenied, lastCheck(blipChecks)+time.Minute, zero)
	out = append(out, testCase{
		name:   c.name("a 15s blip of %s retries per call does not fire", fnum(blip/perStep)),
		tracks: blipTracks,
		checks: blipChecks,
	})
	out = append(out, testCase{
		name:   c.name("idle (no calls) does not fire"),
		tracks: []*track{c.counter(catalog.RetryCalls, end, zero, catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()), c.counter(catalog.RetryAttempts, end, zero)},
		checks: quiet,
	})
	return out, nil
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
	var out []testCase
	fire := c.fires(t0+lag, t0+lag)
	F := lastCheck(fire)
	end := F + time.Minute
	out = append(out, testCase{name: c.name("%s", fireDesc), tracks: build(end, when(t0, forever, high, low)), checks: fire})
	// A blip must not outlive the window through last_over_time: the next sample replaces it.
	quiet := silent(t0, t0+c.forDur(), t0+c.forDur()+5*time.Minute) // during the blip, too
	end = lastCheck(quiet) + time.Minute
	out = append(out, testCase{name: c.name("%s", blipDesc), tracks: build(end, when(t0, t0+step, high, low)), checks: quiet})
	out = append(out, testCase{name: c.name("%s", idleDesc), tracks: build(end, func(time.Duration) float64 { return idleValue }), checks: quiet})
	R := F + time.Minute
	res := slices.Concat(fire, c.resolves(R, R+clearLag))
	end = lastCheck(res) + time.Minute
	out = append(out, testCase{name: c.name("resolves after recovery"), tracks: build(end, when(t0, R, high, low)), checks: res})

	// A failed scrape and restarts: the gauges are read over three scrape intervals, which must
	// hold more than the missed scrapes at the tests' sampling.
	if c.bridges(2) {
		fs := t0 + lag + ceilStep(c.forDur()/2)
		failed := sortChecks(append(slices.Clone(fire), check{at: max(fs, F), firing: true}))
		end = lastCheck(failed) + time.Minute
		tracks := build(end, when(t0, forever, high, low))
		failScrape(fs, tracks...)
		out = append(out, testCase{
			name:   c.name("fires on time although one scrape failed at %s while it was pending", FormatDuration(fs)),
			tracks: tracks,
			checks: failed,
		})

		gap := 2 * step
		r1, r2 := fs, F+time.Minute
		restarts := sortChecks(slices.Concat(fire, firingAt(r2-step, r2, r2+step, r2+gap, r2+gap+time.Minute)))
		end = lastCheck(restarts) + time.Minute
		tracks = build(end, when(t0, forever, high, low))
		if r1+gap < r2 {
			restart(r1, gap, tracks...)
		}
		restart(r2, gap, tracks...)
		out = append(out, testCase{
			name:   c.name("fires on time and keeps firing through process restarts at %s and %s (two missed scrapes each)", FormatDuration(r1), FormatDuration(r2)),
			tracks: tracks,
			checks: restarts,
		})
	}

	G := F + time.Minute
	gone := slices.Concat(fire, []check{{at: G - step, firing: true}, {at: c.goneBy(G)}})
	end = lastCheck(gone) + time.Minute
	tracks := build(end, when(t0, forever, high, low))
	disappear(G, tracks...)
	out = append(out, testCase{
		name:   c.name("resolves within 2× the scrape interval and one evaluation (%s) when the target disappears", FormatDuration(c.goneBy(G)-G)),
		tracks: tracks,
		checks: gone,
	})
	return out
}

// recordingTest feeds steady traffic to every recorded metric and checks the recorded values
// (×1000, rounded, so the comparison is exact).
func (r *resolved) recordingTest(lv map[string]string) testCase {
	c := &scenario{r: r, lv: lv}
	// Evaluated once the rate window holds only steady traffic (10m for the default 5m), and
	// the flapping window holds 15m of trips.
	at := max(20*time.Minute, r.rateWindow+5*time.Minute)
	end := at + time.Minute
	steady := func(n float64) func(time.Duration) float64 { return func(time.Duration) float64 { return n } }
	tc := testCase{name: "recording rules: expected values under steady traffic"}
	tc.tracks = []*track{
		c.counter(catalog.BreakerCalls, end, steady(1200), catalog.LabelKind, catalog.CallSuccessful.String()),
		c.counter(catalog.BreakerCalls, end, steady(300), catalog.LabelKind, catalog.CallFailed.String()),
		c.counter(catalog.BreakerNotPermitted, end, steady(500)),
		c.counter(catalog.BreakerTransitions, end, every(time.Minute, time.Minute, 1, 0), closedToOpen...),
		c.counter(catalog.RetryCalls, end, steady(1200), catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String()),
		c.counter(catalog.RetryCalls, end, steady(150), catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String()),
		c.counter(catalog.RetryCalls, end, steady(150), catalog.LabelKind, catalog.RetryFailedWithRetry.String()),
		c.counter(catalog.RetryAttempts, end, steady(450)),
		c.counter(catalog.RetryBudgetDenied, end, steady(60)),
		c.counter(catalog.BulkheadCalls, end, steady(1470), catalog.LabelKind, catalog.AdmissionPermitted.String()),
		c.counter(catalog.BulkheadCalls, end, steady(30), catalog.LabelKind, catalog.AdmissionRejected.String()),
		c.counter(catalog.FallbackCalls, end, steady(150), catalog.LabelCause, catalog.CauseCircuitOpen.String()),
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
	expect(r.recBreakerCallsByKind()+`{kind="`+catalog.CallFailed.String()+`"}`, 20000, catalog.LabelKind, catalog.CallFailed.String())
	expect(r.recBreakerCalls(), 100000)
	expect(r.recBreakerNotPermitted(), 33333)
	expect(r.recBreakerRejectionRatio(), 250)
	expect(r.recRetryCallsByKind()+`{kind="`+catalog.RetrySuccessfulWithoutRetry.String()+`"}`, 80000, catalog.LabelKind, catalog.RetrySuccessfulWithoutRetry.String())
	expect(r.recRetryCallsByKind()+`{kind="`+catalog.RetrySuccessfulWithRetry.String()+`"}`, 10000, catalog.LabelKind, catalog.RetrySuccessfulWithRetry.String())
	expect(r.recRetryCallsByKind()+`{kind="`+catalog.RetryFailedWithRetry.String()+`"}`, 10000, catalog.LabelKind, catalog.RetryFailedWithRetry.String())
	expect(r.recRetryCalls(), 100000)
	expect(r.recRetryAttempts(), 30000)
	expect(r.recBudgetDenied(), 4000)
	// The callers' view: the retry's failures (10/s), all answered by fallbacks (10/s).
	expect(r.recFailed(), 10000)
	expect(r.recCalls(), 100000)
	expect(r.recFallbacks(), 10000)
	expect(r.recUnrescued(), 0)
	expect(r.recUnrescuedRatio(), 0)
	expect(r.recRetryRate(), 300)
	expect(r.recRescueRate(), 500)
	expect(r.recBulkheadCallsByKind()+`{kind="`+catalog.AdmissionPermitted.String()+`"}`, 98000, catalog.LabelKind, catalog.AdmissionPermitted.String())
	expect(r.recBulkheadCallsByKind()+`{kind="`+catalog.AdmissionRejected.String()+`"}`, 2000, catalog.LabelKind, catalog.AdmissionRejected.String())
	expect(r.recBulkheadRejectionRatio(), 20)
	expect(r.recFallbacksByCause(), 10000, catalog.LabelCause, catalog.CauseCircuitOpen.String())
	// One trip a minute: 15 in 15 minutes (extrapolated over the window's 14m45s of samples).
	tc.exprs = append(tc.exprs, yamlExprTest{
		Expr:       "round(" + r.recBreakerTrips() + ")",
		EvalTime:   FormatDuration(at),
		ExpSamples: []yamlSample{{Labels: with(labelInstance, lv[labelInstance]), Value: 15}},
	}, yamlExprTest{
		// 500 rejections every 15s: 4000 within the impact window.
		Expr:       "round(" + r.recImpact() + ")",
		EvalTime:   FormatDuration(at),
		ExpSamples: []yamlSample{{Labels: with(labelInstance, lv[labelInstance]), Value: 4000}},
	})
	return tc
}
