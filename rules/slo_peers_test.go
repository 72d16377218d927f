package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// sloPeerConfigs have several SLOs selecting one dependency: the tests of each receive the
// others' alerts too, and must expect them.
var sloPeerConfigs = map[string]Config{
	"same name, two objectives": {SLOs: []SLO{
		{Name: "p", Objective: 0.999},
		{ID: "loose", Name: "p", Objective: 0.99},
	}},
	"a name and an overlapping name_regex": {SLOs: []SLO{
		{Name: "p", Objective: 0.999},
		{ID: "family", NameRegex: "p|q", Objective: 0.9995, Period: 7 * day, MinCalls: 50},
		{ID: "breaker", Name: "p", Objective: 0.995, Source: SLOSourceBreaker},
	}},
}

// sloObjectiveConfigs are one SLO at each end of the accepted objectives and between.
func sloObjectiveConfigs() map[string]Config {
	out := map[string]Config{}
	for _, o := range []float64{MinSLOObjective + 1e-6, 0.99, 0.9999, MaxSLOObjective} {
		out[fmt.Sprintf("objective %v", o)] = Config{SLOs: []SLO{{Name: "dep", Objective: o}}}
	}
	out["max objective, 1e9 calls guard, 6d"] = Config{SLOs: []SLO{{Name: "dep", Objective: MaxSLOObjective, MinCalls: MaxSLOMinCalls, Period: MinSLOPeriod}}}
	// Millions of calls per step: the counters start high enough that rate() never
	// extrapolates them towards zero (it did the good counter only, and generating failed).
	out["max objective, 1e9 calls guard, 30d"] = Config{SLOs: []SLO{{Name: "dep", Objective: MaxSLOObjective, MinCalls: MaxSLOMinCalls}}}
	return out
}

// TestSLOTestsPassWithPeersAndEveryObjective: promtool passes the generated SLO tests of
// several SLOs on one dependency and of objectives from the lowest to the highest accepted.
func TestSLOTestsPassWithPeersAndEveryObjective(t *testing.T) {
	promtool(t)
	configs := sloObjectiveConfigs()
	for k, v := range sloPeerConfigs {
		configs[k] = v
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			rulesYAML, err := GenerateSLORulesPrometheus(cfg)
			require.NoError(t, err)
			testsYAML, err := GenerateSLOTests(cfg, "slo-rules.yaml")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "slo-rules.yaml"), rulesYAML, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "slo-rules.test.yaml"), testsYAML, 0o644))
			out, ok := runPromtool(t, dir, "test", "rules", "slo-rules.test.yaml")
			require.True(t, ok, "promtool test rules:\n%s", out)
		})
	}
}
