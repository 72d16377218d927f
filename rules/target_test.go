package rules

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// engineFile is a rule file as the engines read it.
type engineFile struct {
	Namespace string `yaml:"namespace"`
	Groups    []struct {
		Name                    string `yaml:"name"`
		PartialResponseStrategy string `yaml:"partial_response_strategy"`
		Rules                   []struct {
			Record, Alert, Expr string
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// targetFiles renders the rule files of cfg (defaults and SLOs) for target t.
func targetFiles(t *testing.T, tg Target) map[string]engineFile {
	t.Helper()
	cfg := Config{Target: tg, SLOs: exampleSLOs(t)}
	out := map[string]engineFile{}
	for name, gen := range map[string]func(Config) ([]byte, error){"rules": Generate, "slo rules": GenerateSLORules} {
		b, err := gen(cfg)
		require.NoError(t, err)
		var f engineFile
		require.NoError(t, yaml.Unmarshal(b, &f))
		out[name] = f
	}
	return out
}

// mimirtoolCheck encodes what `mimirtool rules check` and Mimir's ruler (default limits)
// refuse: a file without a namespace, a recording rule name without a colon
// (level:metric:operation), more than 20 rules in a group, two groups of one name.
func mimirtoolCheck(f engineFile) []string {
	var errs []string
	if f.Namespace == "" {
		errs = append(errs, "no namespace")
	}
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if seen[g.Name] {
			errs = append(errs, "group "+g.Name+" twice")
		}
		seen[g.Name] = true
		if len(g.Rules) > MimirMaxRulesPerGroup {
			errs = append(errs, fmt.Sprintf("group %s: %d rules, over ruler_max_rules_per_rule_group %d", g.Name, len(g.Rules), MimirMaxRulesPerGroup))
		}
		for _, r := range g.Rules {
			if r.Record != "" && !strings.Contains(r.Record, ":") {
				errs = append(errs, "recording rule name does not match level:metric:operation format, must contain at least one colon: "+r.Record)
			}
		}
	}
	return errs
}

func TestMimirTargetPassesMimirtoolChecks(t *testing.T) {
	for name, f := range targetFiles(t, TargetMimir) {
		assert.Empty(t, mimirtoolCheck(f), name)
		assert.Regexp(t, `^stormwatch(-slos)?$`, f.Namespace)
	}
	// The checks bite: the plain Prometheus file has no namespace.
	for _, f := range targetFiles(t, TargetPrometheus) {
		assert.Contains(t, mimirtoolCheck(f), "no namespace")
	}
}

// A group over Mimir's limit is split, dependents after what they read, no part over 20.
func TestMimirSplitsLargeGroups(t *testing.T) {
	var rs []Rule
	for i := range 25 {
		rs = append(rs, Rule{Record: fmt.Sprintf("job:base%d:rate5m", i), Expr: fmt.Sprintf("rate(x%d[5m])", i)})
	}
	rs = append(rs, Rule{Alert: "A", Expr: "job:base3:rate5m > 1"}, Rule{Record: "job:ratio:ratio", Expr: "job:base1:rate5m / job:base2:rate5m"},
		Rule{Alert: "B", Expr: "job:ratio:ratio > 0.5"})
	gs := ForTarget(TargetMimir, []Group{{Name: "big", Rules: rs}, {Name: "small", Rules: rs[:3]}})
	var names []string
	pos := map[string]int{}
	for i, g := range gs {
		names = append(names, g.Name)
		assert.LessOrEqual(t, len(g.Rules), MimirMaxRulesPerGroup)
		for _, r := range g.Rules {
			pos[r.Record+r.Alert] = i
		}
	}
	// Level 0 (the 25 base rates) in two parts of 20 and 5, level 1 (A and the ratio), level 2 (B).
	assert.Equal(t, []string{"big-1", "big-2", "big-3", "big-4", "small"}, names)
	assert.Less(t, pos["job:base3:rate5m"], pos["A"])
	assert.Less(t, pos["job:ratio:ratio"], pos["B"])
	assert.Len(t, gs[0].Rules, 20)
	assert.Len(t, gs[1].Rules, 5) // the rest of level 0
	assert.Equal(t, "A", gs[2].Rules[0].Alert)
	assert.Equal(t, "B", gs[3].Rules[0].Alert)
}

func TestThanosTargetSetsPartialResponseStrategy(t *testing.T) {
	for name, f := range targetFiles(t, TargetThanos) {
		require.NotEmpty(t, f.Groups)
		for _, g := range f.Groups {
			assert.Equal(t, "abort", g.PartialResponseStrategy, "%s: %s", name, g.Name)
		}
	}
}

// vmalert writes recorded series asynchronously: no rule may read a series recorded in its own
// group, and every series a rule reads from the same file is recorded in an earlier group.
func TestVictoriaMetricsTargetNeverReadsItsOwnGroupsRecords(t *testing.T) {
	for name, f := range targetFiles(t, TargetVictoriaMetrics) {
		// The SLOs record the same names (told apart by their slo label); a name may be recorded
		// several times.
		recordedIn := map[string][]int{}
		for i, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					recordedIn[r.Record] = append(recordedIn[r.Record], i)
				}
			}
		}
		for i, g := range f.Groups {
			for _, r := range g.Rules {
				for rec, js := range recordedIn {
					if readsSeries(r.Expr, rec) {
						assert.NotContains(t, js, i, "%s: %s%s in group %s reads %s recorded in its own group", name, r.Record, r.Alert, g.Name, rec)
						assert.Less(t, js[0], i, "%s: %s%s in group %s reads %s recorded only later", name, r.Record, r.Alert, g.Name, rec)
					}
				}
			}
		}
	}
	// The SLO recording rules chain (bad_per_call reads the base rates, the budget the period's
	// ratio), so their group splits in three; the alert groups read only earlier groups.
	gs := targetFiles(t, TargetVictoriaMetrics)["slo rules"].Groups
	var names []string
	for _, g := range gs {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{GroupSLORecording + "-1", GroupSLORecording + "-2", GroupSLORecording + "-3",
		GroupSLOPrefix + "payments", GroupSLOPrefix + "storefront", GroupSLOPrefix + "ledger-db"}, names)
}

