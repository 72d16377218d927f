package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIndexLinksEveryPage keeps the documentation reachable: every page in docs/ is linked from
// the index (docs/README.md), every link of the index and of the top-level README.md into docs/
// names a page that exists, and README.md links the index's pages a newcomer needs.
func TestIndexLinksEveryPage(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	require.NoError(t, err)
	index := read(t, "README.md")
	for _, p := range pages {
		if p == "README.md" {
			continue
		}
		assert.Contains(t, index, "]("+p+")", "docs/README.md does not link %s", p)
	}
	link := regexp.MustCompile(`\]\(([a-z_-]+\.md)(#[a-z0-9-]+)?\)`)
	for _, m := range link.FindAllStringSubmatch(index, -1) {
		assert.FileExists(t, m[1], "docs/README.md links a missing page")
	}
	top := read(t, "../README.md")
	for _, m := range regexp.MustCompile(`\]\(docs/([a-z_-]+\.md)(#[a-z0-9-]+)?\)`).FindAllStringSubmatch(top, -1) {
		assert.FileExists(t, m[1], "README.md links a missing page")
	}
	assert.Contains(t, top, "](docs/README.md)", "README.md does not link the docs index")
}

// TestREADMEFitsOnAFewScreens keeps the README to what a newcomer reads first.
func TestREADMEFitsOnAFewScreens(t *testing.T) {
	lines := strings.Count(read(t, "../README.md"), "\n")
	assert.LessOrEqual(t, lines, 250, "README.md has %d lines: move details into docs/", lines)
}

func read(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw)
}
