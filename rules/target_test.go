package rules

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// engineOnlyKeys are the keys of a target's rule files that neither Prometheus' rule format nor
// vmalert knows, by where they stand: at the top of the file, in every group (of a
// PrometheusRule manifest: in its spec, and the CRD has partial_response_strategy). Nothing else
// in the file differs from a Prometheus rule file of the same groups split for the target
// (ForTarget).
var engineOnlyKeys = map[Target]struct{ file, group []string }{
	TargetMimir:  {file: []string{"namespace"}}, // mimirtool's rule namespace (not in manifests)
	TargetThanos: {group: []string{"partial_response_strategy"}},
}

// ruleFile is one generated rule file: the engine's file (of a manifest: its spec) and the
// Prometheus rule file of its groups as ForTarget splits them, both decoded.
type ruleFile struct {
	name         string
	engine, want map[string]any
}

// generatedRuleFiles returns every rule file generated for target tg: the default rules and
// the SLO rules, as rule files and as PrometheusRule manifests.
func generatedRuleFiles(t *testing.T, tg Target) []ruleFile {
	t.Helper()
	var out []ruleFile
	for _, f := range []Format{FormatPrometheus, FormatOperator} {
		cfg := Config{Target: tg, Format: f, SLOs: exampleSLOs(t)}
		r, err := cfg.resolveWithSLOs()
		require.NoError(t, err)
		for name, gen := range map[string]struct {
			gen    func(Config) ([]byte, error)
			groups []Group
		}{"rules": {Generate, r.groups()}, "slo-rules": {GenerateSLORules, r.sloGroups()}} {
			b, err := gen.gen(cfg)
			require.NoError(t, err)
			var engine map[string]any
			require.NoError(t, yaml.Unmarshal(b, &engine))
			if f == FormatOperator {
				spec, ok := engine["spec"].(map[string]any)
				require.True(t, ok, "%s %s: a manifest with a spec", tg, name)
				engine = spec
			}
			plain, err := r.renderGroups(FormatPrometheus, TargetPrometheus, ForTarget(tg, gen.groups), "")
			require.NoError(t, err)
			var want map[string]any
			require.NoError(t, yaml.Unmarshal(plain, &want))
			out = append(out, ruleFile{name: fmt.Sprintf("%s-%s-%s.yaml", tg, f, name), engine: engine, want: want})
		}
	}
	return out
}

// withoutEngineKeys returns f's engine file without the engine-only keys of tg, checking that
// each is where it is documented to be (a file key only in rule files, not in manifests).
func withoutEngineKeys(t *testing.T, tg Target, f ruleFile, manifest bool) map[string]any {
	t.Helper()
	keys := engineOnlyKeys[tg]
	out := map[string]any{}
	for k, v := range f.engine {
		out[k] = v
	}
	for _, k := range keys.file {
		_, ok := out[k]
		assert.Equal(t, !manifest, ok, "%s: key %s at the top", f.name, k)
		delete(out, k)
	}
	groups, ok := out["groups"].([]any)
	require.True(t, ok, "%s: groups", f.name)
	stripped := make([]any, len(groups))
	for i, g := range groups {
		gm, ok := g.(map[string]any)
		require.True(t, ok, "%s: group %d", f.name, i)
		c := map[string]any{}
		for k, v := range gm {
			c[k] = v
		}
		for _, k := range keys.group {
			assert.Contains(t, c, k, "%s: group %v", f.name, gm["name"])
			delete(c, k)
		}
		stripped[i] = c
	}
	out["groups"] = stripped
	return out
}

// TestVmalertDryRunAcceptsTheRuleFiles runs `vmalert -dryRun` on every generated rule file —
// default and SLO rules, rule files and PrometheusRule manifests (their spec), of every target.
// The Mimir and Thanos files carry their engines' own keys (engineOnlyKeys), which vmalert and
// Prometheus refuse as unknown fields: the test shows vmalert refusing exactly those, checks that
// without them each file is the Prometheus rule file of the same groups, and runs vmalert and
// `promtool check rules` (the rule format Thanos Ruler and Mimir's ruler parse the rest of a
// group with) on that. It needs bin/vmalert (scripts/install-tools.sh victoriametrics; `make
// vmalert-check`).
func TestVmalertDryRunAcceptsTheRuleFiles(t *testing.T) {
	vmalert, err := filepath.Abs("../bin/vmalert")
	require.NoError(t, err)
	if _, err := os.Stat(vmalert); err != nil {
		t.Skip("bin/vmalert is absent: run scripts/install-tools.sh victoriametrics (make vmalert-check does)")
	}
	dir := t.TempDir()
	dryRun := func(name string, doc map[string]any) (string, error) {
		b, err := yaml.Marshal(doc)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		out, err := exec.Command(vmalert, "-dryRun", "-rule="+filepath.Join(dir, name)).CombinedOutput()
		return string(out), err
	}
	files := 0
	for _, tg := range Targets {
		for _, f := range generatedRuleFiles(t, tg) {
			files++
			manifest := strings.Contains(f.name, string(FormatOperator))
			keys := engineOnlyKeys[tg]
			if len(keys.group) > 0 || (len(keys.file) > 0 && !manifest) {
				out, err := dryRun("engine-"+f.name, f.engine)
				assert.Error(t, err, "%s: vmalert accepts the engine's keys now: check them too", f.name)
				for _, k := range append(append([]string{}, keys.file...), keys.group...) {
					if !manifest || !slices.Contains(keys.file, k) {
						assert.Contains(t, out, "unknown fields", f.name)
						assert.Contains(t, out, k, "%s: vmalert refuses %s", f.name, k)
					}
				}
			}
			doc := withoutEngineKeys(t, tg, f, manifest)
			assert.Equal(t, f.want, doc, "%s without %v: the Prometheus rule file of its groups", f.name, keys)
			out, err := dryRun(f.name, doc)
			assert.NoError(t, err, "vmalert -dryRun %s: %s", f.name, out)
			pout, ok := runPromtool(t, dir, "check", "rules", f.name)
			assert.True(t, ok, "promtool check rules %s: %s", f.name, pout)
		}
	}
	assert.Equal(t, len(Targets)*2*2, files, "rules and SLO rules, as files and manifests, of every target")
}
