package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

func writeConfig(t testing.TB, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stormwatch.yaml")
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

func TestLoadConfigDecodesEveryKey(t *testing.T) {
	p := writeConfig(t, `namespace: acme
selector: 'job="checkout"'
group_by: [job, name]
runbook_base_url: https://wiki.example.com/rb
rate_window: 2m
alerts:
  CircuitBreakerStuckOpen:
    enabled: true
    threshold: 300
    for: 2m
    keep_firing_for: 0
    severity: critical
  FallbackSustained: {enabled: false}
dashboards:
  title_prefix: Checkout
  uid_prefix: checkout
  provisioning: true
  histograms: classic
`)
	c, err := loadConfig(p)
	require.NoError(t, err)
	assert.Equal(t, "acme", c.rules.Namespace)
	assert.Equal(t, `job="checkout"`, c.rules.Selector)
	assert.Equal(t, []string{"job", "name"}, c.rules.GroupBy)
	assert.Equal(t, "https://wiki.example.com/rb", c.rules.RunbookBaseURL)
	assert.Equal(t, 2*time.Minute, c.rules.RateWindow)
	so := c.rules.Alerts[rules.AlertStuckOpen]
	require.NotNil(t, so.Enabled)
	assert.True(t, *so.Enabled)
	assert.Equal(t, 300.0, *so.Threshold)
	assert.Equal(t, 2*time.Minute, *so.For)
	assert.Equal(t, time.Duration(0), *so.KeepFiringFor)
	assert.Equal(t, "critical", so.Severity)
	assert.False(t, *c.rules.Alerts[rules.AlertFallbackSustained].Enabled)
	assert.Equal(t, "Checkout", c.dashboards.TitlePrefix)
	assert.Equal(t, "checkout", c.dashboards.UIDPrefix)
	assert.True(t, c.dashboards.Provisioning)
	assert.Equal(t, dashboards.ClassicHistograms, c.dashboards.Histograms)
	assert.Equal(t, "acme", c.dashboards.Namespace, "the dashboards follow the namespace")
	assert.Equal(t, `job="checkout"`, c.dashboards.Selector, "and the selector")
	assert.Equal(t, 9, c.lines["alerts.CircuitBreakerStuckOpen.threshold"])
}

func TestEmptyConfigMeansDefaults(t *testing.T) {
	for _, data := range []string{"", "# nothing\n", "alerts:\n", "{}\n"} {
		c, err := loadConfig(writeConfig(t, data))
		require.NoError(t, err, "%q", data)
		assert.Equal(t, rules.Config{}, c.rules, "%q", data)
	}
}
