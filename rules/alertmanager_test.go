package rules

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// parseAlertmanager generates the fragment of cfg and parses it back.
func parseAlertmanager(t *testing.T, cfg Config) amConfig {
	t.Helper()
	b, err := GenerateAlertmanager(cfg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), Header), "the fragment starts with the generated-file header")
	var c amConfig
	require.NoError(t, yaml.Unmarshal(b, &c))
	return c
}

// matcherNames returns the alert names an alertname matcher written by the fragment matches:
// the regexp's alternatives, checked against Alertmanager's anchoring.
func matcherNames(t *testing.T, m string) []string {
	t.Helper()
	if v, ok := strings.CutPrefix(m, `alertname="`); ok {
		return []string{strings.TrimSuffix(v, `"`)}
	}
	v, ok := strings.CutPrefix(m, `alertname=~"`)
	require.True(t, ok, "matcher %q is not an alertname matcher", m)
	v = strings.TrimSuffix(v, `"`)
	re := regexp.MustCompile("^(?:" + v + ")$")
	names := strings.Split(v, "|")
	for _, n := range names {
		require.True(t, re.MatchString(n))
	}
	require.False(t, re.MatchString("CircuitBreakerStuckOpenX"), "anchored")
	return names
}

func TestAlertmanagerRoutesEveryAlertGroupedPerDependency(t *testing.T) {
	c := parseAlertmanager(t, Config{})
	require.Len(t, c.Route.Routes, 1, "one subtree to copy")
	ours := c.Route.Routes[0]
	assert.Equal(t, ReceiverDefault, c.Route.Receiver)
	assert.Empty(t, c.Route.Matchers, "a root route has no matchers")
	assert.Equal(t, ReceiverTicket, ours.Receiver)
	assert.Equal(t, []string{"job", catalog.LabelName}, ours.GroupBy)
	require.Len(t, ours.Matchers, 1)
	routed := matcherNames(t, ours.Matchers[0])
	for _, sp := range specs {
		assert.Contains(t, routed, sp.name)
	}
	assert.Contains(t, routed, alertOutage)
	require.Len(t, ours.Routes, 1)
	assert.Equal(t, ReceiverPage, ours.Routes[0].Receiver)
	assert.Equal(t, []string{`severity="critical"`}, ours.Routes[0].Matchers)
	assert.Empty(t, ours.Routes[0].GroupBy, "the page route inherits the grouping")
	var names []string
	for _, rc := range c.Receivers {
		names = append(names, rc.Name)
	}
	assert.ElementsMatch(t, []string{ReceiverDefault, ReceiverPage, ReceiverTicket}, names)
}

func TestAlertmanagerInhibitsSymptomsOfTheSameDependency(t *testing.T) {
	c := parseAlertmanager(t, Config{})
	inhibited := map[string][]string{} // source → targets
	for _, ir := range c.InhibitRules {
		assert.Equal(t, []string{"job", catalog.LabelName}, ir.Equal, "same dependency")
		require.Len(t, ir.SourceMatchers, 1)
		require.Len(t, ir.TargetMatchers, 1)
		src := matcherNames(t, ir.SourceMatchers[0])
		require.Len(t, src, 1)
		inhibited[src[0]] = matcherNames(t, ir.TargetMatchers[0])
	}
	down := []string{AlertRetryRateHigh, AlertRetriesNotRescuing, AlertRetryBudgetExhausted, AlertRejectingCalls,
		AlertFallbackSustained, AlertBulkheadRejectionsHigh, AlertSlowCallRateHigh}
	for _, src := range []string{AlertStuckOpen, AlertOpenFleetWide, alertOutage} {
		assert.Subset(t, inhibited[src], down, "%s suppresses the symptoms", src)
		assert.NotContains(t, inhibited[src], src, "an alert never inhibits itself")
		assert.NotContains(t, inhibited[src], AlertOpenFleetWide, "the critical alerts are never inhibited")
		assert.NotContains(t, inhibited[src], alertOutage, "the critical alerts are never inhibited")
	}
	assert.Contains(t, inhibited[alertOutage], AlertStuckOpen, "the page covers the stuck breaker")
	assert.Contains(t, inhibited[AlertOpenFleetWide], AlertStuckOpen)
	assert.Equal(t, []string{AlertHedgeBudgetExhausted}, inhibited[AlertRetryBudgetExhausted], "retries that spent the shared budget cover the hedges' refusals")
	assert.Len(t, inhibited, 4)
	// No two alerts inhibit each other (both would go quiet).
	for src, targets := range inhibited {
		for _, tg := range targets {
			assert.NotContains(t, inhibited[tg], src, "%s and %s inhibit each other", src, tg)
		}
	}
}

