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

// --- circuit breaker episodes ---

// episode is one not-closed episode of a breaker: from its trip (at from) until it closes
// (at to), begun by a trip of cause.
type episode struct {
	from, to time.Duration
	cause    string
}

var (
	closedToOpen   = []string{catalog.LabelFrom, catalog.StateClosed.String(), catalog.LabelTo, catalog.StateOpen.String()}
	halfOpenToOpen = []string{catalog.LabelFrom, catalog.StateHalfOpen.String(), catalog.LabelTo, catalog.StateOpen.String()}
	causeFailure   = catalog.TripFailureRate.String()
	causeSlow      = catalog.TripSlowCallRate.String()
)

// trippedSince renders the collector's tripped_since series of one breaker over episodes (in
// time order): while closed, a series without the cause label holding 0; during an episode, a
// series labelled with its cause holding the trip's Unix time. A series that stops being
// exported gets a stale marker, as Prometheus writes one. With noCause, one series without
// the cause label holds both (collectors older than the trip-cause label).
func trippedSince(lv map[string]string, end time.Duration, eps []episode, noCause bool) []*track {
	in := func(t time.Duration) (episode, bool) {
		for _, e := range eps {
			if t >= e.from && t < e.to {
				return e, true
			}
		}
		return episode{}, false
	}
	since := func(t time.Duration) float64 { e, _ := in(t); return e.from.Seconds() }
	if noCause {
		return []*track{newTrack(lv, catalog.BreakerTrippedSince, end, false, since)}
	}
	out := []*track{newTrack(lv, catalog.BreakerTrippedSince, end, false, zero)}
	causes := []string{""}
	for _, e := range eps {
		if !slices.Contains(causes, e.cause) {
			causes = append(causes, e.cause)
			out = append(out, newTrack(lv, catalog.BreakerTrippedSince, end, false, since, catalog.LabelCause, e.cause))
		}
	}
	for i := range out[0].vals {
		e, ok := in(time.Duration(i) * step)
		for k, tr := range out {
			switch {
			case k == 0 && !ok || k > 0 && ok && e.cause == causes[k]:
				tr.kinds[i] = sampled
			case i > 0 && tr.kinds[i-1] == sampled:
				tr.kinds[i] = staleMarker
			default:
				tr.kinds[i] = noSample
			}
		}
	}
	return out
}

// states renders the state gauge of one breaker: state(t) names its state at t.
func states(lv map[string]string, end time.Duration, state func(time.Duration) catalog.State, shown ...catalog.State) []*track {
	var out []*track
	for _, s := range shown {
		out = append(out, newTrack(lv, catalog.BreakerState, end, false, func(t time.Duration) float64 {
			if state(t) == s {
				return 1
			}
			return 0
		}, catalog.LabelState, s.String()))
	}
	return out
}

// breakerProc is one process's breaker: its episodes, rejections and failed probes.
type breakerProc struct {
	lv                 map[string]string
	eps                []episode
	rejections, probes func(time.Duration) float64
	noCause            bool
}

func (p breakerProc) tracks(end time.Duration) []*track {
	return append(trippedSince(p.lv, end, p.eps, p.noCause), newTrack(p.lv, catalog.BreakerNotPermitted, end, true, p.rejections),
		newTrack(p.lv, catalog.BreakerTransitions, end, true, orZero(p.probes), halfOpenToOpen...))
}

func orZero(f func(time.Duration) float64) func(time.Duration) float64 {
	if f == nil {
		return zero
	}
	return f
}

// --- stuck open ---

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

// stuckOpen holds what the stuck-open cases share: the threshold and the first evaluation cond
// at which a breaker tripped at t0 has been open for more than it.
type stuckOpen struct {
	*scenario
	threshold, cond time.Duration
	rejecting       func(time.Duration) float64
}

// open is a breaker of the scenario's target that tripped at t0 on cause and stays open.
func (so stuckOpen) open(cause string, p breakerProc) func(time.Duration) []*track {
	p.lv, p.eps = orLabels(p.lv, so.lv), []episode{{t0, forever, cause}}
	if p.rejections == nil {
		p.rejections = so.rejecting
	}
	return p.tracks
}

