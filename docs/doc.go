// Package docs holds stormwatch's design notes (the Markdown pages in this directory) and the
// tests that keep the generated ones — the metric catalog (metrics.md) and the alert catalog
// (alerts.md) — equal to what the code produces. Regenerate them with
//
//	go test ./docs -run Generated -update
//
// after changing catalog, collector.Policy or the rules package.
package docs
