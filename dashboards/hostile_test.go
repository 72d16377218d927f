package dashboards

import (
	"errors"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/rules"
)

// grafanaVariables matches what Grafana substitutes in queries, titles and links.
var grafanaVariables = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// allDashboards generates the dashboards and the SLOs dashboard of one configuration.
func allDashboards(t *testing.T, cfg Config, rcfg rules.Config) []File {
	t.Helper()
	files, err := Generate(cfg)
	require.NoError(t, err)
	infos, err := rules.SLOs(rcfg)
	require.NoError(t, err)
	slo, err := GenerateSLOs(cfg, infos)
	require.NoError(t, err)
	return append(files, slo...)
}

// variableRefs counts the Grafana variable references of the files, by reference.
func variableRefs(files []File) map[string]int {
	out := map[string]int{}
	for _, f := range files {
		for _, m := range grafanaVariables.FindAllString(string(f.Data), -1) {
			out[m]++
		}
	}
	return out
}

// TestDashboardsCarryNoInjectedVariables: hostile names (Markdown, HTML, quotes, a lone $ and
// brackets) render into the dashboards without one Grafana variable reference more than plain
// names; variable syntax itself is refused at load (Grafana has no escape for it).
func TestDashboardsCarryNoInjectedVariables(t *testing.T) {
	plain := allDashboards(t, Config{}, rules.Config{SLOs: []rules.SLO{{Name: "payments", Objective: 0.999}}})
	hostileSLO := rules.SLO{ID: `**MARK** <i>"x"</i> [l](javascript:y) $ [x]`, Name: `pay"$"[q]`, Objective: 0.999}
	hostile := allDashboards(t, Config{TitlePrefix: `<b>MARK</b> "q" \ {} $ [[`, Selector: `env=~"prod$|a[b]"`},
		rules.Config{SLOs: []rules.SLO{hostileSLO}})
	assert.Equal(t, variableRefs(plain), variableRefs(hostile))

	for _, cfg := range []Config{
		{Selector: `job="$job"`}, {Selector: `job=~"${__user.login}"`}, {Selector: `env="[[job]]"`},
		{TitlePrefix: "shop $datasource"},
	} {
		_, err := Generate(cfg)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", cfg, err)
		assert.Contains(t, ce.Reason, "Grafana has no escape")
	}
}
