package demo

import _ "embed"

//go:embed demo-profile.yaml
var alertsProfile string

// AlertsProfile returns "the demo profile": a stormwatch.yaml (the configuration of `stormwatch
// generate`) with a 1m rate window and short `for` durations, so that the generated alerts fire
// and resolve within minutes of the demo's faults. `stormwatch demo --print-profile` prints it;
// `stormwatch demo --prometheus` generates its rules from it.
func AlertsProfile() string { return alertsProfile }
