// Package selector is stormwatch's one label-selector parser and renderer: the extra PromQL
// label matchers a user adds to every query of the generated rules and dashboards
// (`selector: 'job="checkout", env=~"prod|staging"'` in stormwatch.yaml, Config.Selector of
// the rules and dashboards packages).
//
// # Syntax
//
// A selector is what goes between the braces of a PromQL vector selector, without the braces:
// label matchers separated by commas, as Prometheus 3 parses them (ParsePromQL is exactly that
// grammar):
//
//   - a matcher is `label op value`; op is = (equal), != (not equal), =~ (matches the regular
//     expression) or !~ (does not match it);
//   - label names are [a-zA-Z_][a-zA-Z0-9_]*;
//   - values are string literals in double quotes "…" or single quotes '…' with Go's escapes
//     (\a \b \f \n \r \t \v \\, the enclosing quote, \ooo octal, \xhh, \uhhhh, \Uhhhhhhhh), or in
//     back quotes `…`, raw: no escapes, may span lines;
//   - regular expressions are RE2, as in Prometheus, and fully anchored: env=~"prod" matches
//     "prod" only, never "preprod" (it is ^(?s:prod)$);
//   - white space (space, tab, newline, carriage return) and # comments running to the end of
//     the line may appear between any two tokens; a trailing comma is allowed; an empty or blank
//     selector has no matchers.
//
// # What the generators refuse
//
// Parse applies the rules the generators need on top of the grammar; each refusal says why:
//
//   - braces: `{job="x"}` is refused with a hint to drop them (the selector is only the matchers);
//   - quoted label names, which Prometheus 3 accepts for UTF-8 names ("service.name"="x"): the
//     generated rules keep the selector's labels in their aggregations and in the names of their
//     recorded series, which need classic label names ([a-zA-Z_][a-zA-Z0-9_]*);
//   - labels starting with __ (internal to Prometheus; __name__ included, also written as a bare
//     quoted metric name "up": the metric names come from the catalog);
//   - the labels of stormwatch's own metrics (state, from, to, kind, class, source, cause,
//     primitive) and le, which the generated queries match on or aggregate by themselves;
//   - values that are not valid UTF-8 (Prometheus label values always are);
//   - a matcher on instance that the empty value does not satisfy, such as instance="x": the
//     recorded series are aggregated across instances and carry no instance label, so every
//     rule built on them would select nothing (select instances with != or !~ instead);
//   - the same matcher twice (same label, operator and value);
//   - more than MaxMatchers matchers, or a selector longer than MaxLen bytes.
//
// # Rendering
//
// Matcher.String, Matchers.String and Vector render matchers back into PromQL: label names
// bare, values double-quoted with Go escapes. Both generators render the selector with them,
// so it reads the same in every rule, test, runbook and dashboard.
package selector

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// Limits of a selector. A selector is a handful of matchers; these bound the work a hostile
// configuration can cause.
const (
	// MaxLen is the longest selector accepted, in bytes.
	MaxLen = 4096
	// MaxMatchers is the largest number of matchers a selector may hold.
	MaxMatchers = 64
)

// Field is the configuration key of the selector, the Field of every error Parse returns.
const Field = "selector"

// MatchType is a PromQL label matching operator.
type MatchType uint8

// The four PromQL label matching operators.
const (
	MatchEqual     MatchType = iota // =
	MatchNotEqual                   // !=
	MatchRegexp                     // =~
	MatchNotRegexp                  // !~
)

var matchOps = [...]string{MatchEqual: "=", MatchNotEqual: "!=", MatchRegexp: "=~", MatchNotRegexp: "!~"}

// String returns the operator as written in PromQL: =, !=, =~ or !~.
func (t MatchType) String() string {
	if int(t) < len(matchOps) {
		return matchOps[t]
	}
	return "MatchType(" + strconv.Itoa(int(t)) + ")"
}

// Matcher is one PromQL label matcher, such as job="checkout" or env=~"prod|staging".
//
// Matchers returned by Parse, ParsePromQL and NewMatcher carry their compiled regular
// expression. A Matcher written as a literal renders fine; its Matches compiles a regular
// expression on every call and reports false when it does not compile.
type Matcher struct {
	Name  string
	Type  MatchType
	Value string

	match func(string) bool // the anchored regular expression of =~ and !~
}

