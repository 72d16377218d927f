//go:build promtoolmatrix

package rules

import "testing"

// TestPromtoolAcceptsTheConfigMatrix runs the promtool checks of
// TestPromtoolAcceptsGeneratedRulesAndTests on a wider matrix of configurations: the
// scenarios follow thresholds, durations, namespace, selector and group_by. Its alert tests
// make 0.08 to 0.22 million rule evaluations per config (TestAlertTestsStayCheap bounds them),
// 1.3 million in all: about 4 minutes of promtool's CPU, so it runs in `make rules-matrix` (part
// of `make test`), not in the race-enabled unit suite, the configs side by side and each sharded
// across CPUs.
func TestPromtoolAcceptsTheConfigMatrix(t *testing.T) {
	checkWithPromtool(t, matrixConfigs())
}
