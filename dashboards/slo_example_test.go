package dashboards_test

import (
	"fmt"

	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

// ExampleGenerateSLOs writes the SLOs dashboard for the SLOs of a rules configuration.
func ExampleGenerateSLOs() {
	slos, err := rules.SLOs(rules.Config{SLOs: []rules.SLO{{Name: "payments", Objective: 0.999}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	files, err := dashboards.GenerateSLOs(dashboards.Config{}, slos)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range files {
		fmt.Println(f.Path)
	}
	// Output:
	// dashboards/stormwatch-slos.json
	// dashboards/.lint
}
