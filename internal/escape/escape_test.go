package escape

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// markers are hostile strings around the marker MARK: what a title prefix or an SLO id could
// hold to inject Markdown or HTML into a runbook.
var markers = []string{
	"# MARK", "**MARK**", "_MARK_", "<b>MARK</b>", "<script>MARK</script>", "[MARK](javascript:alert(1))",
	"![MARK](x)", "<javascript:MARK>", "`MARK`", "``MARK``", "MARK\n# heading", "| MARK |", "- MARK", "1. MARK",
	"&lt;MARK&gt;", "\\*MARK\\*", "MARK\\", "~~MARK~~", "[MARK]: http://x",
}

// unescapeMarkdown undoes Markdown's backslash escapes of ASCII punctuation.
func unescapeMarkdown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// checkMarkdown: every ASCII punctuation character of the output is escaped, the output is one
// line, and it unescapes to the input (line breaks as spaces).
func checkMarkdown(t *testing.T, s string) {
	out := Markdown(s)
	if strings.ContainsAny(out, "\n\r\u2028\u2029") {
		t.Fatalf("Markdown(%q) = %q: a line break", s, out)
	}
	for i := 0; i < len(out); i++ {
		if out[i] == '\\' && i+1 < len(out) && isPunct(out[i+1]) {
			i++
			continue
		}
		if Special(out[i]) || i == 0 && strings.ContainsRune("-+=", rune(out[i])) {
			t.Fatalf("Markdown(%q) = %q: %q at %d is not escaped", s, out, out[i], i)
		}
	}
	want := strings.NewReplacer("\n", " ", "\r", " ", "\u2028", " ", "\u2029", " ").Replace(s)
	if got := unescapeMarkdown(out); got != want && utf8.ValidString(s) {
		t.Fatalf("Markdown(%q) = %q, which reads %q", s, out, got)
	}
	for _, bad := range []string{"<b>", "**", "](", "<script", "`"} {
		if strings.Contains(strings.ReplaceAll(out, "\\"+bad[:1], "\\"), bad) {
			t.Fatalf("Markdown(%q) = %q holds %q unescaped", s, out, bad)
		}
	}
}

func FuzzMarkdown(f *testing.F) {
	for _, m := range markers {
		f.Add(m)
	}
	f.Fuzz(checkMarkdown)
}

func TestMarkdownEscapesEveryMarker(t *testing.T) {
	for _, m := range markers {
		checkMarkdown(t, m)
		if !strings.Contains(Markdown(m), "MARK") {
			t.Fatalf("Markdown(%q) lost the text", m)
		}
	}
	if got := Markdown("<b>x</b> [l](javascript:y) a-b"); got != `\<b\>x\</b\> \[l\]\(javascript:y\) a-b` {
		t.Fatalf("Markdown = %q", got)
	}
}

// checkCodeSpan: the span's fence is longer than any backtick run inside, and its content is
// the input (line breaks as spaces, padded by one space where CommonMark strips one).
func checkCodeSpan(t *testing.T, s string) {
	out := CodeSpan(s)
	n := len(out) - len(strings.TrimLeft(out, "`"))
	fence := strings.Repeat("`", n)
	if n == 0 || !strings.HasSuffix(out, fence) || len(out) < 2*n {
		t.Fatalf("CodeSpan(%q) = %q: not fenced", s, out)
	}
	inner := out[n : len(out)-n]
	if strings.Contains(inner, fence) || strings.HasSuffix(inner, "`") || strings.HasPrefix(inner, "`") {
		t.Fatalf("CodeSpan(%q) = %q: the content can close the span", s, out)
	}
	if strings.ContainsAny(inner, "\n\r") {
		t.Fatalf("CodeSpan(%q) = %q: a line break", s, out)
	}
	// CommonMark strips one space on both sides when both are there and the content is not
	// all spaces.
	if len(inner) >= 2 && inner[0] == ' ' && inner[len(inner)-1] == ' ' && strings.Trim(inner, " ") != "" {
		inner = inner[1 : len(inner)-1]
	}
	want := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if inner != want && !(strings.Trim(want, " ") == "" && strings.TrimSpace(inner) == "") {
		t.Fatalf("CodeSpan(%q) = %q, which reads %q", s, out, inner)
	}
}

func FuzzCodeSpan(f *testing.F) {
	for _, m := range append(markers, "", " ", "`", "a``b", "```", "` MARK `") {
		f.Add(m)
	}
	f.Fuzz(checkCodeSpan)
}

// grafanaInterpolates is Grafana's template service's variable regexp (public/app/features/
// templating/template_srv: variableRegex), the syntax it substitutes.
var grafanaInterpolates = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// grafanaMarkers are values that Grafana would substitute, around the marker MARK.
var grafanaMarkers = []string{"$MARK", "${MARK}", "${__user.login}", "[[MARK]]", "[[MARK:csv]]", "${MARK:regex}", "a$MARK_b", "x${__from:date}"}

// FuzzGrafanaVariable: what GrafanaVariable accepts, Grafana leaves alone, also inside the
// PromQL string it is rendered into; and every marker is found.
func FuzzGrafanaVariable(f *testing.F) {
	for _, m := range append(grafanaMarkers, "pay$", "a$|b", "^(x)$", "[x]", "$", "${", "[[", "a[[b]") {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, s string) {
		found := GrafanaVariable(s)
		q := `name=~"` + s + `"`
		if found == "" && grafanaInterpolates.MatchString(q) {
			t.Fatalf("GrafanaVariable(%q) found nothing, Grafana substitutes %q in %s", s, grafanaInterpolates.FindString(q), q)
		}
		if found != "" && !strings.Contains(s, found) {
			t.Fatalf("GrafanaVariable(%q) = %q, not in the input", s, found)
		}
		if strings.Contains(s, "$MARK") && found == "" {
			t.Fatalf("GrafanaVariable(%q) missed $MARK", s)
		}
	})
}

func TestGrafanaVariableFindsEveryMarker(t *testing.T) {
	for _, m := range grafanaMarkers {
		if GrafanaVariable(m) == "" {
			t.Errorf("GrafanaVariable(%q) found nothing", m)
		}
	}
	for _, ok := range []string{"pay$", "a$|b", "^(x)$", "[x]", "$", "${", "[[", "a[[b]", "payments", "é$"} {
		if v := GrafanaVariable(ok); v != "" {
			t.Errorf("GrafanaVariable(%q) = %q", ok, v)
		}
	}
}
