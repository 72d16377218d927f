package rules_test

import (
	"fmt"

	"github.com/stormwatch-go/stormwatch/rules"
)

// ExampleGenerateSLORules generates the rules of a 99.9% SLO on the calls to payments: the
// recorded SLI and budget, and the four burn-rate alerts of the SRE workbook.
func ExampleGenerateSLORules() {
	cfg := rules.Config{SLOs: []rules.SLO{{Name: "payments", Objective: 0.999}}}
	if _, err := rules.GenerateSLORules(cfg); err != nil { // stormwatch-slo-rules.yaml
		fmt.Println(err)
		return
	}
	slos, err := rules.SLOs(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := slos[0]
	fmt.Println("budget remaining:", s.BudgetRemaining)
	for _, b := range s.Burns {
		fmt.Printf("%s: %g× over %s and %s, at least %d calls\n",
			b.Severity, b.Factor, rules.FormatDuration(b.Long), rules.FormatDuration(b.Short), b.MinCalls)
	}
	// Output:
	// budget remaining: job_name_slo:resilience_slo_error_budget_remaining:ratio30d
	// critical: 14.4× over 1h and 5m, at least 70 calls
	// critical: 6× over 6h and 30m, at least 167 calls
	// warning: 3× over 1d and 2h, at least 334 calls
	// warning: 1× over 3d and 6h, at least 1000 calls
}
