package backtest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

// Interval is a stretch of firing, [From, To): To is the first evaluation at which the alert
// no longer fired (or the end of the range).
type Interval struct {
	Labels string    `json:"labels"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
}

// Agreement compares the replay of one alert with the server's ALERTS series.
type Agreement struct {
	Alert string `json:"alert"`
	// Percent is the share of firing evaluations (of either side, per label set) matched by a
	// firing evaluation of the other side within the tolerance; 100 when neither fired.
	Percent float64 `json:"percent"`
	// Replayed and Recorded count the firing evaluations of each side.
	Replayed int `json:"replayed_steps"`
	Recorded int `json:"recorded_steps"`
	// OnlyReplayed are the replay's firing intervals the server never fired near; OnlyRecorded
	// the server's the replay never fired near.
	OnlyReplayed []Interval `json:"only_replayed"`
	OnlyRecorded []Interval `json:"only_recorded"`
}

// Compare reads the server's ALERTS{alertstate="firing"} series of every alert of rep over its
// range and compares them with the replay, allowing tolerance steps of difference at either
// end of an interval (Prometheus evaluates at its own offsets within the interval, the replay
// on the range's grid: one step apart at most).
func Compare(ctx context.Context, src Source, rep *Report, tolerance int, progress func(string, int, int)) ([]Agreement, error) {
	p := &plan{opts: Options{Source: src, Start: rep.Start, End: rep.End, Interval: rep.Interval, Progress: progress}}
	var out []Agreement
	seen := map[string]bool{}
	for _, a := range rep.Alerts {
		if seen[a.Alert] {
			continue // several rules of one name (the SLO alerts) are compared together
		}
		seen[a.Alert] = true
		recorded := map[string][]int{}
		expr := fmt.Sprintf(`ALERTS{alertname=%s, alertstate="firing"}`, strconv.Quote(a.Alert))
		key := func(m model.Metric) string {
			m = m.Clone()
			delete(m, "alertstate")
			return Key(m, a.Alert, nil)
		}
		i := 0
		err := p.scan(ctx, a.Alert+" (ALERTS)", expr, rep.Start, func(_ time.Time, present map[string]bool) {
			for k := range present {
				recorded[k] = append(recorded[k], i)
			}
			i++
		}, key)
		if err != nil {
			return nil, fmt.Errorf("%s: reading ALERTS: %w", a.Alert, err)
		}
		replayed := map[string][]int{}
		for _, b := range rep.Alerts {
			if b.Alert == a.Alert {
				for k, steps := range replayedSteps(b, rep) {
					replayed[k] = append(replayed[k], steps...)
				}
			}
		}
		for _, steps := range replayed {
			sort.Ints(steps)
		}
		out = append(out, agree(a, replayed, recorded, rep, tolerance))
	}
	return out, nil
}

// replayedSteps are the step indexes (from rep.Start) at which the replay fired, per label set.
func replayedSteps(a AlertResult, rep *Report) map[string][]int {
	out := map[string][]int{}
	last := int(rep.End.Sub(rep.Start) / rep.Interval)
	for _, s := range a.Series {
		for _, e := range s.Episodes {
			from := max(0, ceilSteps(e.Fired.Sub(rep.Start), rep.Interval))
			to := last + 1
			if !e.Resolved.IsZero() {
				to = min(to, ceilSteps(e.Resolved.Sub(rep.Start), rep.Interval))
			}
			for i := from; i < to; i++ {
				out[s.Labels] = append(out[s.Labels], i)
			}
		}
	}
	return out
}

func ceilSteps(d, step time.Duration) int {
	if d <= 0 {
		return int(d / step)
	}
	return int((d + step - 1) / step)
}

func agree(a AlertResult, replayed, recorded map[string][]int, rep *Report, tol int) Agreement {
	ag := Agreement{Alert: a.Alert, Percent: 100}
	matched := 0
	for k, steps := range replayed {
		ag.Replayed += len(steps)
		matched += matchedSteps(steps, recorded[k], tol)
		ag.OnlyReplayed = append(ag.OnlyReplayed, unmatched(k, runs(steps), recorded[k], tol, rep)...)
	}
	for k, steps := range recorded {
		ag.Recorded += len(steps)
		matched += matchedSteps(steps, replayed[k], tol)
		ag.OnlyRecorded = append(ag.OnlyRecorded, unmatched(k, runs(steps), replayed[k], tol, rep)...)
	}
	if n := ag.Replayed + ag.Recorded; n > 0 {
		ag.Percent = 100 * float64(matched) / float64(n)
	}
	sortIntervals(ag.OnlyReplayed)
	sortIntervals(ag.OnlyRecorded)
	return ag
}

// near reports whether sorted other holds a step within tol of s.
func near(other []int, s, tol int) bool {
	i := sort.SearchInts(other, s-tol)
	return i < len(other) && other[i] <= s+tol
}

func matchedSteps(steps, other []int, tol int) int {
	n := 0
	for _, s := range steps {
		if near(other, s, tol) {
			n++
		}
	}
	return n
}

// runs splits sorted steps into runs of consecutive steps, [from, to).
func runs(steps []int) [][2]int {
	var out [][2]int
	for _, s := range steps {
		if n := len(out); n > 0 && out[n-1][1] == s {
			out[n-1][1]++
			continue
		}
		out = append(out, [2]int{s, s + 1})
	}
	return out
}

// unmatched returns the runs with no step of other within tol of them.
func unmatched(key string, rs [][2]int, other []int, tol int, rep *Report) []Interval {
	var out []Interval
	for _, r := range rs {
		i := sort.SearchInts(other, r[0]-tol)
		if i < len(other) && other[i] <= r[1]-1+tol {
			continue
		}
		at := func(i int) time.Time { return rep.Start.Add(time.Duration(i) * rep.Interval) }
		out = append(out, Interval{Labels: key, From: at(r[0]), To: at(r[1])})
	}
	return out
}

func sortIntervals(iv []Interval) {
	sort.Slice(iv, func(i, j int) bool {
		if !iv[i].From.Equal(iv[j].From) {
			return iv[i].From.Before(iv[j].From)
		}
		return iv[i].Labels < iv[j].Labels
	})
}
