package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MatchOp is a PromQL label matching operator.
type MatchOp string

// The four PromQL label matching operators.
const (
	MatchEqual     MatchOp = "="
	MatchNotEqual  MatchOp = "!="
	MatchRegexp    MatchOp = "=~"
	MatchNotRegexp MatchOp = "!~"
)

// Matcher is one PromQL label matcher, such as job="checkout".
type Matcher struct {
	Label string
	Op    MatchOp
	Value string

	re *regexp.Regexp // anchored, for =~ and !~
}

// String renders the matcher in PromQL syntax with a Go-quoted value.
func (m Matcher) String() string {
	return m.Label + string(m.Op) + strconv.Quote(m.Value)
}

// Matches reports whether a label value (empty for an absent label) satisfies the matcher,
// with PromQL semantics: regular expressions are fully anchored.
func (m Matcher) Matches(v string) bool {
	switch m.Op {
	case MatchEqual:
		return v == m.Value
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp:
		return m.regexp().MatchString(v)
	case MatchNotRegexp:
		return !m.regexp().MatchString(v)
	}
	return false
}

func (m Matcher) regexp() *regexp.Regexp {
	if m.re != nil {
		return m.re
	}
	return regexp.MustCompile("^(?:" + m.Value + ")$") // validated by ParseSelector
}

// reservedSelectorLabels are labels the generated rules match on themselves (or that
// histograms use); a selector on them would contradict or silently narrow the rules.
var reservedSelectorLabels = map[string]bool{
	"state": true, "from": true, "to": true, "kind": true, "class": true, "source": true,
	"cause": true, "primitive": true, "le": true,
}

// ParseSelector parses a comma-separated list of PromQL label matchers (`label op "value"`,
// optionally wrapped in braces, a trailing comma allowed) such as
// `job="checkout", env=~"prod|staging"`. Operators are =, !=, =~ and !~; values are quoted
// with ", ' or ` and use Go escapes; regular expressions must compile (RE2, as PromQL).
// Label names must be valid Prometheus label names, not reserved (__name__ and other __
// labels) and not one of the labels the rules match on themselves (state, from, to, kind,
// class, source, cause, primitive, le). An empty or blank selector yields no matchers.
func ParseSelector(s string) ([]Matcher, error) {
	p := selParser{s: s}
	p.skip()
	if p.i < len(s) && s[p.i] == '{' {
		p.i++
		p.braced = true
	}
	var out []Matcher
	for {
		p.skip()
		if p.braced && p.i < len(s) && s[p.i] == '}' {
			p.i++
			p.skip()
			if p.i != len(s) {
				return nil, p.errf("unexpected %q after the closing brace", s[p.i:])
			}
			return out, nil
		}
		if p.i == len(s) {
			if p.braced {
				return nil, p.errf("missing closing brace")
			}
			return out, nil
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		p.skip()
		if p.i == len(s) || (p.braced && s[p.i] == '}') {
			continue
		}
		if s[p.i] != ',' {
			return nil, p.errf("want a comma between matchers, got %q", s[p.i])
		}
		p.i++
	}
}

type selParser struct {
	s      string
	i      int
	braced bool
}

func (p *selParser) errf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *selParser) skip() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func isLabelStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isLabelChar(c byte) bool { return isLabelStart(c) || (c >= '0' && c <= '9') }

func (p *selParser) matcher() (Matcher, error) {
	start := p.i
	if !isLabelStart(p.s[p.i]) {
		return Matcher{}, p.errf("want a label name, got %q", p.s[p.i])
	}
	for p.i < len(p.s) && isLabelChar(p.s[p.i]) {
		p.i++
	}
	label := p.s[start:p.i]
	if strings.HasPrefix(label, "__") {
		return Matcher{}, fmt.Errorf("offset %d: label %q is reserved (names starting with __ are internal; metric names come from the catalog)", start, label)
	}
	if reservedSelectorLabels[label] {
		return Matcher{}, fmt.Errorf("offset %d: label %q is set by the generated rules themselves and cannot be part of the selector", start, label)
	}
	p.skip()
	var op MatchOp
	switch {
	case strings.HasPrefix(p.s[p.i:], "=~"):
		op = MatchRegexp
	case strings.HasPrefix(p.s[p.i:], "!="):
		op = MatchNotEqual
	case strings.HasPrefix(p.s[p.i:], "!~"):
		op = MatchNotRegexp
	case strings.HasPrefix(p.s[p.i:], "="):
		op = MatchEqual
	default:
		if p.i == len(p.s) {
			return Matcher{}, p.errf("want =, !=, =~ or !~ after label %q, got end of input", label)
		}
		return Matcher{}, p.errf("want =, !=, =~ or !~ after label %q, got %q", label, p.s[p.i])
	}
	p.i += len(op)
	p.skip()
	val, err := p.quoted()
	if err != nil {
		return Matcher{}, err
	}
	m := Matcher{Label: label, Op: op, Value: val}
	if op == MatchRegexp || op == MatchNotRegexp {
		re, err := regexp.Compile("^(?:" + val + ")$")
		if err != nil {
			return Matcher{}, fmt.Errorf("label %q: regular expression %q: %w", label, val, err)
		}
		m.re = re
	}
	return m, nil
}

// quoted reads a PromQL string literal: "…" or '…' with Go escapes, or `…` raw.
func (p *selParser) quoted() (string, error) {
	if p.i == len(p.s) {
		return "", p.errf("want a quoted value, got end of input")
	}
	q := p.s[p.i]
	if q != '"' && q != '\'' && q != '`' {
		return "", p.errf("want a quoted value (\", ' or `), got %q", q)
	}
	start := p.i
	p.i++
	for p.i < len(p.s) && p.s[p.i] != q {
		if p.s[p.i] == '\n' && q != '`' {
			return "", p.errf("newline in quoted value")
		}
		if p.s[p.i] == '\\' && q != '`' {
			p.i++
		}
		p.i++
	}
	if p.i >= len(p.s) {
		return "", fmt.Errorf("offset %d: unterminated quoted value", start)
	}
	p.i++
	lit := p.s[start:p.i]
	if q == '\'' {
		// Rewrite as a double-quoted Go literal: \' becomes ', a bare " is escaped.
		var b strings.Builder
		b.WriteByte('"')
		inner := lit[1 : len(lit)-1]
		for j := 0; j < len(inner); j++ {
			switch {
			case inner[j] == '\\' && j+1 < len(inner) && inner[j+1] == '\'':
				b.WriteByte('\'')
				j++
			case inner[j] == '\\' && j+1 < len(inner):
				b.WriteByte('\\')
				b.WriteByte(inner[j+1])
				j++
			case inner[j] == '"':
				b.WriteString(`\"`)
			default:
				b.WriteByte(inner[j])
			}
		}
		b.WriteByte('"')
		lit = b.String()
	}
	v, err := strconv.Unquote(lit)
	if err != nil {
		return "", fmt.Errorf("offset %d: invalid quoted value %s: %w", start, lit, err)
	}
	return v, nil
}
