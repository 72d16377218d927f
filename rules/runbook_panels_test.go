package rules_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

var runbookPanel = regexp.MustCompile(`(?m)^- row \*(.+?)\*, panel \*\*(.+?)\*\*$`)

// TestRunbookPanelsExist: every panel a generated runbook points at is on the Dependency
// dashboard (the one the alerts' dashboard_url opens) and on the Overview, under the row the
// runbook names.
func TestRunbookPanelsExist(t *testing.T) {
	files, err := dashboards.Generate(dashboards.Config{})
	require.NoError(t, err)
	require.Len(t, files, 2)
	runbooks, err := rules.GenerateRunbooks(rules.Config{})
	require.NoError(t, err)
	for _, f := range files {
		var d struct {
			Title  string `json:"title"`
			Panels []struct {
				Type  string `json:"type"`
				Title string `json:"title"`
			} `json:"panels"`
		}
		require.NoError(t, json.Unmarshal(f.Data, &d))
		inRow := map[string]string{} // panel title → its row
		row := ""
		for _, p := range d.Panels {
			if p.Type == "row" {
				row = p.Title
				continue
			}
			inRow[p.Title] = row
		}
		n := 0
		for _, rb := range runbooks {
			if strings.HasSuffix(rb.Path, "runbooks/README.md") {
				continue
			}
			for _, m := range runbookPanel.FindAllStringSubmatch(string(rb.Data), -1) {
				n++
				got, ok := inRow[m[2]]
				if assert.True(t, ok, "%s: %s has no panel %q", rb.Path, d.Title, m[2]) {
					assert.Equal(t, m[1], got, "%s: %s: panel %q", rb.Path, d.Title, m[2])
				}
			}
		}
		assert.Greater(t, n, 20, "the runbooks point at panels")
	}
}

// TestRunbookTripCausesFollowTheCatalog: the breaker runbooks' "Why it tripped" table explains
// every trip cause of the catalog, in its order, and nothing else.
func TestRunbookTripCausesFollowTheCatalog(t *testing.T) {
	files, err := rules.GenerateRunbooks(rules.Config{})
	require.NoError(t, err)
	var want []string
	for _, c := range catalog.TripCauses {
		want = append(want, c.String())
	}
	n := 0
	for _, f := range files {
		_, section, ok := strings.Cut(string(f.Data), "## Why it tripped")
		if !ok {
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		var got []string
		for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| .+ \\| .+ \\|$").FindAllStringSubmatch(section, -1) {
			got = append(got, m[1])
		}
		assert.Equal(t, want, got, f.Path)
		n++
	}
	assert.GreaterOrEqual(t, n, 2, "the breaker runbooks explain the trip causes")
}
