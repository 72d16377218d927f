package rules

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// The selector is parsed by internal/selector (tested there, and against the PromQL parser in
// the conformance module); these tests check how the rules use it.

func TestSelectorErrorsAreConfigErrors(t *testing.T) {
	for _, tc := range []struct{ sel, reason string }{
		// Each of these was accepted by the rules' former parser.
		{`env=~"a)|(b"`, "offset 5: invalid regular expression"},
		{`job="\xff"`, "offset 0: the value of job is not valid UTF-8"},
		{"job=\"\xff\"", "offset 5: not valid UTF-8"},
		{`{job="x"}`, "offset 0: want a label name, got '{': drop the braces"},
		{`job="a", job="a"`, "offset 9: duplicate matcher"},
		{strings.Repeat(`a="b",`, selector.MaxMatchers+1), "offset 384: more than 64 matchers"},
		// And these were refused before, and still are.
		{`job="a`, "offset 4: unterminated quoted string"},
		{`job=~"("`, "offset 5: invalid regular expression"},
		{`state="x"`, `offset 0: label "state" is a label of stormwatch's own metrics`},
		{`kind="x"`, `offset 0: label "kind" is a label of stormwatch's own metrics`},
		{`__name__="x"`, "offset 0: a matcher on the metric name"},
		{`instance=~"10\\..*"`, `offset 0: matcher instance=~"10\\..*" would drop every recorded series`},
	} {
		cfg := Config{Selector: tc.sel}
		for name, call := range map[string]func() error{
			"Validate":         cfg.Validate,
			"Generate":         func() error { _, err := Generate(cfg); return err },
			"GenerateTests":    func() error { _, err := GenerateTests(cfg, "r.yaml"); return err },
			"GenerateRunbooks": func() error { _, err := GenerateRunbooks(cfg); return err },
		} {
			err := call()
			var ce *catalog.ConfigError
			require.ErrorAs(t, err, &ce, "%s(%q)", name, tc.sel)
			assert.Equal(t, "rules", ce.Primitive)
			assert.Equal(t, "selector", ce.Field)
			assert.Equal(t, tc.sel, ce.Value)
			assert.True(t, strings.HasPrefix(ce.Reason, tc.reason), "%s(%q): %s", name, tc.sel, ce.Reason)
		}
	}
}

// The selector is rendered from its parsed matchers: normalised quoting and spacing, comments
// and trailing commas gone.
func TestSelectorIsRendered(t *testing.T) {
	rf, err := Generate(Config{Selector: " job = 'checkout' , # the service\n env=~`prod|staging`,\n"})
	require.NoError(t, err)
	out := string(rf)
	assert.Contains(t, out, `resilience_retry_attempts_total{job="checkout", env=~"prod|staging"}[5m]`)
	assert.Contains(t, out, "sum by (job, name, env)")
	assert.NotContains(t, out, "the service")
}

func TestGroupByLabelNames(t *testing.T) {
	for _, l := range []string{"bad-label", "9a", "a.b", "é", ""} {
		err := Config{GroupBy: []string{"name", l}}.Validate()
		var fe *ConfigError
		require.ErrorAs(t, err, &fe, "%q", l)
		assert.Equal(t, "group_by", fe.Field)
		assert.Contains(t, fe.Reason, "not a valid label name", "%q", l)
	}
	for _, l := range []string{"state", "le", "primitive"} {
		err := Config{GroupBy: []string{"name", l}}.Validate()
		require.Error(t, err, l)
		assert.Contains(t, err.Error(), "aggregate away or match on themselves", l)
	}
	require.NoError(t, Config{GroupBy: []string{"name", "cluster", "_x", "Region9"}}.Validate())
}

// The regular expressions of the selector match with PromQL semantics when the generated tests
// pick label values: fully anchored, . matching a newline.
func TestSampleRegexpMatches(t *testing.T) {
	for _, expr := range []string{"prod", "prod|staging", "pay.*", "eu-[0-9]+", "(a|b)c{2,3}", "[^a]x", "x?y", `10\.0\.\d+\.\d+:9464`} {
		s, ok := sampleRegexp(expr)
		require.True(t, ok, expr)
		m, err := selector.NewMatcher(selector.MatchRegexp, "l", expr)
		require.NoError(t, err)
		assert.True(t, m.Matches(s), "%q should match %q", s, expr)
	}
}