// TestInhibitionTableNamesAreAlerts keeps the table in step with the alerts: every name is a
// default alert's, but for the outage page's placeholder.
func TestInhibitionTableNamesAreAlerts(t *testing.T) {
	known := map[string]bool{}
	for _, sp := range specs {
		known[sp.name] = true
	}
	for _, in := range inhibitions {
		for _, n := range append([]string{in.source}, in.targets...) {
			assert.True(t, known[n] || n == alertOutage, "%q is no alert", n)
		}
	}
}

func TestAlertmanagerFollowsGroupByAndDisabledAlerts(t *testing.T) {
	off := false
	c := parseAlertmanager(t, Config{
		GroupBy:  []string{"cluster", "job"},
		Selector: `env="prod"`,
		Alerts: map[string]AlertConfig{
			AlertStuckOpen:     {Enabled: &off},
			AlertRetryRateHigh: {Enabled: &off},
		},
	})
	ours := c.Route.Routes[0]
	want := []string{"cluster", "job", catalog.LabelName, "env"}
	assert.Equal(t, want, ours.GroupBy)
	routed := matcherNames(t, ours.Matchers[0])
	assert.NotContains(t, routed, AlertStuckOpen)
	assert.NotContains(t, routed, AlertRetryRateHigh)
	assert.Contains(t, routed, AlertRetriesNotRescuing)
	require.Len(t, c.InhibitRules, 3, "no rule for the disabled StuckOpen")
	assert.Equal(t, want, c.InhibitRules[2].Equal)
	for _, ir := range c.InhibitRules[:2] { // the symptom rules; the third is the shared budget's
		assert.Equal(t, want, ir.Equal)
		assert.NotEqual(t, `alertname="`+AlertStuckOpen+`"`, ir.SourceMatchers[0])
		targets := matcherNames(t, ir.TargetMatchers[0])
		assert.NotContains(t, targets, AlertStuckOpen)
		assert.NotContains(t, targets, AlertRetryRateHigh)
		assert.Contains(t, targets, AlertRetriesNotRescuing)
	}
}

func TestAlertmanagerRejectsBadConfig(t *testing.T) {
	_, err := GenerateAlertmanager(Config{GroupBy: []string{"instance"}})
	var ce *catalog.ConfigError
	require.True(t, errors.As(err, &ce), "got %v", err)
	assert.Equal(t, "group_by", ce.Field)
}

func TestAlertmanagerIsDeterministic(t *testing.T) {
	a, err := GenerateAlertmanager(Config{})
	require.NoError(t, err)
	for range 5 {
		b, err := GenerateAlertmanager(Config{})
		require.NoError(t, err)
		require.Equal(t, string(a), string(b))
	}
	assert.True(t, slices.Equal(inhibitions[2].targets, symptoms), "the table is not mutated by rendering")
}

func TestAlertmanagerRoutesTheSLOAlertsWhenThereAreSLOs(t *testing.T) {
	routed := func(cfg Config) []string {
		return matcherNames(t, parseAlertmanager(t, cfg).Route.Routes[0].Matchers[0])
	}
	assert.NotContains(t, routed(Config{}), AlertErrorBudgetBurn)
	assert.Contains(t, routed(Config{SLOs: []SLO{{Name: "payments", Objective: 0.999}}}), AlertErrorBudgetBurn)
}
