package selector_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/internal/selector"
	"github.com/stormwatch-go/stormwatch/rules"
)

// The rules and the dashboards take the same selector setting: they accept the same selectors,
// refuse the same ones with the same error (but for the generator it names), and render an
// accepted one identically.
func TestGeneratorsAgreeOnSelectors(t *testing.T) {
	for _, sel := range []string{
		`{job="x"}`, `state="x"`, `env=~"a)|(b"`, "job=\"\xff\"", `job="\xff"`, `job="a`, `job=checkout`,
		`__name__="up"`, `"service.name"="x"`, `le="1"`, `instance="10.0.0.1:9464"`, `job="a", job='a'`,
		strings.Repeat(`a="b",`, 65), strings.Repeat("x", selector.MaxLen+1),
	} {
		rerr := rules.Config{Selector: sel}.Validate()
		_, derr := dashboards.Generate(dashboards.Config{Selector: sel})
		var r, d *catalog.ConfigError
		require.ErrorAs(t, rerr, &r, "%q", sel)
		require.ErrorAs(t, derr, &d, "%q", sel)
		assert.Equal(t, "rules", r.Primitive)
		assert.Equal(t, "dashboards", d.Primitive)
		r.Primitive, d.Primitive = "", ""
		assert.Equal(t, r, d, "%q", sel)
		assert.Equal(t, strings.TrimPrefix(rerr.Error(), "rules: "), strings.TrimPrefix(derr.Error(), "dashboards: "))
	}

	for _, sel := range []string{
		``, `job="checkout"`, ` job = 'a' , env!~"dev|test", # comment` + "\n" + `team=~` + "`pay.*`" + `,`,
		`a="é\n\"", b=~"x|y"`, `instance!="10.0.0.9:9464"`,
	} {
		require.NoError(t, rules.Config{Selector: sel}.Validate(), "%q", sel)
		files, err := dashboards.Generate(dashboards.Config{Selector: sel})
		require.NoError(t, err, "%q", sel)
		ms, err := selector.Parse("rules", sel)
		require.NoError(t, err)
		if len(ms) == 0 {
			continue
		}
		want := ms.String()
		rf, err := rules.Generate(rules.Config{Selector: sel})
		require.NoError(t, err)
		assert.Contains(t, string(rf), "{"+want+"}", "%q in the rules", sel)
		quoted, err := json.Marshal(want + "}")
		require.NoError(t, err)
		for _, f := range files {
			assert.Contains(t, string(f.Data), strings.Trim(string(quoted), `"`), "%q in %s", sel, f.Path)
		}
	}
}
