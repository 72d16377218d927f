package rules

import (
	"fmt"
	"math"
	"time"
)

// The replay of an SLO's rules over a test scenario's counters, exactly as Prometheus evaluates
// them (rate()'s extrapolation, left-open ranges, Kahan sums, rules of a group reading the ones
// before them at the same timestamp): when the burn alerts of the SLO tests (slo_cases.go)
// fire, and the error ratio their descriptions state.

// traffic is a scenario's calls per sample (step): calls every `every` samples (every sample
// when every ≤ 1), of which bad fail at the samples in (from, to] (to < 0: to the end).
type traffic struct {
	calls, bad float64
	every      int
	from, to   int
}

// at is the good and bad calls of sample i ≥ 1.
func (tr traffic) at(i int) (good, bad float64) {
	switch {
	case tr.every > 1 && i%tr.every != 0:
		return 0, 0
	case i > tr.from && (tr.to < 0 || i <= tr.to):
		return tr.calls - tr.bad, tr.bad
	}
	return tr.calls, 0
}

// sloSim is one SLO's rules replayed over a scenario of two counters sampled every step: good
// calls and bad calls (the source's successful and failed kinds). The rules are evaluated
// every `every`, from 0; evaluation k sees the samples up to sample k·every/step.
type sloSim struct {
	s         *resolvedSLO
	every     time.Duration // the evaluation interval
	peers     []*sloSim     // the other SLOs reading the same counters (same dependency and source)
	good, bad []float64     // counter values by sample
	calls     []float64     // recorded base rate of all calls, by evaluation; NaN where absent
	badCalls  []float64     // recorded base rate of bad calls (present from the first evaluation)
	thr       []float64     // thresholds of the burn rules, as PromQL parses them
}

// counters are the good and bad counters of evals evaluations, every apart, of traffic tr.
// They start at sloTestOffset, or a power of ten times it large enough that no step adds more
// than a hundredth of it: heavy traffic (the guard of a min_calls of 10⁹ needs millions of
// calls per step) on a small start would make rate() extrapolate the good counter towards zero
// in the first evaluations and not the bad one, skewing the early error ratios.
func counters(tr traffic, every time.Duration, evals int) (good, bad []float64) {
	n := (evals-1)*samplesPer(every) + 1
	good, bad = make([]float64, n), make([]float64, n)
	var most float64
	for i := 1; i < n; i++ {
		good[i], bad[i] = tr.at(i)
		most = max(most, good[i], bad[i])
	}
	start := float64(sloTestOffset)
	for start < 100*most {
		start *= 10
	}
	good[0], bad[0] = start, start
	for i := 1; i < n; i++ {
		good[i] += good[i-1]
		bad[i] += bad[i-1]
	}
	return good, bad
}

// samplesPer is the samples (steps) per evaluation interval every.
func samplesPer(every time.Duration) int { return int(every / step) }

// replaySLO replays s's rules over the counters good and bad for evals evaluations, every
// apart: the recorded base rates.
func replaySLO(s *resolvedSLO, every time.Duration, evals int, good, bad []float64) *sloSim {
	sim := &sloSim{s: s, every: every, good: good, bad: bad, calls: make([]float64, evals), badCalls: make([]float64, evals)}
	for _, b := range s.burns {
		sim.thr = append(sim.thr, decimalFloat(b.threshold))
	}
	for k := range evals {
		rg, okG := rateAt(good, k*samplesPer(every), s.base())
		rb, okB := rateAt(bad, k*samplesPer(every), s.base())
		sim.calls[k] = math.NaN()
		if okG && okB {
			sim.calls[k] = kahanTotal([]float64{rb, rg}) // sum orders series by labels: failed before successful
		}
		if okB {
			sim.badCalls[k] = math.Max(rb-0, 0) // (rate or zero) - (zero), clamped
		}
	}
	return sim
}

func (sim *sloSim) evals() int { return len(sim.calls) }

// firstIn is the index of the first point, of points spaced by spacing from 0, inside the
// left-open range (t−w, t].
func firstIn(t, w, spacing time.Duration) int {
	if t < w {
		return 0
	}
	return int((t-w)/spacing) + 1
}

