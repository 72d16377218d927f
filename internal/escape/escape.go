// Package escape holds one escaper per output format that user strings enter besides YAML,
// JSON and PromQL (whose encoders quote): Markdown for the runbooks, and the Grafana variable
// syntax for the dashboards.
//
// Grafana substitutes $var, ${var}, ${var:format}, ${__user.login} and [[var]] in queries,
// titles and links, and has no escape for a literal one (grafana/grafana#40603). So there is no
// escaper for it: GrafanaVariable finds such syntax, and the generators refuse it in every
// string that reaches a dashboard (the selector's values, the title prefix, SLO ids and names)
// as a configuration error.
package escape

import (
	"regexp"
	"strings"
)

// Markdown escapes s for Markdown text (CommonMark and GitHub's) in the middle of a line: the
// characters that open or close inline constructs and HTML — \ ` * _ [ ] ( ) < > # ! | ~ & { }
// — get a backslash, and so do - + = at the start (list, heading underline), so that no
// heading, emphasis, link, image, autolink, HTML tag or entity, code span, table cell or
// strikethrough can start inside s; line breaks become spaces, so that s stays inside its
// paragraph or heading. The result renders as s's text (invalid UTF-8 as U+FFFD).
func Markdown(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for i, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r < 0x80 && (Special(byte(r)) || i == 0 && strings.ContainsRune("-+=", r)):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Special reports whether Markdown escapes c wherever it is.
func Special(c byte) bool { return strings.IndexByte("\\`*_[]()<>#!|~&{}", c) >= 0 }

// isPunct reports whether c is ASCII punctuation, which CommonMark lets a backslash escape.
func isPunct(c byte) bool {
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')
}

// CodeSpan renders s as a Markdown code span: delimited by one more backtick than the longest
// run of backticks in s, padded with a space when s starts or ends with a backtick, starts and
// ends with a space, or is all spaces or empty; line breaks made spaces. Inside a code span nothing else is interpreted.
func CodeSpan(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	spaced := strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") // CommonMark strips one of each
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.Trim(s, " ") == "" || spaced {
		s = " " + s + " "
	}
	return fence + s + fence
}

// grafanaVariable matches what Grafana's template service substitutes (its variable regexp):
// $name, [[name]] or [[name:format]], and ${name}, ${name.field} or ${name:format}.
var grafanaVariable = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// GrafanaVariable returns the first Grafana variable syntax in s ("" for none): text Grafana
// would replace in a query or a title. A lone $ (a regular expression's end anchor before a
// quote or a parenthesis) and single brackets are not variable syntax.
func GrafanaVariable(s string) string {
	if !strings.ContainsAny(s, "$[") {
		return ""
	}
	return grafanaVariable.FindString(s)
}
