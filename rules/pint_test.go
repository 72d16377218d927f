package rules

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Three checks of Cloudflare's pint (`pint --offline lint`), encoded here because pint is not
// served by the Go module proxy (`make pint-check` runs them, and pint itself when bin/pint
// exists):
//
//   - promql/fragile: an alerting rule that selects series with topk, bottomk, limitk or
//     limit_ratio can pick a different series on each evaluation, so the alert's labels change
//     and it resolves and fires again (flaps). (pint exempts a topk whose result has no labels
//     that can vary; the check below does not, which is stricter.) pint's other fragile check,
//     arithmetic between aggregations in an alert without `for`, is not encoded.
//   - rule/dependency: a recording rule that reads a series recorded by a recording rule of
//     another group is evaluated independently of it and reads the previous cycle's value
//     (pint matches by metric name only, whatever the labels). Alerting rules may read other
//     groups' series: pint accepts their lag of at most one evaluation.
//   - promql/regexp: a regular-expression matcher (=~, !~) whose value is a plain string is an
//     equality in disguise, and anchors (^, $) are redundant: Prometheus anchors every regular
//     expression. (pint's smelly-selector and wildcard findings are not encoded.)

// pintFinding is one finding: check, rule (record or alert name), group and detail.
type pintFinding struct{ check, rule, group, detail string }

func (f pintFinding) String() string {
	return fmt.Sprintf("%s: %s in %s: %s", f.check, f.rule, f.group, f.detail)
}

var (
	fragileAggregation = regexp.MustCompile(`\b(topk|bottomk|limitk|limit_ratio)\b\s*(\(|by|without)`)
	regexpMatcher      = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~)\s*"((?:[^"\\]|\\.)*)"`)
)

// redundantRegexp returns what promql/regexp reports about one regular-expression matcher's
// value, or "".
func redundantRegexp(value string) string {
	switch {
	case strings.HasPrefix(value, "^") || strings.HasSuffix(value, "$"):
		return "redundant anchors"
	case !strings.ContainsAny(value, `.*+?()[]{}|\`):
		return "a plain string"
	}
	return ""
}

// pintLint runs the three checks over the groups of one rule file.
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
			for _, m := range regexpMatcher.FindAllStringSubmatch(r.Expr, -1) {
				if why := redundantRegexp(m[3]); why != "" {
					out = append(out, pintFinding{"promql/regexp", r.Record + r.Alert, g.Name, m[0] + ": " + why})
				}
			}
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
			{Alert: "Cross", Expr: "job:x:rate5m > 1"},
			{Alert: "Re", Expr: `x{kind=~"a", b=~"a|b", c!~"^a", d=~"a.*", e=~"a\\.b"} > 1`}}},
	}
	assert.Equal(t, []string{
		"promql/fragile: Top in b: uses topk",
		`promql/regexp: Re in b: c!~"^a": redundant anchors`,
		`promql/regexp: Re in b: kind=~"a": a plain string`,
		"rule/dependency: job:z:ratio in b: job:x:rate5m is recorded in group a",
	}, findingStrings(pintLint(gs)), "same-group reads, alerts reading other groups and real regular expressions are fine, as in pint")
}

// TestPintOfflineLintIsClean runs the checks on the default rule file and on the SLO rule file
// of the example SLO configuration (examples/slo/stormwatch.yaml): nothing to report.
func TestPintOfflineLintIsClean(t *testing.T) {
	def, err := Groups(Config{})
	require.NoError(t, err)
	slos, err := SLOGroups(Config{SLOs: exampleSLOs(t)})
	require.NoError(t, err)
	require.NotEmpty(t, slos)
	// Both files, as one rule set: pint checks dependencies across the files it lints.
	assert.Empty(t, findingStrings(pintLint(append(def, slos...))), "pint findings")
}

// TestPintBinaryReportsNothing runs pint itself (`pint --offline lint`, every finding down to
// information) on the same files, when bin/pint exists.
func TestPintBinaryReportsNothing(t *testing.T) {
	pint, err := filepath.Abs("../bin/pint")
	require.NoError(t, err)
	if _, err := os.Stat(pint); err != nil {
		t.Skip("bin/pint is absent (pint is not served by the Go module proxy): build it from github.com/cloudflare/pint's cmd/pint into bin/")
	}
	dir := t.TempDir()
	cfg := Config{SLOs: exampleSLOs(t)}
	for name, gen := range map[string]func(Config) ([]byte, error){"rules.yaml": GeneratePrometheus, "slo-rules.yaml": GenerateSLORulesPrometheus} {
		b, err := gen(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	cmd := exec.Command(pint, "--offline", "--no-color", "lint", "--min-severity=info", "--fail-on=info", "rules.yaml", "slo-rules.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pint:\n%s", out)
	assert.NotContains(t, string(out), "Problems found", "pint:\n%s", out)
	assert.Contains(t, string(out), "Checking Prometheus rules", "pint:\n%s", out)
}

func findingStrings(fs []pintFinding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	return out
}
