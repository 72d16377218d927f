package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two checks of Cloudflare's pint (`pint --offline lint`), encoded here because pint is not
// served by the Go module proxy (`make pint-check` runs them):
//
//   - promql/fragile: an alerting rule that selects series with topk, bottomk, limitk or
//     limit_ratio can pick a different series on each evaluation, so the alert's labels change
//     and it resolves and fires again (flaps). (pint exempts a topk whose result has no labels
//     that can vary; the check below does not, which is stricter.) pint's other fragile check,
//     arithmetic between aggregations in an alert without `for`, is not encoded.
//   - rule/dependency: a recording rule that reads a series recorded by a recording rule of
//     another group is evaluated independently of it and reads the previous cycle's value
//     (pint matches by metric name only, whatever the labels).

// pintFinding is one finding: check, rule (record or alert name), group and detail.
type pintFinding struct{ check, rule, group, detail string }

func (f pintFinding) String() string {
	return fmt.Sprintf("%s: %s in %s: %s", f.check, f.rule, f.group, f.detail)
}

var fragileAggregation = regexp.MustCompile(`\b(topk|bottomk|limitk|limit_ratio)\b\s*(\(|by|without)`)

// pintLint runs the two checks over the groups of one rule file.
func pintLint(gs []Group) []pintFinding {
	var out []pintFinding
	recordedBy := map[string][]string{} // record → groups recording it
	for _, g := range gs {
		for _, r := range g.Rules {
			if r.Record != "" && !slices.Contains(recordedBy[r.Record], g.Name) {
				recordedBy[r.Record] = append(recordedBy[r.Record], g.Name)
			}
		}
	}
	for _, g := range gs {
		for _, r := range g.Rules {
			if r.Alert != "" {
				if m := fragileAggregation.FindStringSubmatch(r.Expr); m != nil {
					out = append(out, pintFinding{"promql/fragile", r.Alert, g.Name, "uses " + m[1]})
				}
				continue
			}
			for rec, groups := range recordedBy {
				if !readsSeries(r.Expr, rec) {
					continue
				}
				for _, other := range groups {
					if other != g.Name {
						out = append(out, pintFinding{"rule/dependency", r.Record, g.Name, rec + " is recorded in group " + other})
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b pintFinding) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// The checks find what pint finds.
func TestPintChecksFindWhatPintFinds(t *testing.T) {
	gs := []Group{
		{Name: "a", Rules: []Rule{{Record: "job:x:rate5m", Expr: "sum by (job) (rate(x[5m]))"}, {Record: "job:y:ratio", Expr: "job:x:rate5m / 2"}}},
		{Name: "b", Rules: []Rule{{Record: "job:z:ratio", Expr: "job:x:rate5m * 2"}, {Alert: "Top", Expr: "topk by (job) (1, job:x:rate5m) > 1"},
			{Alert: "Cross", Expr: "job:x:rate5m > 1"}}},
	}
	assert.Equal(t, []string{
		"promql/fragile: Top in b: uses topk",
		"rule/dependency: job:z:ratio in b: job:x:rate5m is recorded in group a",
	}, findingStrings(pintLint(gs)), "same-group reads and alerts reading other groups are fine, as in pint")
}

// pintKnownFindings are the findings of the default and SLO rule files that other changes
// remove (see the report of this branch): CircuitBreakerStuckOpen picks its cause label with
// topk, and every SLO group records the same names, so each SLO's chained recording rules read
// names that the other SLO groups record too. When a fix lands, this test fails until its
// entries are removed here: the goal is an empty list.
var pintKnownFindings = map[string]int{
	"promql/fragile: CircuitBreakerStuckOpen": 1,
	"rule/dependency: slo groups":             34,
}

// TestPintOfflineLintIsClean runs the two checks on the default rule file and on the SLO rule
// file of the example SLO configuration (examples/slo/stormwatch.yaml).
func TestPintOfflineLintIsClean(t *testing.T) {
	def, err := Groups(Config{})
	require.NoError(t, err)
	slos, err := SLOGroups(Config{SLOs: exampleSLOs(t)})
	require.NoError(t, err)
	got := map[string]int{}
	var other []string
	for _, f := range append(pintLint(def), pintLint(slos)...) {
		switch {
		case f.check == "promql/fragile" && f.rule == AlertStuckOpen:
			got["promql/fragile: CircuitBreakerStuckOpen"]++
		case f.check == "rule/dependency" && strings.HasPrefix(f.group, GroupSLOPrefix):
			got["rule/dependency: slo groups"]++
		default:
			other = append(other, f.String())
		}
	}
	assert.Empty(t, other, "new pint findings")
	assert.Equal(t, pintKnownFindings, got, "pint findings changed: update pintKnownFindings (the goal is none)")
}

func findingStrings(fs []pintFinding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	return out
}