// fire is the checks of an episode begun at t0 on cause.
func (so stuckOpen) fire(cause string) []check { return stuck(so.fires(so.cond, so.cond), t0, cause) }

func stuckOpenScenarios(c *scenario) ([]testCase, error) {
	threshold := time.Duration(c.s.threshold) * time.Second
	so := stuckOpen{scenario: c, threshold: threshold, cond: afterStep(t0 + threshold), rejecting: when(t0+step, forever, 20, 0)}
	cond, forDur := so.cond, c.forDur()
	end := cond + forDur + 2*time.Minute
	// Half-open scrapes: the breaker cycles open → half_open → open every 30s; the probes fail
	// and no call is rejected in between. The episode is still one episode.
	state := func(t time.Duration) catalog.State {
		switch {
		case t < t0:
			return catalog.StateClosed
		case (t-t0)%(2*step) == step:
			return catalog.StateHalfOpen
		}
		return catalog.StateOpen
	}
	halfOpen := append(so.open(causeFailure, breakerProc{rejections: zero, probes: every(t0+2*step, 2*step, 1, 0)})(end),
		states(c.lv, end, state, catalog.StateClosed, catalog.StateOpen, catalog.StateHalfOpen)...)
	out := []testCase{
		{name: c.name("fires %s after the trip (not closed for over %s, then for %s) while calls are rejected, naming the trip cause", FormatDuration(cond+forDur-t0), FormatDuration(threshold), FormatDuration(forDur)),
			tracks: so.open(causeFailure, breakerProc{})(end), checks: so.fire(causeFailure)},
		{name: c.name("fires on a breaker that tripped on slow calls and names the cause %s", causeSlow), tracks: so.open(causeSlow, breakerProc{})(end), checks: so.fire(causeSlow)},
		{name: c.name("fires with an unknown cause when tripped_since has no cause label (older collectors)"), tracks: so.open("", breakerProc{noCause: true})(end), checks: so.fire("")},
		{name: c.name("fires on failed half-open probes without rejections; half-open scrapes do not reset it"), tracks: halfOpen, checks: so.fire(causeFailure)},
	}
	// One failed scrape while pending: every series of the target is marked stale once.
	if c.bridges(1) {
		fs := cond + ceilStep(forDur/2)
		tracks := so.open(causeFailure, breakerProc{})(end)
		failScrape(fs, tracks...)
		out = append(out, testCase{name: c.name("fires on time although one scrape failed at %s while it was pending", FormatDuration(fs)), tracks: tracks,
			checks: stuck(sortChecks(append(c.fires(cond, cond), check{at: max(fs, cond+forDur), firing: true})), t0, causeFailure)})
	}
	blip := breakerProc{lv: c.lv, eps: []episode{{t0, t0 + step, causeFailure}}, rejections: when(t0+step, t0+2*step, 20, 0)}
	out = append(out,
		c.tc("a 15s open blip with rejections does not fire", silent(cond+forDur, cond+forDur+5*time.Minute), blip.tracks),
		c.tc("idle: an open breaker without traffic (no rejections, no probes) does not fire", silent(cond+forDur, cond+forDur+10*time.Minute),
			so.open(causeFailure, breakerProc{rejections: zero})),
		so.newCause())
	more, err := so.recovery()
	return append(out, more...), err
}

