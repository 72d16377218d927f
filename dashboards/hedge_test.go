package dashboards

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHedgeRowShowsLoadWinsOutcomesAndDelay: the Dependency dashboard's hedge row draws the
// extra load (hedges that ran per call), the share of those that won, the outcomes and the
// delay in use, each from the hedge's own series.
func TestHedgeRowShowsLoadWinsOutcomesAndDelay(t *testing.T) {
	want := map[string][]string{
		"Extra load from hedging": {`resilience_hedge_attempts_total{outcome!="budget_denied"`, ` / (sum by (job, instance) (rate(resilience_hedge_calls_total{`},
		"Hedge win ratio":         {`rate(resilience_hedge_attempts_total{outcome="won"`, ` / (sum by (job, instance) (rate(resilience_hedge_attempts_total{outcome!="budget_denied"`},
		"Hedges by outcome":       {`sum by (job, instance, outcome) (rate(resilience_hedge_attempts_total{`},
		"Hedge delay":             {`max by (job, instance) (resilience_hedge_delay_seconds{`},
	}
	found := map[string]bool{}
	for path, d := range dashboardsOf(t, generate(t, Config{})) {
		if !strings.Contains(path, "dependency") {
			continue
		}
		for _, q := range queriesOf(t, d) {
			title := strings.TrimPrefix(q.where, "panel ")
			parts, ok := want[title]
			if !ok {
				continue
			}
			found[title] = true
			for _, p := range parts {
				assert.Contains(t, q.expr, p, title)
			}
			assert.Contains(t, q.expr, `name="$name"`, "%s: one dependency", title)
		}
	}
	require.Len(t, found, len(want), "every hedge panel is on the Dependency dashboard: %v", found)
}
