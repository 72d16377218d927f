package conformance_test

// Selector parity: stormwatch's selector grammar (internal/selector.ParsePromQL) accepts exactly
// what the PromQL parser of Prometheus 3.16 accepts between the braces of a vector selector, with
// the same matchers, which match the same values; the generators' parser (selector.Parse)
// refuses more, each time for a documented reason, and renders what it accepts back into PromQL
// that parses to the same matchers.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/internal/selector"
)

var selectorParser = parser.NewParser(parser.Options{})

// promqlSelector parses sel as the PromQL parser parses the inside of a vector selector. The
// closing brace goes on a line of its own so that a comment ending the selector cannot swallow
// it: the generators never splice the user's text into a query, they render the parsed matchers.
func promqlSelector(sel string) ([]*labels.Matcher, error) {
	return selectorParser.ParseMetricSelector("{" + sel + "\n}")
}

// matchTypes maps stormwatch's operators to Prometheus's.
var matchTypes = map[selector.MatchType]labels.MatchType{
	selector.MatchEqual:     labels.MatchEqual,
	selector.MatchNotEqual:  labels.MatchNotEqual,
	selector.MatchRegexp:    labels.MatchRegexp,
	selector.MatchNotRegexp: labels.MatchNotRegexp,
}

// matchSamples are the label values each pair of matchers must agree on, besides each
// matcher's own value and variations of it.
var matchSamples = []string{
	"", "a", "b", "x", "prod", "staging", "dev", "checkout", "10.0.0.1:9464", "PROD", "é", "日本",
	"a\nb", "a.b", "ab", "\xff", "a|b", "pay", "payments", " ", "\x00",
}

// sameAsPromQL fails unless ours and theirs hold the same matchers, in order, matching the same
// values.
func sameAsPromQL(t *testing.T, sel string, ours selector.Matchers, theirs []*labels.Matcher) {
	t.Helper()
	require.Len(t, ours, len(theirs), "%q: ours %s, PromQL %v", sel, ours, theirs)
	for i, m := range ours {
		p := theirs[i]
		require.Equal(t, p.Name, m.Name, "%q matcher %d", sel, i)
		require.Equal(t, p.Type, matchTypes[m.Type], "%q matcher %d", sel, i)
		require.Equal(t, p.Value, m.Value, "%q matcher %d", sel, i)
		for _, v := range append(matchSamples, m.Value, m.Value+"x", "x"+m.Value, strings.ToUpper(m.Value)) {
			require.Equal(t, p.Matches(v), m.Matches(v), "%q: %s on %q", sel, m, v)
		}
	}
}

// checkSelectorParity checks one selector against the PromQL parser and returns its verdict
// and the generators' verdict.
func checkSelectorParity(t *testing.T, sel string) (promqlErr, parseErr error) {
	t.Helper()
	theirs, promqlErr := promqlSelector(sel)
	ours, err := selector.ParsePromQL(sel)
	if promqlErr != nil {
		require.Error(t, err, "%q: PromQL refuses it (%v), ParsePromQL accepts %s", sel, promqlErr, ours)
	} else {
		require.NoError(t, err, "%q: PromQL accepts it", sel)
		sameAsPromQL(t, sel, ours, theirs)
	}

	gen, parseErr := selector.Parse("rules", sel)
	if parseErr == nil {
		require.NoError(t, promqlErr, "%q: Parse accepts what PromQL refuses", sel)
		sameAsPromQL(t, sel, gen, theirs)
		// What the generators render parses to the same matchers.
		rendered, err := promqlSelector(gen.String())
		require.NoError(t, err, "%q renders as %s", sel, gen)
		sameAsPromQL(t, sel, gen, rendered)
		for _, m := range gen {
			one, err := promqlSelector(m.String())
			require.NoError(t, err, "%q: %s", sel, m)
			sameAsPromQL(t, m.String(), selector.Matchers{m}, one)
		}
	}
	return promqlErr, parseErr
}

