package rules_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/rules"
)

// Generate the rule file for one job, with a tighter retry-rate threshold and a longer for on
// the stuck-open alert.
func ExampleGenerate() {
	threshold := 0.1
	forDur := 3 * time.Minute
	out, err := rules.Generate(rules.Config{
		Selector: `job="checkout"`,
		Alerts: map[string]rules.AlertConfig{
			rules.AlertRetryRateHigh: {Threshold: &threshold},
			rules.AlertStuckOpen:     {For: &forDur},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "- alert: RetryRateHigh") {
			fmt.Println(strings.TrimSpace(line))
		}
		if strings.Contains(line, `attempts_per_call:ratio_rate5m{job="checkout"} > 0.1`) {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// - alert: RetryRateHigh
	// job_name:resilience_retry_attempts_per_call:ratio_rate5m{job="checkout"} > 0.1
}

// Configuration errors name the field and the value.
func ExampleConfig_Validate() {
	bad := 1.5
	err := rules.Config{Alerts: map[string]rules.AlertConfig{rules.AlertBulkheadSaturated: {Threshold: &bad}}}.Validate()
	fmt.Println(err)
	// Output:
	// rules: alerts.BulkheadSaturated.threshold = 1.5: out of range (0, 1)
}
