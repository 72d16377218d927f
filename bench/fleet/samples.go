package main

import (
	"fmt"
	"io"
	"net/url"
	"sort"
)

// ruleSamples is what one rule's expression reads when Prometheus evaluates it once: the
// samples it loads from storage (totalQueryableSamples of /api/v1/query?stats=all). Unlike the
// evaluation time, this does not depend on the machine's load: it is the work's size.
type ruleSamples struct {
	group, name string
	samples     float64
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
			r.samples = append(r.samples, ruleSamples{g.Name, rl.Name, qr.Data.Stats.Samples.TotalQueryableSamples})
			r.totalSamples += qr.Data.Stats.Samples.TotalQueryableSamples
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
	fmt.Fprintf(w, "| rule | group | samples | per dependency-instance |\n|---|---|---:|---:|\n")
	for i, s := range r.samples {
		if top > 0 && i >= top {
			break
		}
		fmt.Fprintf(w, "| `%s` | %s | %.0f | %.1f |\n", s.name, s.group, s.samples, s.samples/depInst)
	}
}