func TestReadsSeriesMatchesWholeNames(t *testing.T) {
	assert.True(t, readsSeries("a:b + 1", "a:b"))
	assert.True(t, readsSeries("sum(a:b{x=\"1\"})", "a:b"))
	assert.False(t, readsSeries("a:bc", "a:b"))
	assert.False(t, readsSeries("xa:b", "a:b"))
	assert.True(t, readsSeries("xa:b or a:b", "a:b"))
}

// TestVmalertDryRunAcceptsTheRuleFiles runs `vmalert -dryRun` on the default and SLO rule
// files of every target whose files vmalert reads (prometheus and victoriametrics). It needs
// bin/vmalert (scripts/install-tools.sh victoriametrics; `make vmalert-check`).
func TestVmalertDryRunAcceptsTheRuleFiles(t *testing.T) {
	vmalert, err := filepath.Abs("../bin/vmalert")
	require.NoError(t, err)
	if _, err := os.Stat(vmalert); err != nil {
		t.Skip("bin/vmalert is absent: run scripts/install-tools.sh victoriametrics (make vmalert-check does)")
	}
	// The files vmalert is meant to read. Thanos's and Mimir's carry their engines' own keys
	// (partial_response_strategy, mimirtool's namespace), which vmalert refuses as unknown
	// fields; their own tests check them.
	for _, tg := range []Target{TargetPrometheus, TargetVictoriaMetrics} {
		cfg := Config{Target: tg, SLOs: exampleSLOs(t)}
		for name, gen := range map[string]func(Config) ([]byte, error){"rules.yaml": Generate, "slo-rules.yaml": GenerateSLORules} {
			b, err := gen(cfg)
			require.NoError(t, err)
			p := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.WriteFile(p, b, 0o644))
			out, err := exec.Command(vmalert, "-dryRun", "-rule="+p).CombinedOutput()
			assert.NoError(t, err, "%s %s: %s", tg, name, out)
		}
	}
}