// newCause: the breaker closes for one scrape and trips again on another cause. The first
// episode's series is still within the gauges' lookback, with the older trip time: the alert
// follows the newest episode only, so it neither fires again for the old cause nor ever
// carries two causes, and fires for the new one threshold after the new trip.
func (so stuckOpen) newCause() testCase {
	closes := so.cond + so.forDur() + time.Minute
	trip2 := closes + step
	cond2 := afterStep(trip2 + so.threshold)
	checks := stuck(slices.Concat(so.fires(so.cond, so.cond), firingAt(closes-step)), t0, causeFailure)
	quiet := ceilStep(closes+so.keep()) + step
	if quiet < cond2+so.forDur() {
		checks = append(checks, check{at: quiet})
	}
	checks = sortChecks(append(checks, stuck([]check{{at: max(cond2+so.forDur(), quiet), firing: true}}, trip2, causeSlow)...))
	tc := so.tc(fmt.Sprintf("a new episode of another cause right after the breaker closes: fires for the new cause only, %s after the new trip", FormatDuration(cond2+so.forDur()-trip2)),
		checks, breakerProc{lv: so.lv, eps: []episode{{t0, closes, causeFailure}, {trip2, forever, causeSlow}}, rejections: so.rejecting}.tracks)
	if so.bridges(2) {
		// At the new trip, both episodes' series are within the lookback, the old one past the
		// threshold: no alert for it, not even a pending one (the new episode is young).
		tc.exprs = []yamlExprTest{{Expr: fmt.Sprintf(`ALERTS{alertname=%q, alertstate="pending"}`, so.sp.name),
			EvalTime: FormatDuration(trip2), ExpSamples: []yamlSample{}}}
	}
	return tc
}

// recovery: two instances, recovery, a vanished target, a restart.
func (so stuckOpen) recovery() ([]testCase, error) {
	insts, err := so.r.instanceValues(2, so.sp.name)
	if err != nil {
		return nil, err
	}
	lv1, lv2 := maps.Clone(so.lv), maps.Clone(so.lv)
	lv1[labelInstance], lv2[labelInstance] = insts[0], insts[1]
	two := so.fire(causeFailure)
	for i := range two {
		two[i].lv = lv1
	}
	closes := so.cond + so.forDur() + time.Minute
	out := []testCase{
		so.tc("two instances, one stuck: fires for that instance only", two, func(end time.Duration) []*track {
			return append(so.open(causeFailure, breakerProc{lv: lv1})(end), breakerProc{lv: lv2, rejections: zero}.tracks(end)...)
		}),
		so.tc("resolves once the breaker closes", stuck(slices.Concat(so.fires(so.cond, so.cond), so.resolves(closes, closes)), t0, causeFailure),
			breakerProc{lv: so.lv, eps: []episode{{t0, closes, causeFailure}}, rejections: when(t0+step, closes, 20, 0)}.tracks),
	}
	gone := so.goneCase(so.fire(causeFailure), closes, "target disappears", so.open(causeFailure, breakerProc{}))
	gone.checks = stuck(gone.checks, t0, causeFailure)
	out = append(out, gone)
	if !so.bridges(2) {
		return out, nil
	}
	// A restart mid-incident: the new process's breaker trips again at once, a new episode.
	gap := 2 * step
	trip2 := closes + gap - step
	cond2 := afterStep(trip2 + so.threshold)
	restarted := stuck(slices.Concat(so.fires(so.cond, so.cond), firingAt(closes-step, closes)), t0, causeFailure)
	if quiet := ceilStep(closes+gap+so.keep()) + step; quiet < cond2 {
		restarted = append(restarted, check{at: quiet})
	}
	restarted = sortChecks(append(restarted, stuck([]check{{at: cond2 + so.forDur(), firing: true}}, trip2, causeFailure)...))
	return append(out, so.tc(fmt.Sprintf("after a process restart mid-incident (two missed scrapes) fires again once the new process's breaker has been open for %s", FormatDuration(so.threshold)),
		restarted, func(end time.Duration) []*track {
			tracks := breakerProc{lv: so.lv, eps: []episode{{t0, closes, causeFailure}, {trip2, forever, causeFailure}}, rejections: so.rejecting}.tracks(end)
			restart(closes, gap, tracks...)
			return tracks
		})), nil
}

// --- flapping ---

// flapping holds what the flapping cases share: a burst of n trips, one every pace, the n-th
// at tN.
type flapping struct {
	*scenario
	n        int
	pace, tN time.Duration
}

// tripAt is the time of trip i (from 0) of the burst.
func (f flapping) tripAt(i int) time.Duration { return t0 + time.Duration(i)*f.pace }