// NewMatcher returns the matcher `name op value`, compiling a regular expression as Prometheus
// does. It checks neither the name nor the value: Parse does, for user input.
func NewMatcher(t MatchType, name, value string) (Matcher, error) {
	m := Matcher{Name: name, Type: t, Value: value}
	switch t {
	case MatchEqual, MatchNotEqual:
	case MatchRegexp, MatchNotRegexp:
		f, err := compileRegexp(value)
		if err != nil {
			return Matcher{}, err
		}
		m.match = f
	default:
		return Matcher{}, fmt.Errorf("selector: unknown match type %d", t)
	}
	return m, nil
}

// Matches reports whether a label value (empty for an absent label) satisfies the matcher,
// with PromQL semantics: regular expressions are fully anchored and . matches a newline.
func (m Matcher) Matches(v string) bool {
	switch m.Type {
	case MatchEqual:
		return v == m.Value
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp, MatchNotRegexp:
		f := m.match
		if f == nil {
			var err error
			if f, err = compileRegexp(m.Value); err != nil {
				return false
			}
		}
		return f(v) == (m.Type == MatchRegexp)
	}
	return false
}

// String renders the matcher in PromQL: the label name (quoted only if it is not a classic
// label name), the operator and the value as a double-quoted string literal.
func (m Matcher) String() string {
	name := m.Name
	if !ValidLabelName(name) {
		name = quote(name)
	}
	return name + m.Type.String() + quote(m.Value)
}

// quote renders s as a PromQL double-quoted string literal holding exactly s: Go's escapes,
// which PromQL shares, except that PromQL refuses a literal U+FFFD in a string, so it is escaped.
func quote(s string) string {
	q := strconv.Quote(s)
	if strings.ContainsRune(q, utf8.RuneError) {
		q = strings.ReplaceAll(q, string(utf8.RuneError), `\ufffd`)
	}
	return q
}

// Matchers is a list of label matchers, such as a parsed selector.
type Matchers []Matcher

// String renders the matchers in PromQL, separated by ", ", without braces: the text that goes
// between the braces of a vector selector. It is empty for no matchers.
func (ms Matchers) String() string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.String())
	}
	return b.String()
}

// Vector renders the vector selector metric{m1, m2, …}, or just metric without matchers.
func Vector(metric string, ms ...Matcher) string {
	if len(ms) == 0 {
		return metric
	}
	return metric + "{" + Matchers(ms).String() + "}"
}

// ValidLabelName reports whether name is a classic Prometheus label name,
// [a-zA-Z_][a-zA-Z0-9_]* (prometheus/common's legacy validation): one that PromQL accepts
// unquoted everywhere, in matchers, in by (…) and in recorded series names.
func ValidLabelName(name string) bool {
	return model.LegacyValidation.IsValidLabelName(name)
}

// ownLabels are the labels of stormwatch's own metrics other than name, and the histogram
// bucket label: the generated queries match on them or aggregate by them themselves.
var ownLabels = func() map[string]bool {
	own := map[string]bool{model.BucketLabel: true}
	for _, m := range catalog.All() {
		for _, l := range m.LabelNames() {
			if l != catalog.LabelName {
				own[l] = true
			}
		}
	}
	return own
}()

// ReservedLabel reports whether a selector (or an aggregation the user configures) must not
// use label name: names starting with __, which are internal to Prometheus, and the labels of
// stormwatch's own metrics that the generated queries match on or aggregate by themselves
// (state, from, to, kind, class, source, cause, primitive) and le.
func ReservedLabel(name string) bool {
	return strings.HasPrefix(name, model.ReservedLabelPrefix) || ownLabels[name]
}

