package selector

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// triple is a matcher without its compiled regular expression, for comparisons.
type triple struct {
	Name  string
	Type  MatchType
	Value string
}

func triples(ms Matchers) []triple {
	var out []triple
	for _, m := range ms {
		out = append(out, triple{m.Name, m.Type, m.Value})
	}
	return out
}

func TestParseAccepts(t *testing.T) {
	cases := []struct {
		in   string
		want string // Matchers.String() of the result
	}{
		{"", ""},
		{" \t\r\n ", ""},
		{"# only a comment", ""},
		{`job="checkout"`, `job="checkout"`},
		{`job="checkout",`, `job="checkout"`},
		{"job=\"checkout\" ,\n", `job="checkout"`},
		{` job = "a" , env!~'dev|test' , team=~` + "`pay.*`" + ` `, `job="a", env!~"dev|test", team=~"pay.*"`},
		{`job=""`, `job=""`},
		{`job!=""`, `job!=""`},
		{`job=~""`, `job=~""`},
		{`name!="x\"y"`, `name!="x\"y"`},
		{`name='it\'s "quoted"'`, `name="it's \"quoted\""`},
		{`a="\a\b\f\n\r\t\v\\"`, `a="\a\b\f\n\r\t\v\\"`},
		{`a="\u00e9\x41\101\U0001F600"`, `a="éAA😀"`},
		{`a="é日本😀"`, `a="é日本😀"`},
		{`a="\ufffd"`, `a="\ufffd"`},
		{"a=`raw \\d+ \"x\" 'y'\nline`", `a="raw \\d+ \"x\" 'y'\nline"`},
		{"a=\"carriage\rreturn\"", `a="carriage\rreturn"`},
		{`instance!="10.0.0.9:9464"`, `instance!="10.0.0.9:9464"`},
		{`instance=~"|10\\.0\\..*"`, `instance=~"|10\\.0\\..*"`},
		{"job=\"a\" # the checkout service\n, env=\"prod\" # and prod", `job="a", env="prod"`},
		{"job#c\n=#c\n\"a\"", `job="a"`},
		{`sum="x", by="y", offset="z"`, `sum="x", by="y", offset="z"`},
		{`"job"="quoted classic name"`, `job="quoted classic name"`},
		{`a=~"(?i)prod", b=~"(?P<x>a)", c=~"(?<y>b)"`, `a=~"(?i)prod", b=~"(?P<x>a)", c=~"(?<y>b)"`},
		{`job="x", job!="y"`, `job="x", job!="y"`},
		{`job="x", job=~"x"`, `job="x", job=~"x"`},
	}
	for _, tc := range cases {
		ms, err := Parse("rules", tc.in)
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, ms.String(), "%q", tc.in)
		if tc.want == "" {
			assert.Nil(t, ms, "%q", tc.in)
		}
	}
}