// trips renders trips at the given times, each a one-step episode caused by cause.
func (f flapping) trips(trips []time.Duration, cause string) func(time.Duration) []*track {
	return func(end time.Duration) []*track {
		out := []*track{f.counter(catalog.BreakerTransitions, end, func(t time.Duration) float64 {
			if slices.Contains(trips, t) {
				return 1
			}
			return 0
		}, closedToOpen...)}
		if cause == "" {
			return out
		}
		var eps []episode
		for _, t := range trips {
			eps = append(eps, episode{t, t + step, cause})
		}
		return append(out, trippedSince(f.lv, end, eps, false)...)
	}
}

// burst returns the first count trips (all for count < 0) up to until.
func (f flapping) burst(count int, until time.Duration) []time.Duration {
	var out []time.Duration
	for i := 0; (count < 0 || i < count) && f.tripAt(i) <= until; i++ {
		out = append(out, f.tripAt(i))
	}
	return out
}

func flappingScenarios(c *scenario) ([]testCase, error) {
	f := flapping{scenario: c, n: int(c.s.threshold), pace: time.Minute}
	if time.Duration(f.n)*f.pace > 10*time.Minute {
		f.pace = max(step, 10*time.Minute/time.Duration(f.n)/step*step)
	}
	f.tN = f.tripAt(f.n - 1)
	all, quiet := f.trips(f.burst(-1, forever), causeFailure), silent(f.tN+c.forDur(), f.tN+c.forDur()+5*time.Minute)
	fire := func(causes string) []check { return withCauses(c.fires(f.tN, f.tN), causes, nil) }
	return append([]testCase{
		c.tc(fmt.Sprintf("fires on trip number %d within %s (one trip every %s), naming the last trip's cause", f.n, FormatDuration(flappingWindow), FormatDuration(f.pace)),
			fire(causeFailure), all),
		c.tc("fires and says the cause is unknown when the breaker exports none", fire("unknown"), f.trips(f.burst(-1, forever), "")),
		c.tc("a single 15s trip (a blip) does not fire", quiet, f.trips(f.burst(1, forever), causeFailure)),
		c.tc(fmt.Sprintf("%d trips within %s stay below the threshold", f.n-1, FormatDuration(flappingWindow)), quiet, f.trips(f.burst(f.n-1, forever), causeFailure)),
		c.tc("an idle breaker without transitions does not fire", quiet, f.trips(nil, "")),
	}, f.holds()...), nil
}

