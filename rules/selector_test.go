package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSelector(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"{}", nil},
		{`job="checkout"`, []string{`job="checkout"`}},
		{`{job="checkout"}`, []string{`job="checkout"`}},
		{`job="checkout",`, []string{`job="checkout"`}},
		{` job = "a" , env!~'dev|test' , team=~` + "`pay.*`" + ` `, []string{`job="a"`, `env!~"dev|test"`, `team=~"pay.*"`}},
		{`name!="x\"y"`, []string{`name!="x\"y"`}},
		{`name='it\'s'`, []string{`name="it's"`}},
		{`a="\u00e9"`, []string{`a="é"`}},
		{`instance=~"10\\.0\\..*"`, []string{`instance=~"10\\.0\\..*"`}},
	}
	for _, tc := range cases {
		ms, err := ParseSelector(tc.in)
		require.NoError(t, err, tc.in)
		var got []string
		for _, m := range ms {
			got = append(got, m.String())
		}
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestParseSelectorRejects(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{`job`, "want =, !=, =~ or !~"},
		{`job=checkout`, "want a quoted value"},
		{`job="checkout`, "unterminated"},
		{`job="a" env="b"`, "want a comma"},
		{`{job="a"`, "missing closing brace"},
		{`{job="a"} x`, "after the closing brace"},
		{`job=="a"`, "want a quoted value"},
		{`9job="a"`, "want a label name"},
		{`job-name="a"`, "want =, !=, =~ or !~"},
		{`__name__="up"`, "reserved"},
		{`state="open"`, "set by the generated rules"},
		{`le="1"`, "set by the generated rules"},
		{`job=~"(unclosed"`, "regular expression"},
		{`job="a\q"`, "invalid quoted value"},
		{`,`, "want a label name"},
		{"job=\"a\nb\"", "newline"},
	} {
		_, err := ParseSelector(tc.in)
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.msg, tc.in)
	}
}

func TestMatcherSemanticsAreAnchored(t *testing.T) {
	ms, err := ParseSelector(`a=~"pay.*", b!~"dev|test", c="x", d!="y"`)
	require.NoError(t, err)
	assert.True(t, ms[0].Matches("payments"))
	assert.False(t, ms[0].Matches("xpayments"), "regexps are anchored")
	assert.True(t, ms[1].Matches("prod"))
	assert.False(t, ms[1].Matches("dev"))
	assert.True(t, ms[1].Matches("devx"))
	assert.True(t, ms[2].Matches("x"))
	assert.False(t, ms[3].Matches("y"))
	assert.True(t, ms[3].Matches(""))
}

func TestSampleRegexpMatches(t *testing.T) {
	for _, re := range []string{"prod", "prod|staging", "pay.*", "eu-[0-9]+", "(a|b)c{2,3}", "[^a]x", "x?y", `10\.0\.\d+\.\d+:9464`} {
		s, ok := sampleRegexp(re)
		require.True(t, ok, re)
		m := Matcher{Label: "l", Op: MatchRegexp, Value: re}
		assert.True(t, m.Matches(s), "%q should match %q", s, re)
	}
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`job="a"`, `{a=~"b|c", d!='e'}`, "x=`y`,", `a!~"\\d+"`, `{`, `a="\x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseSelector(s)
		if err != nil {
			return
		}
		// What parses renders to something that parses to the same matchers.
		var parts []string
		for _, m := range ms {
			parts = append(parts, m.String())
		}
		again, err := ParseSelector(joinComma(parts))
		if err != nil {
			t.Fatalf("re-parsing %q (from %q): %v", joinComma(parts), s, err)
		}
		if len(again) != len(ms) {
			t.Fatalf("round trip of %q changed the matcher count", s)
		}
		for i := range ms {
			if again[i].Label != ms[i].Label || again[i].Op != ms[i].Op || again[i].Value != ms[i].Value {
				t.Fatalf("round trip of %q changed matcher %d: %v vs %v", s, i, ms[i], again[i])
			}
		}
	})
}

func joinComma(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}