// rateAt is Prometheus' rate() of a counter without resets over w at sample i. The range ends
// at its last sample, so only its start is extrapolated.
func rateAt(v []float64, i int, w time.Duration) (float64, bool) {
	t := time.Duration(i) * step
	j := firstIn(t, w, step)
	if i-j+1 < 2 {
		return 0, false
	}
	delta := v[i] - v[j]
	toStart := (time.Duration(j)*step - (t - w)).Seconds()
	sampled := (time.Duration(i-j) * step).Seconds()
	avg := sampled / float64(i-j)
	if delta > 0 && v[j] >= 0 {
		toStart = min(toStart, sampled*(v[j]/delta)) // extrapolate no further than zero
	}
	ext := sampled
	if toStart < avg*1.1 {
		ext += toStart
	} else {
		ext += avg / 2
	}
	return delta * (ext / sampled / w.Seconds()), true
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

// kahan is Prometheus' compensated sum of xs: the sum and its compensation.
func kahan(xs []float64) (sum, c float64) {
	for _, x := range xs {
		sum, c = kahanSumInc(x, sum, c)
	}
	return sum, c
}

// kahanTotal is sum_over_time's (and sum's) result over xs.
func kahanTotal(xs []float64) float64 {
	sum, c := kahan(xs)
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
	if total := kahanTotal(calls); len(calls) > 0 && total > 0 {
		return kahanTotal(sim.window(sim.badCalls, k, w)) / total, true
	}
	return 0, false
}

// callsIn is the guard's estimate of the calls in the long window w at evaluation k:
// avg_over_time(calls[w]) × w.
func (sim *sloSim) callsIn(k int, w time.Duration) (float64, bool) {
	xs := sim.window(sim.calls, k, w)
	if len(xs) == 0 {
		return 0, false
	}
	sum, c := kahan(xs)
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
	above := func(v, thr float64) bool {
		st.margin = min(st.margin, math.Abs(v/thr-1))
		return v > thr
	}
	rs, okS := sim.ratio(k, br.short)
	rl, okL := sim.ratio(k, br.long)
	st.firing = okS && okL
	if okS {
		st.firing = above(rs, sim.thr[b]) && st.firing
		st.value = rs
	}
	if okL {
		st.firing = above(rl, sim.thr[b]) && st.firing
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

// firing counts, at evaluation k, the burn rules want selects (of) and those of them firing (n).
func (sim *sloSim) firing(k int, want func(resolvedBurn) bool) (n, of int) {
	for b, br := range sim.s.burns {
		if want(br) {
			of++
			if sim.state(k, b).firing {
				n++
			}
		}
	}
	return n, of
}

// first is the first evaluation from k on at which all (or, when !all, any) of the burn rules
// want selects fire, or -1.
func (sim *sloSim) first(k int, want func(resolvedBurn) bool, all bool) int {
	for ; k < sim.evals(); k++ {
		if n, of := sim.firing(k, want); n > 0 && (!all || n == of) {
			return k
		}
	}
	return -1
}

// silent reports whether none of the burn rules want selects fires at any evaluation.
func (sim *sloSim) silent(want func(resolvedBurn) bool) bool { return sim.first(0, want, false) < 0 }

func allBurns(resolvedBurn) bool      { return true }
func pageBurns(b resolvedBurn) bool   { return b.Page }
func ticketBurns(b resolvedBurn) bool { return !b.Page }

// certain reports whether the outcome at evaluation k, of this SLO's rules and its peers',
// cannot depend on float rounding.
func (sim *sloSim) certain(k int) bool {
	for _, p := range append([]*sloSim{sim}, sim.peers...) {
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
	for b := range sim.s.burns {
		st := sim.state(k, b)
		v, h := st.value*100, humanizePercentage(st.value)
		if st.margin < 1e-9 || st.firing && (h != fmt.Sprintf("%.4g%%", v*(1+1e-12)) || h != fmt.Sprintf("%.4g%%", v*(1-1e-12))) {
			return false
		}
	}
	return true
}

// humanizePercentage is Prometheus' template function of that name.
func humanizePercentage(v float64) string { return fmt.Sprintf("%.4g%%", v*100) }

// settle returns the first evaluation whose outcome is certain, from k towards bound (dir +1
// or −1, bound included), or -1. It prefers one where the peers' outcomes are certain too;
// failing that, one where this SLO's is (render leaves a check out where a peer's is not).
func (sim *sloSim) settle(k, dir, bound int) int {
	for _, certain := range []func(int) bool{sim.certain, sim.certainAlone} {
		for j := k; (j-bound)*dir <= 0; j += dir {
			if certain(j) {
				return j
			}
		}
	}
	return -1
}