// holds: resolution, hysteresis and a restart while firing.
func (f flapping) holds() []testCase {
	firing := f.tN + f.forDur()
	resolved := func(last time.Duration) time.Duration { return ceilStep(last+flappingWindow+f.keep()) + step }
	// Resolution: at the latest flappingWindow after the last trip, whatever keep_firing_for.
	trips := f.burst(-1, firing)
	last := trips[len(trips)-1]
	res := []check{{at: firing, firing: true}, {at: resolved(last)}}
	if hold := last + flappingWindow - 2*step; hold > firing {
		res = append(res, check{at: hold, firing: true})
	}
	out := []testCase{f.tc(fmt.Sprintf("resolves %s after the last trip, holding until then", FormatDuration(flappingWindow)),
		withCauses(sortChecks(res), causeFailure, nil), f.trips(trips, causeFailure))}
	// Hysteresis: after the burst the breaker keeps tripping at a pace that reaches the
	// threshold only now and then; the alert holds, then resolves after the last trip.
	if pace, ok := slowPace(f.n); ok {
		slow := f.burst(f.n, forever)
		for t := f.tN + pace; t <= f.tN+pace*6; t += pace {
			slow = append(slow, t)
		}
		lastSlow := slow[len(slow)-1]
		hold := firingAt(firing)
		for t := firing + pace; t < lastSlow; t += 3 * time.Minute {
			hold = append(hold, check{at: t, firing: true})
		}
		out = append(out, f.tc(fmt.Sprintf("keeps firing while the breaker trips every %s (below %d per %s most of the time) and resolves %s after the last trip", FormatDuration(pace), f.n, FormatDuration(flappingWindow), FormatDuration(flappingWindow)),
			withCauses(append(hold, check{at: resolved(lastSlow)}), causeFailure, nil), f.trips(slow, causeFailure)))
	}
	// Hysteresis: once resolved, a single later trip does not bring it back, even while the
	// burst's trips are still within the trips' window at the start of the next window.
	burst := f.burst(f.n, forever)
	resolvedAt := resolved(burst[len(burst)-1])
	again := resolvedAt + time.Minute
	out = append(out, f.tc("hysteresis: after the episode resolves, a single later trip does not bring it back",
		withCauses([]check{{at: firing, firing: true}, {at: resolvedAt}, {at: again}, {at: again + step}, {at: again + 3*time.Minute}, {at: again + flappingWindow}}, causeFailure, nil),
		f.trips(append(burst, again), causeFailure)))
	// A process restart while firing: the trip counter starts again from 0.
	rs := firing + time.Minute
	return append(out, f.tc("fires and keeps firing through a process restart (counter reset, two missed scrapes)",
		withCauses(slices.Concat(f.fires(f.tN, f.tN), firingAt(rs, rs+step, rs+2*step, rs+3*time.Minute)), causeFailure, nil),
		func(end time.Duration) []*track {
			tracks := f.trips(f.burst(-1, forever), causeFailure)(end)
			restart(rs, 2*step, tracks...)
			return tracks
		}))
}

// slowPace returns a steady trip pace at which the number of trips in the flapping window
// reaches n only now and then (one less most of the time), if the 15s steps allow one.
func slowPace(n int) (time.Duration, bool) {
	// Trips are counted by increase() over the window: effectively one step less.
	eff := flappingWindow - step
	p := ceilStep(time.Duration(float64(eff) / (float64(n) - 0.5)))
	return p, n >= 2 && time.Duration(n-1)*p < eff && time.Duration(n)*p >= eff
}

// --- fleet-wide ---

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

// fleet holds what the fleet-wide cases share: n instances, open of them impaired.
type fleet struct {
	*scenario
	n, open int
	insts   []string
}

// state is the state of a breaker in mode m from `from` to `to`.
func (m fleetMode) state(from, to time.Duration) func(time.Duration) catalog.State {
	return func(t time.Duration) catalog.State {
		switch {
		case m == modeServing || t < from || t >= to:
			return catalog.StateClosed
		case m == modeProbing && (t-from)%(2*step) == step:
			return catalog.StateHalfOpen
		case m == modeForced:
			return catalog.StateForcedOpen
		case m == modeDisabled:
			return catalog.StateDisabled
		}
		return catalog.StateOpen
	}
}

// proc is a breaker in mode m from `from` to `to`.
func (m fleetMode) proc(lv map[string]string, from, to time.Duration) breakerProc {
	p := breakerProc{lv: lv, rejections: zero}
	switch m {
	case modeRejecting, modeProbing, modeIdle:
		p.eps = []episode{{from, to, causeFailure}}
	case modeForced:
		p.eps = []episode{{from, to, catalog.TripForced.String()}}
	}
	switch m {
	case modeRejecting, modeForced:
		p.rejections = when(from+step, to, 20, 0)
	case modeProbing:
		p.probes = func(t time.Duration) float64 {
			if t > from && t < to && (t-from)%(2*step) == 0 {
				return 1
			}
			return 0
		}
	}
	return p
}

