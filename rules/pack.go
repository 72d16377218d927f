package rules

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// promtool evaluates every rule of the file at every step of a test group up to its last check,
// whatever the group's series, so the cost of the tests is the number of steps of all groups.
// The cases of alerts that share no series are therefore run side by side in one group: an
// alert's series feed no other alert's rule of the group, so each case sees what it would see
// alone, and its checks (which list every alert of their alert name) are unchanged.

// caseGroup is the test group of one case of an alert.
type caseGroup struct {
	alert string
	g     yamlTestGroup
}

// end is the time of the group's last check.
func (cg caseGroup) end() time.Duration {
	var end time.Duration
	for _, at := range cg.g.AlertRuleTests {
		end = max(end, parseFormatted(at.EvalTime))
	}
	for _, e := range cg.g.PromqlExprTests {
		end = max(end, parseFormatted(e.EvalTime))
	}
	return end
}

// parseFormatted parses a duration written by FormatDuration.
func parseFormatted(s string) time.Duration {
	d, err := model.ParseDuration(s)
	if err != nil {
		panic("rules: a test's eval_time does not parse: " + s)
	}
	return time.Duration(d)
}

// caseSeparator joins the names of the cases of a packed group.
const caseSeparator = " | "

var metricToken = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// seriesUse returns, per alert, the metrics its cases write and its rule reads (through the
// recording rules it reads), of those that any case writes.
func (r *resolved) seriesUse(cases []caseGroup) map[string]map[string]bool {
	written := map[string]bool{}
	use := map[string]map[string]bool{}
	for _, cg := range cases {
		if use[cg.alert] == nil {
			use[cg.alert] = map[string]bool{}
		}
		for _, s := range cg.g.InputSeries {
			name, _, _ := strings.Cut(s.Series, "{")
			written[name], use[cg.alert][name] = true, true
		}
	}
	recorded := map[string]string{}
	var alerts []Rule
	for _, g := range r.groups() {
		for _, rl := range g.Rules {
			if rl.Record != "" {
				recorded[rl.Record] += " " + rl.Expr
			} else {
				alerts = append(alerts, rl)
			}
		}
	}
	var read func(expr string, into map[string]bool, depth int)
	read = func(expr string, into map[string]bool, depth int) {
		for _, tok := range metricToken.FindAllString(expr, -1) {
			if written[tok] {
				into[tok] = true
			}
			if rec, ok := recorded[tok]; ok && depth < 8 {
				read(rec, into, depth+1)
			}
		}
	}
	for _, a := range alerts {
		if use[a.Alert] != nil {
			read(a.Expr, use[a.Alert], 0)
		}
	}
	return use
}

// pack puts the cases into as few test groups, of as few steps, as it can: longest first, each
// into the first group none of whose alerts uses a metric it uses.
func pack(cases []caseGroup, use map[string]map[string]bool) []yamlTestGroup {
	slices.SortStableFunc(cases, func(a, b caseGroup) int { return cmp.Compare(b.end(), a.end()) })
	type bin struct {
		g    yamlTestGroup
		uses map[string]bool
	}
	var bins []*bin
	for _, cg := range cases {
		i := slices.IndexFunc(bins, func(b *bin) bool {
			for m := range use[cg.alert] {
				if b.uses[m] {
					return false
				}
			}
			return true
		})
		if i < 0 {
			bins = append(bins, &bin{g: yamlTestGroup{Interval: cg.g.Interval}, uses: map[string]bool{}})
			i = len(bins) - 1
		}
		b := bins[i]
		if b.g.Name != "" {
			b.g.Name += caseSeparator
		}
		b.g.Name += cg.g.Name
		b.g.InputSeries = append(b.g.InputSeries, cg.g.InputSeries...)
		b.g.AlertRuleTests = append(b.g.AlertRuleTests, cg.g.AlertRuleTests...)
		b.g.PromqlExprTests = append(b.g.PromqlExprTests, cg.g.PromqlExprTests...)
		for m := range use[cg.alert] {
			b.uses[m] = true
		}
	}
	out := make([]yamlTestGroup, len(bins))
	for i, b := range bins {
		out[i] = b.g
	}
	return out
}
