package main

import (
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// ruleSamples is what one rule's expression reads when Prometheus evaluates it once: the
// samples it loads from storage (totalQueryableSamples of /api/v1/query?stats=all). Unlike the
// evaluation time, this does not depend on the machine's load: it is the work's size.
type ruleSamples struct {
	group, name string
	samples     float64
	// seriesReads is the series every vector selector of the expression matches, summed: each
	// one costs Prometheus a walk through the series' head chunk up to the evaluation time,
	// whether the selector is instant (a recorded series) or a range (rate of a counter), so
	// this counts the work that samples undercounts for instant selectors.
	seriesReads float64
}

// querySamples evaluates every rule's expression once, as an instant query at the current
// time, and records the samples each one read.
func (r *result) querySamples(base string) error {
	var rr struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name  string `json:"name"`
					Query string `json:"query"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := getJSON(base+"/api/v1/rules", &rr); err != nil {
		return err
	}
	for _, g := range rr.Data.Groups {
		for _, rl := range g.Rules {
			var qr struct {
				Data struct {
					Stats struct {
						Samples struct {
							TotalQueryableSamples float64 `json:"totalQueryableSamples"`
						} `json:"samples"`
					} `json:"stats"`
				} `json:"data"`
			}
			if err := getJSON(base+"/api/v1/query?stats=all&query="+url.QueryEscape(rl.Query), &qr); err != nil {
				return fmt.Errorf("rule %s: %w", rl.Name, err)
			}
			reads, err := seriesReads(base, rl.Query)
			if err != nil {
				return fmt.Errorf("rule %s: %w", rl.Name, err)
			}
			r.samples = append(r.samples, ruleSamples{g.Name, rl.Name, qr.Data.Stats.Samples.TotalQueryableSamples, reads})
			r.totalSamples += qr.Data.Stats.Samples.TotalQueryableSamples
			r.totalSeriesReads += reads
		}
	}
	sort.SliceStable(r.samples, func(i, j int) bool { return r.samples[i].samples > r.samples[j].samples })
	return nil
}

// printSamples prints the samples each rule reads per evaluation, most first.
func (r *result) printSamples(w io.Writer, top int) {
	depInst := float64(r.n * r.m)
	fmt.Fprintf(w, "\nsamples read per evaluation round (all rules, one instant query each): %.0f (%.1f per dependency-instance)\n\n",
		r.totalSamples, r.totalSamples/depInst)
	fmt.Fprintf(w, "series read per evaluation round (the series each vector selector matches, summed): %.0f (%.1f per dependency-instance)\n\n",
		r.totalSeriesReads, r.totalSeriesReads/depInst)
	fmt.Fprintf(w, "| rule | group | samples | per dependency-instance | series read | per dependency-instance |\n|---|---|---:|---:|---:|---:|\n")
	for i, s := range r.samples {
		if top > 0 && i >= top {
			break
		}
		fmt.Fprintf(w, "| `%s` | %s | %.0f | %.1f | %.0f | %.1f |\n", s.name, s.group, s.samples, s.samples/depInst, s.seriesReads, s.seriesReads/depInst)
	}
}

var (
	// labelLists are the label lists of by, without, on, ignoring, group_left and group_right.
	labelLists = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// identifier is a metric name with its optional matchers, or a keyword or function name.
	identifier = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?`)
	keywords   = map[string]bool{"and": true, "or": true, "unless": true, "offset": true, "bool": true}
)

// selectors returns the vector selectors of a PromQL expression, without their ranges and
// offsets: every metric name (with its matchers) that is not a function, an aggregation, a
// keyword, a label of a label list or a duration. The rules' expressions hold no strings
// outside matchers, which this relies on.
func selectors(expr string) []string {
	expr = labelLists.ReplaceAllString(expr, " ")
	var out []string
	for _, m := range identifier.FindAllStringSubmatchIndex(expr, -1) {
		name := expr[m[2]:m[3]]
		rest := strings.TrimLeft(expr[m[1]:], " \n")
		before := expr[:m[0]]
		if m[0] > 0 && strings.ContainsAny(expr[m[0]-1:m[0]], "0123456789.") {
			continue // the unit of a duration (1h) or the exponent of a number
		}
		if keywords[name] || strings.HasPrefix(rest, "(") || strings.LastIndex(before, "[") > strings.LastIndex(before, "]") {
			continue // a keyword, a function or aggregation, or inside a range or subquery
		}
		if m[4] >= 0 {
			name += expr[m[4]:m[5]]
		}
		out = append(out, name)
	}
	return out
}

// seriesReads sums, over the vector selectors of expr, the series each one matches now.
func seriesReads(base, expr string) (float64, error) {
	var total float64
	for _, sel := range selectors(expr) {
		n, err := query(base, "count(last_over_time("+sel+"[1m]))")
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