// build renders instances instances of the breaker, the first count doing m from `from` to `to`.
func (fl fleet) build(count int, m fleetMode, from, to time.Duration, instances int) func(time.Duration) []*track {
	return func(end time.Duration) []*track {
		var out []*track
		for i := range instances {
			lv := maps.Clone(fl.lv)
			lv[labelInstance] = fl.insts[i]
			mi := modeServing
			if i < count {
				mi = m
			}
			shown := []catalog.State{catalog.StateClosed, catalog.StateOpen, catalog.StateHalfOpen}
			if mi == modeForced || mi == modeDisabled {
				shown = append(shown, mi.state(from, to)(from))
			}
			out = append(append(out, states(lv, end, mi.state(from, to), shown...)...), mi.proc(lv, from, to).tracks(end)...)
		}
		return out
	}
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
	fl := fleet{scenario: c, n: n, open: open, insts: insts}
	start := t0 + step // first rejections: the impact is visible from here on
	fire := fl.expect(c.fires(start, start))
	out := []testCase{
		c.tc(fmt.Sprintf("fires when %d of %d instances have the breaker open and rejecting calls", open, n), fire, fl.build(open, modeRejecting, t0, forever, n)),
		{name: c.name("fires when %d of %d instances have the breaker open and half-open in turn, its probes failing", open, n),
			tracks: fl.build(open, modeProbing, t0, forever, n)(lastCheck(fire) + time.Minute), checks: fl.expect(c.fires(t0+2*step, t0+2*step))},
	}
	return append(out, fl.quiet()...), nil
}

// quiet: the cases that must not page, a failed scrape, recovery, a vanished fleet.
func (fl fleet) quiet() []testCase {
	minInst, n, open := fl.s.minInstances, fl.n, fl.open
	start := t0 + step
	quiet := silent(start+fl.forDur(), start+fl.forDur()+5*time.Minute)
	var out []testCase
	if minInst >= 2 {
		out = append(out, fl.tc(fmt.Sprintf("a job of %d instance(s), all open and rejecting, does not fire (fewer than min_instances %d)", minInst-1, minInst),
			quiet, fl.build(minInst-1, modeRejecting, t0, forever, minInst-1)))
	}
	if minInst >= 2 || fl.s.threshold >= 0.5 {
		out = append(out, fl.tc("two instances, one stuck, do not fire", quiet, fl.build(1, modeRejecting, t0, forever, 2)))
	}
	out = append(out,
		fl.tc(fmt.Sprintf("idle: breakers open on %d of %d instances without traffic (no rejections, no probes) do not fire", open, n), quiet, fl.build(open, modeIdle, t0, forever, n)),
		fl.tc(fmt.Sprintf("breakers forced open by an operator on %d of %d instances do not fire", open, n), quiet, fl.build(open, modeForced, t0, forever, n)),
		fl.tc(fmt.Sprintf("disabled breakers on %d of %d instances do not fire", open, n), quiet, fl.build(open, modeDisabled, t0, forever, n)),
		fl.tc(fmt.Sprintf("a 15s blip on %d of %d instances does not fire", open, n), quiet, fl.build(open, modeRejecting, t0, t0+2*step, n)))
	if open-1 >= minInst {
		out = append(out, fl.tc(fmt.Sprintf("%d of %d instances (not more than %s) do not fire", open-1, n, pct(fl.s.threshold)), quiet, fl.build(open-1, modeRejecting, t0, forever, n)))
	}
	// One failed scrape of every instance while pending does not delay it.
	if fl.bridges(1) {
		fs := start + ceilStep(fl.forDur()/2)
		out = append(out, fl.tc(fmt.Sprintf("fires on time although one scrape of every instance failed at %s while it was pending", FormatDuration(fs)),
			fl.expect(sortChecks(append(fl.fires(start, start), check{at: max(fs, start+fl.forDur()), firing: true}))),
			func(end time.Duration) []*track {
				tracks := fl.build(open, modeRejecting, t0, forever, n)(end)
				failScrape(fs, tracks...)
				return tracks
			}))
	}
	closes := start + fl.forDur() + time.Minute
	gone := fl.goneCase(fl.fires(start, start), closes, "instances disappear", fl.build(open, modeRejecting, t0, forever, n))
	gone.checks = fl.expect(gone.checks)
	return append(out, fl.tc("resolves once the breakers close", fl.expect(slices.Concat(fl.fires(start, start), fl.resolves(closes, closes))),
		fl.build(open, modeRejecting, t0, closes, n)), gone)
}
