package demo_test

import (
	"context"
	"fmt"

	"github.com/stormwatch-go/stormwatch/cmd/stormwatch/internal/demo"
	"github.com/stormwatch-go/stormwatch/instrument"
)

// Run the steady scenario on a free loopback port, and stop it (as Ctrl-C would) once it
// serves; then read the registry: every dependency's breaker is still closed.
func ExampleRun() {
	reg, _ := instrument.NewRegistry()
	ctx, stop := context.WithCancel(context.Background())
	err := demo.Run(ctx, demo.Config{
		Listen:   "127.0.0.1:0",
		Scenario: demo.ScenarioSteady,
		Registry: reg, // Stdout and Stderr nil: status and retry log discarded
		Ready:    func(metricsURL string) { stop() },
	})
	fmt.Println("err:", err)
	for _, b := range reg.Breakers() {
		fmt.Println(b.Name, b.Value.State())
	}
	// Output:
	// err: <nil>
	// inventory closed
	// payments closed
	// recommendations closed
}

// The outage scenario's script, in demo time (--speed divides it).
func ExampleLookupScenario() {
	sc, _ := demo.LookupScenario(demo.ScenarioOutage)
	for _, p := range sc.Phases {
		fmt.Printf("from %s: %s\n", p.At, p.Name)
	}
	// Output:
	// from 0s: healthy
	// from 15s: payments down, inventory flaky, recommendations slow
	// from 1m15s: recovered
}

// Only loopback addresses are accepted for /metrics.
func ExampleCheckLoopback() {
	fmt.Println(demo.CheckLoopback("127.0.0.1:9464"))
	fmt.Println(demo.CheckLoopback("0.0.0.0:9464"))
	// Output:
	// <nil>
	// --listen "0.0.0.0:9464": the demo only listens on a loopback address (127.0.0.1, ::1 or localhost), not "0.0.0.0"
}