func TestParseRejects(t *testing.T) {
	many := strings.Repeat(`a="b",`, MaxMatchers)
	cases := []struct {
		in     string
		reason string // the whole Reason, or its start when it ends in …
	}{
		// Braces: the selector is the matchers only.
		{`{job="x"}`, `offset 0: want a label name, got '{': drop the braces, the selector is only the matchers (job="x", not {job="x"})`},
		{`job="x"}`, `offset 7: want a comma between matchers, got '}': drop the braces…`},
		{`{}`, `offset 0: want a label name, got '{'…`},
		// Invalid regular expressions, including those that only the anchoring made valid.
		{`env=~"a)|(b"`, "offset 5: invalid regular expression \"a)|(b\" for env: unexpected ): `a)|(b`"},
		{`env!~"(unclosed"`, "offset 5: invalid regular expression \"(unclosed\" for env: missing closing ): `(unclosed`"},
		{`env=~"\\Qa"`, ""}, // valid: \Q…\E runs to the end of the expression
		{`env=~"x{1001}"`, "offset 5: invalid regular expression \"x{1001}\" for env: invalid repeat count: `{1001}`"},
		{`env=~"\\C"`, "offset 5: invalid regular expression \"\\\\C\" for env: invalid escape sequence: `\\C`"},
		// Invalid UTF-8: raw, and made by escape sequences.
		{"job=\"\xff\"", "offset 5: not valid UTF-8"},
		{"job=\"ok\" # \xff\n", "offset 11: not valid UTF-8"},
		{`job="\xff"`, `offset 0: the value of job is not valid UTF-8 (its escape sequences make "\xff"); Prometheus label values always are`},
		{`job=~"a|\377"`, `offset 0: the value of job is not valid UTF-8…`},
		{"job=\"\uFFFD\"", `offset 5: PromQL refuses the replacement character U+FFFD in a string; write it as \ufffd`},
		// Labels the generators own.
		{`state="open"`, `offset 0: label "state" is a label of stormwatch's own metrics: the generated rules and dashboards match on it or aggregate by it themselves, so it cannot be part of the selector`},
		{`job="a", le="1"`, `offset 9: label "le" is a label of stormwatch's own metrics…`},
		{`kind!="x"`, `offset 0: label "kind" is a label of stormwatch's own metrics…`},
		{`primitive="retry"`, `offset 0: label "primitive" is a label of stormwatch's own metrics…`},
		{`__name__="up"`, `offset 0: a matcher on the metric name (__name__="up"): the metric names come from stormwatch's catalog; select series by their labels`},
		{`"up"`, `offset 0: a matcher on the metric name (__name__="up")…`},
		{`__meta_x="a"`, `offset 0: label "__meta_x" is reserved: names starting with __ are internal to Prometheus`},
		{`"service.name"="a"`, `offset 0: label name "service.name" is not a classic Prometheus label name [a-zA-Z_][a-zA-Z0-9_]*: the generated rules keep the selector's labels in their aggregations and recorded series names, which need one`},
		{`""="a"`, `offset 0: label name "" is not a classic Prometheus label name…`},
		// instance: the recorded series are aggregated across instances.
		{`instance="10.0.0.1:9464"`, `offset 0: matcher instance="10.0.0.1:9464" would drop every recorded series: they are aggregated across instances and have no instance label (select instances with != or !~, or scrape them under their own job)`},
		{`instance=~"10\\..*"`, `offset 0: matcher instance=~"10\\..*" would drop every recorded series…`},
		// Duplicates and limits.
		{`job="a", env="b", job='a'`, `offset 18: duplicate matcher job="a" (already at offset 0)`},
		{many + `c="d"`, fmt.Sprintf("offset %d: more than %d matchers", len(many), MaxMatchers)},
		{`a="` + strings.Repeat("x", MaxLen) + `"`, fmt.Sprintf("%d bytes long; a selector may have at most %d", MaxLen+4, MaxLen)},
		// Lexical errors, each with its offset and what was expected.
		{`job`, `offset 3: want =, !=, =~ or !~ after label name "job", got the end of the selector`},
		{`job-name="a"`, `offset 3: want =, !=, =~ or !~ after label name "job", got '-' (label names are [a-zA-Z_][a-zA-Z0-9_]*)`},
		{`job:x="a"`, `offset 3: want =, !=, =~ or !~ after label name "job", got ':'…`},
		{`9job="a"`, `offset 0: want a label name, got '9'`},
		{`job=checkout`, `offset 4: want a quoted value after job=, got "checkout" (quote it: "…", '…' or ` + "`…`)"},
		{`job=="a"`, `offset 4: want a quoted value after job=, got '='`},
		{`job= ~"a"`, `offset 5: want a quoted value after job=, got '~'`},
		{`job!"a"`, `offset 4: want = or ~ after !, got a string`},
		{`job="checkout`, `offset 4: unterminated quoted string: no closing "`},
		{"job=`checkout", "offset 4: unterminated raw string: no closing `"},
		{"job=\"a\nb\"", `offset 4: unterminated quoted string: a newline ends it before the closing " (write \n, or use a raw ` + "`…` string)"},
		{`job="a" env="b"`, `offset 8: want a comma between matchers, got "env"`},
		{`job="a""b"`, `offset 7: want a comma between matchers, got a string`},
		{`,`, `offset 0: want a label name, got ','`},
		{`job="a",,`, `offset 8: want a label name, got ','`},
		{`job="a" # comment, env="b"`, ""}, // valid: the comment runs to the end
		{`job="\q"`, `offset 5: unknown escape sequence \q in a "-quoted string`},
		{`job='it\"s'`, `offset 7: unknown escape sequence \" in a '-quoted string`},
		{`job="it\'s"`, `offset 7: unknown escape sequence \' in a "-quoted string`},
		{`job="\x4"`, `offset 5: illegal character " in escape sequence`},
		{`job="\400"`, `offset 5: escape sequence \400 is an invalid Unicode code point`},
		{`job="\ud800"`, `offset 5: escape sequence \ud800 is an invalid Unicode code point`},
		{`job="\U00110000"`, `offset 5: escape sequence \U00110000 is an invalid Unicode code point`},
		{`job="\`, `offset 5: escape sequence not terminated`},
		{`job="x"` + "\u00a0", `offset 7: want a comma between matchers, got '\u00a0'`},
	}
	for _, tc := range cases {
		ms, err := Parse("dashboards", tc.in)
		if tc.reason == "" {
			assert.NoError(t, err, "%q", tc.in)
			continue
		}
		require.Error(t, err, "%.80q gave %s", tc.in, ms)
		var ce *catalog.ConfigError
		require.True(t, errors.As(err, &ce), "%q: %T", tc.in, err)
		assert.Equal(t, "dashboards", ce.Primitive)
		assert.Equal(t, "selector", ce.Field)
		assert.Equal(t, tc.in, ce.Value)
		if prefix, ok := strings.CutSuffix(tc.reason, "…"); ok {
			assert.True(t, strings.HasPrefix(ce.Reason, prefix), "%.80q:\n got  %s\n want %s…", tc.in, ce.Reason, prefix)
		} else {
			assert.Equal(t, tc.reason, ce.Reason, "%.80q", tc.in)
		}
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := Parse("rules", `{job="x"}`)
	assert.EqualError(t, err, `rules: selector = "{job=\"x\"}": offset 0: want a label name, got '{': drop the braces, the selector is only the matchers (job="x", not {job="x"})`)
}

func TestLimitsAreInclusive(t *testing.T) {
	parts := make([]string, MaxMatchers)
	for i := range parts {
		parts[i] = fmt.Sprintf("l%d=\"v\"", i)
	}
	ms, err := Parse("rules", strings.Join(parts, ","))
	require.NoError(t, err)
	assert.Len(t, ms, MaxMatchers)

	long := `a="` + strings.Repeat("x", MaxLen-4) + `"`
	require.Len(t, long, MaxLen)
	_, err = Parse("rules", long)
	require.NoError(t, err)
}

// A hostile selector — the 197 KB, 16,000-matcher one of the fuzzing report — is refused
// before any matcher is parsed.
func TestHugeSelectorIsRefusedUpFront(t *testing.T) {
	huge := strings.Repeat(`env=~"(a|b)+c",`, 16000)
	_, err := Parse("rules", huge)
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "at most 4096")
}

func TestMatchesIsAnchoredLikePromQL(t *testing.T) {
	ms, err := Parse("rules", `a=~"pay.*", b!~"dev|test", c="x", d!="y", e=~"a.b", f=~"", g=~"x|y", h=~"(?i)prod"`)
	require.NoError(t, err)
	for _, tc := range []struct {
		m    int
		v    string
		want bool
	}{
		{0, "payments", true}, {0, "xpayments", false}, {0, "pay\nments", true},
		{1, "prod", true}, {1, "dev", false}, {1, "devx", true}, {1, "xdev", true},
		{2, "x", true}, {2, "xx", false},
		{3, "y", false}, {3, "", true},
		{4, "a\nb", true}, {4, "ab", false}, {4, "xa.b", false},
		{5, "", true}, {5, "a", false},
		{6, "x", true}, {6, "y", true}, {6, "xy", false}, {6, "x|y", false},
		{7, "PROD", true}, {7, "PRODx", false},
	} {
		assert.Equal(t, tc.want, ms[tc.m].Matches(tc.v), "%s on %q", ms[tc.m], tc.v)
	}
	// A matcher written as a literal compiles on demand; an invalid one matches nothing.
	assert.True(t, Matcher{Name: "a", Type: MatchRegexp, Value: "pay.*"}.Matches("payments"))
	assert.False(t, Matcher{Name: "a", Type: MatchRegexp, Value: "a)|(b"}.Matches("a"))
	assert.False(t, Matcher{Name: "a", Type: MatchNotRegexp, Value: "a)|(b"}.Matches("a"))
}

func TestNewMatcher(t *testing.T) {
	m, err := NewMatcher(MatchNotRegexp, "env", "dev|test")
	require.NoError(t, err)
	assert.Equal(t, `env!~"dev|test"`, m.String())
	assert.False(t, m.Matches("dev"))
	_, err = NewMatcher(MatchRegexp, "env", "a)|(b")
	assert.Error(t, err)
	_, err = NewMatcher(MatchType(9), "env", "a")
	assert.Error(t, err)
}

func TestRender(t *testing.T) {
	assert.Equal(t, "up", Vector("up"))
	assert.Equal(t, `up{job="a", env=~"p.*"}`, Vector("up",
		Matcher{Name: "job", Type: MatchEqual, Value: "a"}, Matcher{Name: "env", Type: MatchRegexp, Value: "p.*"}))
	assert.Equal(t, `"service.name"!="\xff"`, Matcher{Name: "service.name", Type: MatchNotEqual, Value: "\xff"}.String())
	assert.Equal(t, `a="\ufffd"`, Matcher{Name: "a", Value: "\uFFFD"}.String(), "PromQL refuses a literal U+FFFD")
	assert.Equal(t, "MatchType(7)", MatchType(7).String())
	assert.Equal(t, "", Matchers(nil).String())
}

// ParsePromQL applies none of the generators' rules: what Parse refuses for them parses.
func TestParsePromQLIsTheGrammarOnly(t *testing.T) {
	ms, err := ParsePromQL(`state="open", "service.name"="a", "up", a="\xff", a="\xff", __x=~"y",`)
	require.NoError(t, err)
	assert.Equal(t, []triple{
		{"state", MatchEqual, "open"}, {"service.name", MatchEqual, "a"}, {"__name__", MatchEqual, "up"},
		{"a", MatchEqual, "\xff"}, {"a", MatchEqual, "\xff"}, {"__x", MatchRegexp, "y"},
	}, triples(ms))
	// Its errors carry no primitive: they are the grammar's.
	_, err = ParsePromQL(`{a="b"}`)
	var ce *catalog.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Empty(t, ce.Primitive)
	assert.Equal(t, "selector", ce.Field)
}

func TestLabelNames(t *testing.T) {
	for _, n := range []string{"job", "_x", "A9", "le", "__name__"} {
		assert.True(t, ValidLabelName(n), n)
	}
	for _, n := range []string{"", "9a", "a-b", "a.b", "a:b", "é"} {
		assert.False(t, ValidLabelName(n), n)
	}
	// The reserved labels are the catalog's own labels (all but name), le and __*.
	var own []string
	for n := range ownLabels {
		own = append(own, n)
	}
	slices.Sort(own)
	assert.Equal(t, []string{"cause", "class", "from", "kind", "le", "outcome", "primitive", "reason", "source", "state", "to"}, own)
	for _, n := range []string{"state", "le", "__name__", "__x"} {
		assert.True(t, ReservedLabel(n), n)
	}
	for _, n := range []string{"name", "job", "instance", "env"} {
		assert.False(t, ReservedLabel(n), n)
	}
}

func ExampleParse() {
	ms, err := Parse("rules", `job="checkout", env=~'prod|staging', # PromQL comments are fine
		team!~`+"`pay.*`"+`,`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(Vector("up", ms...))
	fmt.Println(ms[1].Matches("staging"), ms[1].Matches("staging-eu"))

	_, err = Parse("rules", `{job="checkout"}`)
	fmt.Println(err)
	_, err = Parse("rules", `env=~"a)|(b"`)
	fmt.Println(err)
	// Output:
	// up{job="checkout", env=~"prod|staging", team!~"pay.*"}
	// true false
	// rules: selector = "{job=\"checkout\"}": offset 0: want a label name, got '{': drop the braces, the selector is only the matchers (job="x", not {job="x"})
	// rules: selector = "env=~\"a)|(b\"": offset 5: invalid regular expression "a)|(b" for env: unexpected ): `a)|(b`
}

func BenchmarkParse(b *testing.B) {
	var worst []string // 64 regular expressions, as long as MaxLen allows
	for i := range MaxMatchers {
		worst = append(worst, fmt.Sprintf(`l%02d=~"(a|b|c)+[0-9]{1,30}.*x?"`, i))
	}
	for _, bc := range []struct{ name, sel string }{
		{"typical", `job="checkout", env=~"prod|staging", team!~'pay.*'`},
		{"64_regexps", strings.Join(worst, ",")},
	} {
		require.LessOrEqual(b, len(bc.sel), MaxLen)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("rules", bc.sel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
