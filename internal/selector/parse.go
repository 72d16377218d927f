package selector

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// ParsePromQL parses s exactly as Prometheus 3's PromQL parser parses the inside of a vector
// selector's braces (with its default options): it accepts what the PromQL parser accepts
// between `{` and a closing brace on the next line, and returns the same matchers, in order.
// It applies none of the generators' rules (Parse does), so it also returns matchers on quoted
// UTF-8 label names, on __name__ (a bare quoted metric name "up" is __name__="up"), with values
// that escape sequences made invalid UTF-8, and duplicates.
//
// Errors are *catalog.ConfigError with Field "selector", the selector as Value, no Primitive,
// and a Reason giving the byte offset of the problem.
func ParsePromQL(s string) (Matchers, error) {
	ps, err := parse(s, 0)
	if err != nil {
		return nil, &catalog.ConfigError{Field: Field, Value: s, Reason: err.Error()}
	}
	ms := make(Matchers, len(ps))
	for i, p := range ps {
		ms[i] = p.m
	}
	return ms, nil
}

// syntaxError is a problem at a byte offset of the selector.
type syntaxError struct {
	pos int
	msg string
}

func (e *syntaxError) Error() string { return "offset " + strconv.Itoa(e.pos) + ": " + e.msg }

// parsed is a matcher and the offset where it starts.
type parsed struct {
	m   Matcher
	pos int
}

// parser reads a selector. It follows the PromQL lexer inside braces token by token, and the
// grammar of a label matcher list: matchers separated by commas, a trailing comma allowed.
type parser struct {
	s string
	i int
}

func (p *parser) errorf(pos int, format string, args ...any) *syntaxError {
	return &syntaxError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

// parse parses s; limit > 0 caps the number of matchers.
func parse(s string, limit int) ([]parsed, *syntaxError) {
	p := &parser{s: s}
	var out []parsed
	for {
		p.skip()
		if p.eof() {
			return out, nil
		}
		if len(out) > 0 {
			if p.s[p.i] != ',' {
				return nil, p.unexpected("want a comma between matchers")
			}
			p.i++
			p.skip()
			if p.eof() {
				return out, nil // a trailing comma
			}
		}
		if limit > 0 && len(out) == limit {
			return nil, p.errorf(p.i, "more than %d matchers", limit)
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
}

func (p *parser) eof() bool { return p.i >= len(p.s) }

// skip skips white space and # comments, which run to the end of the line.
func (p *parser) skip() {
	for !p.eof() {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		case '#':
			for !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != '\r' {
				p.i++
			}
		default:
			return
		}
	}
}

// unexpected reports the token at the current offset, which is not what the grammar wants.
func (p *parser) unexpected(want string) *syntaxError {
	if p.eof() {
		return p.errorf(p.i, "%s, got the end of the selector", want)
	}
	switch c := p.s[p.i]; c {
	case '{', '}':
		return p.errorf(p.i, "%s, got %q: drop the braces, the selector is only the matchers (job=\"x\", not {job=\"x\"})", want, c)
	case '"', '\'', '`':
		return p.errorf(p.i, "%s, got a string", want)
	}
	r, w := utf8.DecodeRuneInString(p.s[p.i:])
	if r == utf8.RuneError && w == 1 {
		return p.errorf(p.i, "%s, got byte %#x, which is not valid UTF-8", want, p.s[p.i])
	}
	if isAlpha(r) {
		j := p.i
		for j < len(p.s) && isAlnum(p.s[j]) {
			j++
		}
		return p.errorf(p.i, "%s, got %q", want, p.s[p.i:j])
	}
	return p.errorf(p.i, "%s, got %q", want, r)
}

// matcher reads `label op value`, or a bare quoted metric name.
func (p *parser) matcher() (parsed, *syntaxError) {
	start := p.i
	var name string
	quotedName := false
	switch c := p.s[p.i]; {
	case isAlpha(rune(c)):
		for !p.eof() && isAlnum(p.s[p.i]) {
			p.i++
		}
		name = p.s[start:p.i]
	case c == '"' || c == '\'' || c == '`':
		v, err := p.str()
		if err != nil {
			return parsed{}, err
		}
		name, quotedName = v, true
	default:
		return parsed{}, p.unexpected("want a label name")
	}
	p.skip()
	t, ok, err := p.op()
	if err != nil {
		return parsed{}, err
	}
	if !ok {
		if quotedName { // PromQL: {"up"} is {__name__="up"}
			return parsed{m: Matcher{Name: "__name__", Type: MatchEqual, Value: name}, pos: start}, nil
		}
		e := p.unexpected(fmt.Sprintf("want =, !=, =~ or !~ after label name %q", name))
		if !p.eof() && !strings.ContainsRune(" \t\n\r#,", rune(p.s[p.i])) {
			e.msg += " (label names are [a-zA-Z_][a-zA-Z0-9_]*)"
		}
		return parsed{}, e
	}
	p.skip()
	if p.eof() || (p.s[p.i] != '"' && p.s[p.i] != '\'' && p.s[p.i] != '`') {
		e := p.unexpected(fmt.Sprintf("want a quoted value after %s%s", name, t))
		if !p.eof() && isAlnum(p.s[p.i]) {
			e.msg += " (quote it: \"…\", '…' or `…`)"
		}
		return parsed{}, e
	}
	valuePos := p.i
	value, err := p.str()
	if err != nil {
		return parsed{}, err
	}
	m, cerr := NewMatcher(t, name, value)
	if cerr != nil {
		return parsed{}, p.errorf(valuePos, "invalid regular expression %s for %s: %s",
			quote(value), name, strings.TrimPrefix(cerr.Error(), "error parsing regexp: "))
	}
	return parsed{m: m, pos: start}, nil
}

// op reads a matching operator; false if there is none at the current offset.
func (p *parser) op() (MatchType, bool, *syntaxError) {
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, "=~"):
		p.i += 2
		return MatchRegexp, true, nil
	case strings.HasPrefix(rest, "="):
		p.i++
		return MatchEqual, true, nil
	case strings.HasPrefix(rest, "!="):
		p.i += 2
		return MatchNotEqual, true, nil
	case strings.HasPrefix(rest, "!~"):
		p.i += 2
		return MatchNotRegexp, true, nil
	case strings.HasPrefix(rest, "!"):
		p.i++
		return 0, false, p.unexpected("want = or ~ after !")
	}
	return 0, false, nil
}

