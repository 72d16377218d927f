package backtest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stormwatch-go/stormwatch/rules"
)

// Recording says where the recorded series an alert reads come from.
type Recording string

// Recording modes.
const (
	// RecordingAuto reads a recorded series from the server when it holds any sample of it in
	// the range (the rules ran there), and inlines its recording rule otherwise.
	RecordingAuto Recording = "auto"
	// RecordingServer always reads the recorded series from the server.
	RecordingServer Recording = "server"
	// RecordingInline always replaces a recorded series by its recording rule's expression.
	RecordingInline Recording = "inline"
)

// inliner rewrites alert expressions so that they read the recording rules' expressions instead
// of the recorded series named in inline.
type inliner struct {
	exprs  map[string]string // recording rule name → expression
	inline map[string]bool   // the names to replace
	step   time.Duration     // the subquery resolution of a range selector over a recorded series
}

// recordedNames returns the recording rules of groups, name → expression, and their names in
// order.
func recordedNames(groups []rules.Group) (map[string]string, []string) {
	exprs := map[string]string{}
	var names []string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				exprs[r.Record] = withLabels(r.Expr, r.Labels)
				names = append(names, r.Record)
			}
		}
	}
	return exprs, names
}

// withLabels wraps a recording expression so that it carries the rule's labels, as the
// recorded series do.
func withLabels(expr string, ls map[string]string) string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		expr = fmt.Sprintf("label_replace(%s, %q, %s, \"\", \"\")", expr, k, strconv.Quote(ls[k]))
	}
	return expr
}

// references lists the recorded names of exprs that expr reads, directly or through other
// recording rules.
func references(expr string, exprs map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(string)
	walk = func(e string) {
		for name, sub := range exprs {
			if seen[name] || len(findSelectors(e, name)) == 0 {
				continue
			}
			seen[name] = true
			out = append(out, name)
			walk(sub)
		}
	}
	walk(expr)
	return out
}

// rewrite replaces every selector of an inlined recorded series in expr by its recording
// expression, recursively. A matcher of the selector that the recording expression already
// applies (the configured selector, injected everywhere) is dropped; others become set
// operations on the label (`and on (l)`, `unless on (l)`), which needs their regular
// expressions to be alternations of plain values. A range selector becomes a subquery at the
// evaluation step, and an instant selector with an offset the last point of a one-step
// subquery at that offset.
func (in inliner) rewrite(expr string) (string, error) {
	for depth := 0; depth < 10; depth++ {
		changed := false
		for name, inline := range in.inline {
			if !inline {
				continue
			}
			sels := findSelectors(expr, name)
			for i := len(sels) - 1; i >= 0; i-- {
				repl, err := in.replacement(name, sels[i])
				if err != nil {
					return "", err
				}
				expr = expr[:sels[i].start] + repl + expr[sels[i].end:]
				changed = true
			}
		}
		if !changed {
			return expr, nil
		}
	}
	return "", fmt.Errorf("recording rules nest too deep to inline")
}

// selectorRef is one selector of a recorded series in an expression: expr[start:end] is the
// name, its braces and its range, if any.
type selectorRef struct {
	start, end int
	matchers   string // inside the braces
	rangeDur   string // inside the brackets, "" for an instant selector
	offset     string // the duration of an instant selector's offset modifier, if any
}

func isNameByte(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// findSelectors finds the selectors of metric name in expr, outside string literals.
func findSelectors(expr, name string) []selectorRef {
	var out []selectorRef
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
			continue
		case !strings.HasPrefix(expr[i:], name) || (i > 0 && isNameByte(expr[i-1])):
			continue
		}
		j := i + len(name)
		if j < len(expr) && isNameByte(expr[j]) {
			continue
		}
		ref := selectorRef{start: i}
		if j < len(expr) && expr[j] == '{' {
			k := j + 1
			for k < len(expr) && expr[k] != '}' {
				if q := expr[k]; q == '"' || q == '\'' || q == '`' {
					k = skipString(expr, k)
				}
				k++
			}
			ref.matchers, j = expr[j+1:min(k, len(expr))], min(k+1, len(expr))
		}
		if j < len(expr) && expr[j] == '[' {
			k := strings.IndexByte(expr[j:], ']')
			if k > 0 {
				ref.rangeDur, j = expr[j+1:j+k], j+k+1
			}
		}
		if ref.rangeDur == "" {
			ref.offset, j = instantOffset(expr, j)
		}
		ref.end = j
		out = append(out, ref)
		i = j - 1
	}
	return out
}