// Parse parses a selector (see the package documentation for the syntax) and applies the
// generators' rules. primitive names the generator whose configuration it is ("rules",
// "dashboards"); it becomes the Primitive of the error. An empty or blank selector yields no
// matchers.
//
// Every error is a *catalog.ConfigError with Field "selector", the selector as Value and a
// Reason giving the byte offset of the problem and what was expected there. Both generators
// return it unchanged, so the same selector fails with the same reason in both.
func Parse(primitive, s string) (Matchers, error) {
	fail := func(format string, args ...any) error {
		return &catalog.ConfigError{Primitive: primitive, Field: Field, Value: s, Reason: fmt.Sprintf(format, args...)}
	}
	if len(s) > MaxLen {
		return nil, fail("%d bytes long; a selector may have at most %d", len(s), MaxLen)
	}
	if !utf8.ValidString(s) {
		return nil, fail("offset %d: not valid UTF-8", invalidUTF8(s))
	}
	ps, err := parse(s, MaxMatchers)
	if err != nil {
		return nil, fail("%s", err)
	}
	type key struct {
		name  string
		typ   MatchType
		value string
	}
	first := make(map[key]int, len(ps))
	ms := make(Matchers, len(ps))
	for i, p := range ps {
		m := p.m
		if reason := check(m); reason != "" {
			return nil, fail("offset %d: %s", p.pos, reason)
		}
		k := key{m.Name, m.Type, m.Value}
		if at, dup := first[k]; dup {
			return nil, fail("offset %d: duplicate matcher %s (already at offset %d)", p.pos, m, at)
		}
		first[k] = p.pos
		ms[i] = m
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return ms, nil
}

// check returns why the generators refuse a syntactically valid matcher, or "".
func check(m Matcher) string {
	switch {
	case m.Name == model.MetricNameLabel:
		return fmt.Sprintf("a matcher on the metric name (%s): the metric names come from stormwatch's catalog; select series by their labels", m)
	case !ValidLabelName(m.Name):
		return fmt.Sprintf("label name %s is not a classic Prometheus label name [a-zA-Z_][a-zA-Z0-9_]*: the generated rules keep the selector's labels in their aggregations and recorded series names, which need one",
			quote(m.Name))
	case strings.HasPrefix(m.Name, model.ReservedLabelPrefix):
		return fmt.Sprintf("label %q is reserved: names starting with %s are internal to Prometheus", m.Name, model.ReservedLabelPrefix)
	case ownLabels[m.Name]:
		return fmt.Sprintf("label %q is a label of stormwatch's own metrics: the generated rules and dashboards match on it or aggregate by it themselves, so it cannot be part of the selector", m.Name)
	case !utf8.ValidString(m.Value):
		return fmt.Sprintf("the value of %s is not valid UTF-8 (its escape sequences make %s); Prometheus label values always are", m.Name, quote(m.Value))
	case m.Name == model.InstanceLabel && !m.Matches(""):
		return fmt.Sprintf("matcher %s would drop every recorded series: they are aggregated across instances and have no %s label (select instances with != or !~, or scrape them under their own job)", m, model.InstanceLabel)
	}
	return ""
}

// invalidUTF8 returns the offset of the first byte of s that is not valid UTF-8.
func invalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, w := utf8.DecodeRuneInString(s[i:]); w == 1 {
				return i
			}
		}
	}
	return len(s)
}

// compileRegexp compiles a PromQL regular expression as Prometheus 3 does: an alternation of
// literals (or a single literal) is matched as a set of strings without being parsed; anything
// else is parsed as RE2 with Perl flags and . matching newlines, and fully anchored. Parsing
// the expression on its own first is what refuses `a)|(b`, which the anchored wrapper alone
// would turn into a valid expression.
func compileRegexp(v string) (func(string) bool, error) {
	if alts, ok := literalAlternation(v); ok {
		if len(alts) == 1 {
			return func(s string) bool { return s == v }, nil
		}
		set := make(map[string]struct{}, len(alts))
		for _, a := range alts {
			set[a] = struct{}{}
		}
		return func(s string) bool { _, ok := set[s]; return ok }, nil
	}
	parsed, err := syntax.Parse(v, syntax.Perl|syntax.DotNL)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile("^(?s:" + parsed.String() + ")$")
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}

// literalAlternation splits v at | when every part is a literal string, without regular
// expression metacharacters.
func literalAlternation(v string) ([]string, bool) {
	alts := strings.Split(v, "|")
	for _, a := range alts {
		if regexp.QuoteMeta(a) != a {
			return nil, false
		}
	}
	return alts, true
}