func TestSelectorParity(t *testing.T) {
	const (
		ok      = ""               // accepted by PromQL and the generators
		invalid = "PromQL refuses" // refused by both
	)
	// want is the generators' verdict: ok, invalid, or the start of the reason for which they
	// refuse a selector that PromQL accepts.
	cases := []struct{ sel, want string }{
		{``, ok},
		{" \t\r\n ", ok},
		{`job="checkout"`, ok},
		{` job = "a" , env!~'dev|test' , team=~` + "`pay.*`" + ` `, ok},
		{`job="checkout",`, ok},
		{`job="a",,`, invalid},
		{`,`, invalid},
		{`job=""`, ok},
		{`job!=""`, ok},
		{`job=~""`, ok},
		{`job=~".*"`, ok},
		{`{job="x"}`, invalid},
		{`{}`, invalid},
		{`job="x"}`, invalid},
		{`state="x"`, "offset 0: label \"state\" is a label of stormwatch's own metrics"},
		{`kind=~"a|b"`, "offset 0: label \"kind\" is a label of stormwatch's own metrics"},
		{`le="0.1"`, "offset 0: label \"le\" is a label of stormwatch's own metrics"},
		{`__name__="up"`, "offset 0: a matcher on the metric name"},
		{`"up"`, "offset 0: a matcher on the metric name"},
		{`job="a", "up"`, "offset 9: a matcher on the metric name"},
		{`__meta_x="a"`, "offset 0: label \"__meta_x\" is reserved"},
		{`"service.name"="checkout"`, "offset 0: label name \"service.name\" is not a classic Prometheus label name"},
		{`""="x"`, "offset 0: label name \"\" is not a classic Prometheus label name"},
		{`"job"="checkout"`, ok},
		{`env=~"a)|(b"`, invalid},
		{`env!~"(a"`, invalid},
		{`env=~"\\Qa"`, ok},
		{`env=~"x{1001}"`, invalid},
		{`env=~"\\C"`, invalid},
		{`env=~"(?i)prod|(?s:a.b)"`, ok},
		{`env=~"(?<x>a)|(?P<y>b)"`, ok},
		{`env=~"prod|staging|"`, ok},
		{"job=\"\xff\"", invalid},
		{"job=\"a\" # \xff\n", "offset 10: not valid UTF-8"},
		{`job="\xff"`, "offset 0: the value of job is not valid UTF-8"},
		{`job=~"a|\377"`, "offset 0: the value of job is not valid UTF-8"},
		{`"\xff"="a"`, "offset 0: label name \"\\xff\" is not a classic Prometheus label name"},
		{"job=\"\uFFFD\"", invalid},
		{"job=`\uFFFD`", invalid},
		{`job="\ufffd"`, ok},
		{`a="é日本😀", b=~"ü.*"`, ok},
		{`a="\u00e9\x41\101\U0001F600"`, ok},
		{`a="\a\b\f\n\r\t\v\\\""`, ok},
		{`name='it\'s "quoted"'`, ok},
		{`name='it\"s'`, invalid},
		{`name="it\'s"`, invalid},
		{"a=`raw \\d+ \"x\" 'y'\nline`", ok},
		{"a=`raw", invalid},
		{"job=\"a\nb\"", invalid},
		{"job=\"a\rb\"", ok},
		{`job="\q"`, invalid},
		{`job="\x4"`, invalid},
		{`job="\400"`, invalid},
		{`job="\377"`, "offset 0: the value of job is not valid UTF-8"},
		{`job="\ud800"`, invalid},
		{`job="\U00110000"`, invalid},
		{`job="\`, invalid},
		{"job=\"a\" # the service\n, env=\"prod\" # trailing", ok},
		{"job#c\n=#c\n\"a\"", ok},
		{`job="a" # comment, env="b"`, ok},
		{`sum="x", by="y", offset="z", on="w"`, ok},
		{`job=checkout`, invalid},
		{`job=="a"`, invalid},
		{`job= ~"a"`, invalid},
		{`job!"a"`, invalid},
		{`job="a" env="b"`, invalid},
		{`job="a""b"`, invalid},
		{`job-name="a"`, invalid},
		{`job:x="a"`, invalid},
		{`9job="a"`, invalid},
		{`job`, invalid},
		{"job=\"x\"\u00a0", invalid},
		{`instance="10.0.0.1:9464"`, "offset 0: matcher instance=\"10.0.0.1:9464\" would drop every recorded series"},
		{`instance=~"10\\..*"`, "offset 0: matcher instance=~\"10\\\\..*\" would drop every recorded series"},
		{`instance!="10.0.0.9:9464"`, ok},
		{`instance=~"|10\\.0\\..*"`, ok},
		{`job="a", env="b", job='a'`, "offset 18: duplicate matcher job=\"a\" (already at offset 0)"},
		{`job="x", job=~"x"`, ok},
		{strings.Repeat(`a="b",`, 64) + `c="d"`, "offset 384: more than 64 matchers"},
		{`a="` + strings.Repeat("x", 4096) + `"`, "4100 bytes long; a selector may have at most 4096"},
		{`job=~"$job", env="${env}"`, ok},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%.40q", tc.sel), func(t *testing.T) {
			promqlErr, err := checkSelectorParity(t, tc.sel)
			switch tc.want {
			case ok:
				require.NoError(t, promqlErr)
				require.NoError(t, err)
			case invalid:
				require.Error(t, promqlErr)
				require.Error(t, err)
			default:
				require.NoError(t, promqlErr, "PromQL accepts it; the generators refuse it for their own reason")
				require.Error(t, err)
				assert.Contains(t, err.Error(), ": "+tc.want)
			}
		})
	}
}

// FuzzSelectorParity: for any input, ParsePromQL and the PromQL parser of Prometheus 3.16 agree
// on whether it is a list of label matchers and on the matchers (name, operator, value, and the
// values they match); whatever the generators' Parse accepts, PromQL accepts with the same
// matchers, and its rendering parses to them too. The seed corpus is
// testdata/fuzz/FuzzSelectorParity.
func FuzzSelectorParity(f *testing.F) {
	f.Fuzz(func(t *testing.T, sel string) {
		checkSelectorParity(t, sel)
	})
}
