package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Sample is one measurement of the demo process, At after it started serving.
type Sample struct {
	At         time.Duration
	RSS        uint64 // resident set size, bytes
	Goroutines int
	FDs        int // open file descriptors
	Bytes      int // size of the /metrics response (uncompressed)
	Series     int // sample lines (series) in the /metrics response
	// Err is why the measurement failed; the other fields are then meaningless. A failed
	// measurement fails the soak: the demo must answer /metrics throughout.
	Err error
}

// Window names the third of the run a sample falls in.
type Window int

// The thirds of a run.
const (
	WarmUp Window = iota // ignored: start-up, the healthy start, the outage's onset
	Middle               // the baseline
	Last                 // compared with the baseline
)

func (w Window) String() string {
	return [...]string{"warm-up", "middle", "last"}[w]
}

// window returns the third of a run lasting run that at falls in.
func window(at, run time.Duration) Window {
	switch {
	case at < run/3:
		return WarmUp
	case at < 2*run/3:
		return Middle
	default:
		return Last
	}
}

// Stat summarises one measure over one window.
type Stat int

// The statistics a Limit compares.
const (
	// Median resists the noise of a healthy process (a GC cycle, a burst of calls in flight)
	// and moves with a leak, which shifts every sample.
	Median Stat = iota
	// Max is for measures that must not move at all once steady: any new value counts.
	Max
)

func (s Stat) String() string { return [...]string{"median", "max"}[s] }

func (s Stat) of(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if s == Max {
		return v[len(v)-1]
	}
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// Limit is how much one measure may grow from the middle third of a run to the last third: the
// last third's statistic must be at most the middle third's times 1+Rel, or plus Abs, whichever
// is larger (Abs keeps small counts such as a few dozen fds from failing on one more).
type Limit struct {
	Name  string
	Unit  string // for the report: "MiB", "" (a count), "bytes"
	Stat  Stat
	Rel   float64
	Abs   float64 // in Unit
	Value func(Sample) float64
}

// bound is the largest last-third value the limit allows after a middle third of base.
func (l Limit) bound(base float64) float64 {
	return max(base*(1+l.Rel), base+l.Abs)
}

const mib = 1 << 20

// Rule is the soak's growth rule. A healthy demo, in a steady outage, meets it on every run; a
// leak of memory, goroutines, connections or series (a label value minted per call, say) breaks
// it within ten minutes.
var Rule = []Limit{
	{Name: "RSS", Unit: "MiB", Stat: Median, Rel: 0.20, Abs: 4, Value: func(s Sample) float64 { return float64(s.RSS) / mib }},
	{Name: "goroutines", Stat: Median, Rel: 0.10, Abs: 10, Value: func(s Sample) float64 { return float64(s.Goroutines) }},
	{Name: "fds", Stat: Median, Rel: 0.10, Abs: 5, Value: func(s Sample) float64 { return float64(s.FDs) }},
	{Name: "/metrics bytes", Unit: "bytes", Stat: Median, Rel: 0.10, Value: func(s Sample) float64 { return float64(s.Bytes) }},
	{Name: "series", Stat: Max, Value: func(s Sample) float64 { return float64(s.Series) }},
}

// MinPerWindow is how many samples the middle and the last third need each for a verdict.
const MinPerWindow = 3

// Check is one limit applied to a run.
type Check struct {
	Limit
	Middle, Last, Bound float64
	OK                  bool
}

// Verdict is the outcome of a soak.
type Verdict struct {
	Checks   []Check
	Problems []string // failed measurements, too few samples, an unclean stop
}

// Pass reports whether every check held and nothing went wrong.
func (v Verdict) Pass() bool {
	if len(v.Problems) > 0 {
		return false
	}
	for _, c := range v.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Judge applies rule to the samples of a run lasting run: the last third against the middle
// third, the warm-up third ignored. Any failed measurement is a problem, and so is a window
// with fewer than MinPerWindow samples (no verdict can be drawn from it).
func Judge(samples []Sample, run time.Duration, rule []Limit) Verdict {
	var v Verdict
	var middle, last []Sample
	for _, s := range samples {
		if s.Err != nil {
			v.Problems = append(v.Problems, fmt.Sprintf("t=%s: %v", s.At, s.Err))
			continue
		}
		switch window(s.At, run) {
		case Middle:
			middle = append(middle, s)
		case Last:
			last = append(last, s)
		}
	}
	if len(middle) < MinPerWindow || len(last) < MinPerWindow {
		v.Problems = append(v.Problems, fmt.Sprintf("%d samples in the middle third and %d in the last: need %d each (a longer run, or a shorter period)", len(middle), len(last), MinPerWindow))
		return v
	}
	values := func(ss []Sample, f func(Sample) float64) []float64 {
		out := make([]float64, len(ss))
		for i, s := range ss {
			out[i] = f(s)
		}
		return out
	}
	for _, l := range rule {
		c := Check{Limit: l, Middle: l.Stat.of(values(middle, l.Value)), Last: l.Stat.of(values(last, l.Value))}
		c.Bound = l.bound(c.Middle)
		c.OK = c.Last <= c.Bound
		v.Checks = append(v.Checks, c)
	}
	return v
}

// Header is the first line of the sample table.
const Header = "      time  window     RSS MiB  goroutines   fds  /metrics bytes  series"

// Row formats a sample as a line of the table.
func Row(s Sample, run time.Duration) string {
	t := s.At.Round(time.Second).String()
	if s.Err != nil {
		return fmt.Sprintf("%10s  %-8s  error: %v", t, window(s.At, run), s.Err)
	}
	return fmt.Sprintf("%10s  %-8s  %8.1f  %10d  %4d  %14d  %6d", t, window(s.At, run), float64(s.RSS)/mib, s.Goroutines, s.FDs, s.Bytes, s.Series)
}

// Print writes the verdict: one line per check, the problems, then PASS or FAIL.
func (v Verdict) Print(w io.Writer) {
	for _, c := range v.Checks {
		ok := "ok"
		if !c.OK {
			ok = "GROWTH"
		}
		allowed := "no growth"
		if c.Rel > 0 || c.Abs > 0 {
			var parts []string
			if c.Rel > 0 {
				parts = append(parts, fmt.Sprintf("+%g%%", c.Rel*100))
			}
			if c.Abs > 0 {
				parts = append(parts, fmt.Sprintf("+%g%s", c.Abs, unitSuffix(c.Unit)))
			}
			allowed = strings.Join(parts, " or ")
		}
		fmt.Fprintf(w, "  %-15s %-6s middle %10s  last %10s  limit %10s (%s)  %s\n",
			c.Name, c.Stat, num(c.Middle, c.Unit), num(c.Last, c.Unit), num(c.Bound, c.Unit), allowed, ok)
	}
	for _, p := range v.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
	if v.Pass() {
		fmt.Fprintln(w, "soak: PASS — no growth from the middle third to the last third")
	} else {
		fmt.Fprintln(w, "soak: FAIL")
	}
}

func unitSuffix(unit string) string {
	if unit == "" {
		return ""
	}
	return " " + unit
}

// num formats a value of the report: MiB with one decimal, counts as integers unless they are
// not (the median of an even number of samples, a relative bound).
func num(v float64, unit string) string {
	if unit == "MiB" || v != math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
