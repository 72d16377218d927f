package rules

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"time"
)

// promtool evaluates every rule of the file at every step of a test group up to its last check,
// whatever the group's series, so the cost of the tests is the number of steps of all groups.
// The cases of alerts that share no series therefore run side by side in one group: no case's
// series feed another case's alert, so each case sees what it would see alone, and its checks
// (which list every alert of their alert name) are unchanged.

// caseGroup is the test group of one case of an alert, end its last check.
type caseGroup struct {
	alert string
	end   time.Duration
	g     yamlTestGroup
}

// caseSeparator joins the names of the cases of a packed group.
const caseSeparator = " | "

var metricToken = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// seriesUse returns, per alert, the metrics its cases write and those of them its rule reads:
// its expression (directly or through recording rules) and its annotations' queries.
func (r *resolved) seriesUse(cases []caseGroup) map[string]map[string]bool {
	use := map[string]map[string]bool{}
	written := map[string]bool{}
	for _, cg := range cases {
		if use[cg.alert] == nil {
			use[cg.alert] = map[string]bool{}
		}
		for _, s := range cg.g.InputSeries {
			name, _, _ := strings.Cut(s.Series, "{")
			written[name], use[cg.alert][name] = true, true
		}
	}
	exprs := map[string]string{} // recorded series or alert → its expression(s) and annotations' queries
	for _, g := range r.groups() {
		for _, rl := range g.Rules {
			exprs[rl.Record+rl.Alert] += " " + rl.Expr
			for _, a := range rl.Annotations {
				exprs[rl.Alert] += " " + a
			}
		}
	}
	for alert, into := range use {
		todo := []string{alert}
		for seen := map[string]bool{}; len(todo) > 0; todo = todo[1:] {
			for _, tok := range metricToken.FindAllString(exprs[todo[0]], -1) {
				if written[tok] {
					into[tok] = true
				}
				if _, rec := exprs[tok]; rec && !seen[tok] {
					seen[tok], todo = true, append(todo, tok)
				}
			}
		}
	}
	return use
}

// pack puts the cases into as few test groups, of as few steps, as it can: longest first, each
// into the first group none of whose cases uses a metric it uses.
func pack(cases []caseGroup, use map[string]map[string]bool) []yamlTestGroup {
	slices.SortStableFunc(cases, func(a, b caseGroup) int { return cmp.Compare(b.end, a.end) })
	var groups []yamlTestGroup
	var uses []map[string]bool
	for _, cg := range cases {
		i := slices.IndexFunc(uses, func(u map[string]bool) bool {
			for m := range use[cg.alert] {
				if u[m] {
					return false
				}
			}
			return true
		})
		if i < 0 {
			i, groups, uses = len(groups), append(groups, yamlTestGroup{Interval: cg.g.Interval}), append(uses, map[string]bool{})
		}
		g := &groups[i]
		g.Name = strings.TrimPrefix(g.Name+caseSeparator+cg.g.Name, caseSeparator)
		g.InputSeries = append(g.InputSeries, cg.g.InputSeries...)
		g.AlertRuleTests = append(g.AlertRuleTests, cg.g.AlertRuleTests...)
		g.PromqlExprTests = append(g.PromqlExprTests, cg.g.PromqlExprTests...)
		for m := range use[cg.alert] {
			uses[i][m] = true
		}
	}
	return groups
}
