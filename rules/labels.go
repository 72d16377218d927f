package rules

import (
	"fmt"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/internal/selector"
)

// Label values used by the generated tests unless the selector demands others.
var defaultTestLabelValues = map[string]string{
	"job":             "checkout",
	catalog.LabelName: "payments-api",
	labelInstance:     "10.0.0.1:9464",
}

// testLabels picks a value for every aggregation label and instance that satisfies the
// selector, so the generated input series are selected by the generated rules. An empty value
// means the label is left out.
func (r *resolved) testLabels() (map[string]string, error) {
	out := map[string]string{}
	for _, l := range r.labels(true) {
		def, ok := defaultTestLabelValues[l]
		if !ok {
			def = "test"
		}
		v, err := r.pickLabelValue(l, []string{def})
		if err != nil {
			return nil, err
		}
		out[l] = v
	}
	return out, nil
}

// instanceValues picks n distinct instance values that satisfy the selector, for the tests of
// alert.
func (r *resolved) instanceValues(n int, alert string) ([]string, error) {
	out := make([]string, n)
	seen := map[string]bool{}
	for i := range n {
		v, err := r.pickLabelValue(labelInstance, []string{fmt.Sprintf("10.0.0.%d:9464", i+1)})
		if err != nil || seen[v] {
			return nil, fieldErr("selector", nil, "%s allows too few distinct instance values to generate the %s tests (%d instances)",
				r.selectorString(), alert, n)
		}
		seen[v] = true
		out[i] = v
	}
	return out, nil
}

func (r *resolved) selectorString() string {
	return "{" + r.matchers.String() + "}"
}

// pickLabelValue returns the first candidate value of label that every selector matcher on
// that label accepts. Candidates are the given defaults, then values derived from the
// matchers themselves.
func (r *resolved) pickLabelValue(label string, defaults []string) (string, error) {
	var ms []selector.Matcher
	cands := append([]string(nil), defaults...)
	for _, m := range r.matchers {
		if m.Name != label {
			continue
		}
		ms = append(ms, m)
		switch m.Type {
		case selector.MatchEqual:
			cands = append(cands, m.Value)
		case selector.MatchRegexp:
			if s, ok := sampleRegexp(m.Value); ok {
				cands = append(cands, s)
				for _, d := range defaults {
					cands = append(cands, s+d)
				}
			}
		}
	}
	for _, d := range defaults {
		cands = append(cands, d+"-x", "x-"+d)
	}
	for _, c := range cands {
		ok := true
		for _, m := range ms {
			if !m.Matches(c) {
				ok = false
				break
			}
		}
		if ok {
			return c, nil
		}
	}
	return "", fieldErr("selector", nil, "cannot generate tests: no test value for label %q satisfies the selector %s", label, r.selectorString())
}

// sampleRegexp returns a short string the (anchored) regular expression matches, when one is
// easy to construct.
func sampleRegexp(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !sampleNode(re.Simplify(), &b, 0) {
		return "", false
	}
	return b.String(), true
}

func sampleNode(re *syntax.Regexp, b *strings.Builder, depth int) bool {
	if depth > 100 {
		return false
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
		return true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for c := re.Rune[i]; c <= re.Rune[i+1] && c < re.Rune[i]+256; c++ {
				if unicode.IsLetter(c) || unicode.IsDigit(c) {
					b.WriteRune(c)
					return true
				}
			}
		}
		if len(re.Rune) > 0 {
			b.WriteRune(re.Rune[0])
			return true
		}
		return false
	case syntax.OpCapture:
		return sampleNode(re.Sub[0], b, depth+1)
	case syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpPlus:
		return sampleNode(re.Sub[0], b, depth+1)
	case syntax.OpRepeat:
		for range re.Min {
			if !sampleNode(re.Sub[0], b, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !sampleNode(s, b, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return sampleNode(re.Sub[0], b, depth+1)
	}
	return false
}

// seriesString renders a series in promtool's input notation: name{a="b", …} with labels
// sorted and empty values left out.
func seriesString(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		if v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(labels[k])
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}
