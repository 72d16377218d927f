package dashboards_test

import (
	"fmt"
	"log"

	"github.com/stormwatch-go/stormwatch/dashboards"
)

// Generate the dashboards for services whose collector uses the namespace "shop", restricted to
// one cluster, with a Grafana provisioning file.
func ExampleGenerate() {
	files, err := dashboards.Generate(dashboards.Config{
		Namespace:    "shop",
		Selector:     `cluster="eu-1"`,
		TitlePrefix:  "Shop",
		UIDPrefix:    "shop",
		Provisioning: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		fmt.Println(f.Path)
	}

	_, err = dashboards.Generate(dashboards.Config{UIDPrefix: "shop/prod"})
	fmt.Println(err)
	// Output:
	// dashboards/shop-overview.json
	// dashboards/shop-dependency.json
	// dashboards/provisioning/shop.yaml
	// dashboards: dashboards.uid_prefix = "shop/prod": invalid character '/' at offset 4 (want [a-zA-Z0-9_-])
}
