package dashboards

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// The selector is parsed by internal/selector (tested there, against the PromQL parser in the
// conformance module, and against the rules in generators_test.go); these tests check how the
// dashboards use it.

func TestSelectorErrorsAreConfigErrors(t *testing.T) {
	for _, tc := range []struct{ sel, reason string }{
		// Each of these was accepted by the dashboards' former check.
		{`state="x"`, `offset 0: label "state" is a label of stormwatch's own metrics`},
		{`le="0.1"`, `offset 0: label "le" is a label of stormwatch's own metrics`},
		{`a="\xff"`, "offset 0: the value of a is not valid UTF-8"},
		{`__meta_x="a"`, `offset 0: label "__meta_x" is reserved`},
		{`instance="10.0.0.1:9464"`, "offset 0: matcher instance=\"10.0.0.1:9464\" would drop every recorded series"},
		{`job="a", job="a"`, "offset 9: duplicate matcher"},
		{strings.Repeat(`a="b",`, 65), "offset 384: more than 64 matchers"},
		// The former check refused these too, with other words.
		{`{job="x"}`, "offset 0: want a label name, got '{': drop the braces"},
		{`env=~"a)|(b"`, "offset 5: invalid regular expression \"a)|(b\" for env: unexpected )"},
		{"a=\"\xff\"", "offset 3: not valid UTF-8"},
		{`job="a" env="b"`, `offset 8: want a comma between matchers, got "env"`},
		{`job<"a"`, `offset 3: want =, !=, =~ or !~ after label name "job", got '<'`},
		{`a="it\'s"`, `offset 5: unknown escape sequence \' in a "-quoted string`},
	} {
		files, err := Generate(Config{Selector: tc.sel, Provisioning: true})
		assert.Nil(t, files)
		var ce *catalog.ConfigError
		require.ErrorAs(t, err, &ce, "%q", tc.sel)
		assert.Equal(t, "dashboards", ce.Primitive)
		assert.Equal(t, "selector", ce.Field)
		assert.Equal(t, tc.sel, ce.Value)
		assert.True(t, strings.HasPrefix(ce.Reason, tc.reason), "%q: %s", tc.sel, ce.Reason)
	}
}

// The queries carry the parsed matchers rendered in PromQL, not the configured text: quotes
// normalised, comments and trailing commas gone.
func TestSelectorIsRendered(t *testing.T) {
	files, err := Generate(Config{Selector: " env = 'prod' , # where we page\n team=~`pay.*`,\n"})
	require.NoError(t, err)
	for _, f := range files {
		s := string(f.Data)
		assert.Contains(t, s, `env=\"prod\", team=~\"pay.*\"}`, f.Path)
		assert.NotContains(t, s, "where we page", f.Path)
	}
}