// instantOffset reads the offset modifier of an instant selector ending at expr[j]: its
// duration and where it ends, or "" and j when there is none. (A range selector keeps its
// modifier after the subquery it becomes, where it is still valid.)
func instantOffset(expr string, j int) (string, int) {
	k := j
	for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
		k++
	}
	rest, ok := strings.CutPrefix(expr[k:], "offset")
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\n') {
		return "", j
	}
	k += len("offset")
	for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
		k++
	}
	e := k
	for e < len(expr) && (isNameByte(expr[e]) || expr[e] == '-') {
		e++
	}
	if e == k {
		return "", j
	}
	return expr[k:e], e
}

// skipString returns the index of the quote closing the string literal opened at expr[i].
func skipString(expr string, i int) int {
	q := expr[i]
	for k := i + 1; k < len(expr); k++ {
		if expr[k] == '\\' && q != '`' {
			k++
			continue
		}
		if expr[k] == q {
			return k
		}
	}
	return len(expr)
}

func (in inliner) replacement(name string, ref selectorRef) (string, error) {
	body := in.exprs[name]
	filters, err := matcherFilters(ref.matchers, body)
	if err != nil {
		return "", fmt.Errorf("inlining %s{%s}: %w", name, ref.matchers, err)
	}
	repl := "(" + body + ")" + filters
	if ref.rangeDur != "" {
		if strings.Contains(ref.rangeDur, ":") {
			return "", fmt.Errorf("inlining %s: a subquery over a recorded series is not supported", name)
		}
		return "(" + repl + ")[" + ref.rangeDur + ":" + rules.FormatDuration(in.step) + "]", nil
	}
	if ref.offset != "" {
		// `(expr) offset d` is no PromQL: an offset needs a selector or a subquery. The last
		// point of a one-step subquery so offset is the recorded sample the selector read.
		step := rules.FormatDuration(in.step)
		return "last_over_time((" + repl + ")[" + step + ":" + step + "] offset " + ref.offset + ")", nil
	}
	return "(" + repl + ")", nil
}

// matcherFilters turns the matchers of a selector into set operations, dropping those the
// recording expression body already applies.
func matcherFilters(matchers, body string) (string, error) {
	var out strings.Builder
	for _, m := range splitMatchers(matchers) {
		if m == "" || strings.Contains(body, m) {
			continue
		}
		l, op, v, err := parseMatcher(m)
		if err != nil {
			return "", err
		}
		values := []string{v}
		if op == "=~" || op == "!~" {
			values = strings.Split(v, "|")
			for _, p := range values {
				if p == "" || strings.ContainsAny(p, `.*+?()[]{}^$\`) {
					return "", fmt.Errorf("matcher %s: only alternations of plain values can be inlined", m)
				}
			}
		} else if v == "" {
			return "", fmt.Errorf("matcher %s: an empty value cannot be inlined", m)
		}
		vecs := make([]string, len(values))
		for i, p := range values {
			vecs[i] = fmt.Sprintf("label_replace(vector(1), %q, %s, \"\", \"\")", l, strconv.Quote(p))
		}
		setOp := " and on (" + l + ") "
		if op == "!=" || op == "!~" {
			setOp = " unless on (" + l + ") "
		}
		out.WriteString(setOp + "(" + strings.Join(vecs, " or ") + ")")
	}
	return out.String(), nil
}

// splitMatchers splits a matcher list at the commas outside string literals, trimmed.
func splitMatchers(s string) []string {
	var out []string
	last := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'', '`':
			i = skipString(s, i)
		case ',':
			out = append(out, strings.TrimSpace(s[last:i]))
			last = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[last:]))
}

// parseMatcher splits `label op "value"`.
func parseMatcher(m string) (label, op, value string, err error) {
	i := strings.IndexAny(m, "=!")
	if i <= 0 {
		return "", "", "", fmt.Errorf("matcher %q: no operator", m)
	}
	label = strings.TrimSpace(m[:i])
	rest := m[i:]
	for _, o := range []string{"=~", "!~", "!=", "="} {
		if strings.HasPrefix(rest, o) {
			op, rest = o, strings.TrimSpace(rest[len(o):])
			break
		}
	}
	value, err = strconv.Unquote(rest)
	if op == "" || err != nil {
		return "", "", "", fmt.Errorf("matcher %q: cannot parse", m)
	}
	return label, op, value, nil
}