// eofRune stands for the end of the selector while reading an escape sequence.
const eofRune = -1

// next returns the rune at the current offset and moves past it; eofRune at the end.
func (p *parser) next() rune {
	if p.eof() {
		return eofRune
	}
	r, w := utf8.DecodeRuneInString(p.s[p.i:])
	p.i += w
	return r
}

// str reads a string literal as PromQL lexes and unquotes it, and returns its value.
func (p *parser) str() (string, *syntaxError) {
	start := p.i
	q := rune(p.s[p.i])
	p.i++
	if q == '`' {
		for {
			at := p.i
			switch r := p.next(); r {
			case eofRune:
				return "", p.errorf(start, "unterminated raw string: no closing `")
			case utf8.RuneError:
				return "", p.badRune(at)
			case '`':
				return p.s[start+1 : at], nil
			}
		}
	}
	var b strings.Builder
	for {
		at := p.i
		switch r := p.next(); r {
		case eofRune:
			return "", p.errorf(start, "unterminated quoted string: no closing %c", q)
		case '\n':
			return "", p.errorf(start, "unterminated quoted string: a newline ends it before the closing %c (write \\n, or use a raw `…` string)", q)
		case utf8.RuneError:
			return "", p.badRune(at)
		case q:
			return b.String(), nil
		case '\\':
			if err := p.escape(&b, q, at); err != nil {
				return "", err
			}
		default:
			b.WriteString(p.s[at:p.i])
		}
	}
}

// badRune reports the byte sequence at offset at that PromQL refuses in a string: invalid
// UTF-8, or the replacement character U+FFFD itself.
func (p *parser) badRune(at int) *syntaxError {
	if _, w := utf8.DecodeRuneInString(p.s[at:]); w == 1 {
		return p.errorf(at, "byte %#x in a string is not valid UTF-8", p.s[at])
	}
	return p.errorf(at, "PromQL refuses the replacement character U+FFFD in a string; write it as \\ufffd")
}

// escape reads an escape sequence, the backslash at offset at already read, as PromQL does,
// and writes the byte or character it stands for.
func (p *parser) escape(b *strings.Builder, q rune, at int) *syntaxError {
	var n int
	var base, maxVal uint32
	ch := p.next()
	switch ch {
	case 'a':
		b.WriteByte('\a')
		return nil
	case 'b':
		b.WriteByte('\b')
		return nil
	case 'f':
		b.WriteByte('\f')
		return nil
	case 'n':
		b.WriteByte('\n')
		return nil
	case 'r':
		b.WriteByte('\r')
		return nil
	case 't':
		b.WriteByte('\t')
		return nil
	case 'v':
		b.WriteByte('\v')
		return nil
	case '\\', q:
		b.WriteRune(ch)
		return nil
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n, base, maxVal = 3, 8, 255
	case 'x':
		ch = p.next()
		n, base, maxVal = 2, 16, 255
	case 'u':
		ch = p.next()
		n, base, maxVal = 4, 16, unicode.MaxRune
	case 'U':
		ch = p.next()
		n, base, maxVal = 8, 16, unicode.MaxRune
	case eofRune:
		return p.errorf(at, "escape sequence not terminated")
	default:
		return p.errorf(at, "unknown escape sequence \\%s in a %c-quoted string", printable(ch), q)
	}
	var x uint32
	for n > 0 {
		d := uint32(digitVal(ch))
		if d >= base {
			if ch == eofRune {
				return p.errorf(at, "escape sequence not terminated")
			}
			return p.errorf(at, "illegal character %s in escape sequence", printable(ch))
		}
		x = x*base + d
		n--
		if n > 0 {
			ch = p.next()
		}
	}
	if x > maxVal || 0xD800 <= x && x < 0xE000 {
		return p.errorf(at, "escape sequence %s is an invalid Unicode code point", p.s[at:p.i])
	}
	if maxVal == 255 {
		b.WriteByte(byte(x)) // \ooo and \xhh are bytes, possibly not UTF-8
	} else {
		b.WriteRune(rune(x))
	}
	return nil
}

// printable renders a rune of an error message.
func printable(r rune) string {
	if r == utf8.RuneError {
		return "(not valid UTF-8)"
	}
	if unicode.IsPrint(r) {
		return string(r)
	}
	return fmt.Sprintf("%U", r)
}

func digitVal(ch rune) int {
	switch {
	case '0' <= ch && ch <= '9':
		return int(ch - '0')
	case 'a' <= ch && ch <= 'f':
		return int(ch - 'a' + 10)
	case 'A' <= ch && ch <= 'F':
		return int(ch - 'A' + 10)
	}
	return 16
}

func isAlpha(r rune) bool { return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') }

func isAlnum(c byte) bool { return isAlpha(rune(c)) || ('0' <= c && c <= '9') }
