package instrument

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/catalog"
)

// The metric vocabulary — label values, primitive names, the overflow name and histogram bucket
// bounds — is written once, in catalog. The instrument packages import it; they must
// not spell any of it themselves, or the two copies drift apart. This test parses every non-test
// Go file under instrument/ and fails on
//
//   - a string literal (in a constant, a variable, a call, anywhere) equal to a catalog label
//     value, a primitive name or the overflow name;
//   - a list of numbers (a composite literal) holding two or more catalog bucket bounds, in
//     seconds or as time.Duration expressions (5 * time.Millisecond): that is a bucket layout.
//
// A lone number equal to a bound (a 0.5 threshold, a one-second default) is not a bucket layout
// and is not reported. Strings that equal a vocabulary word without being one are listed in
// vocabularyAllowed, each with the reason.

// vocabularyAllowed maps "dir/file.go: value" to why the string is not vocabulary.
var vocabularyAllowed = map[string]string{
	"breaker/config.go: consecutive_failures": "the ConsecutiveFailures WindowKind value, a configuration " +
		"word; it equals the trip cause consecutive_failures by design but is not a label value",
	"breaker/transition.go: disabled": "the free-text Reason of the transition Disable() records, not a label value",
}

// vocabularyWords returns every word of the catalog's vocabulary and what it is.
func vocabularyWords() map[string]string {
	words := map[string]string{}
	add := func(kind string, names []string) {
		for _, n := range names {
			if prev := words[n]; prev != "" {
				words[n] = prev + " and a " + kind
				continue
			}
			words[n] = kind
		}
	}
	add("state", catalog.Names(catalog.States[:]))
	add("breaker call kind", catalog.Names(catalog.CallKinds[:]))
	add("trip cause", catalog.Names(catalog.TripCauses[:]))
	add("retry call kind", catalog.Names(catalog.RetryKinds[:]))
	add("retry outcome", catalog.Names(catalog.Outcomes[:]))
	add("failure class", catalog.Names(catalog.Classes[:]))
	add("delay source", catalog.Names(catalog.DelaySources[:]))
	add("bulkhead admission", catalog.Names(catalog.Admissions[:]))
	add("timeout kind", catalog.Names(catalog.TimeoutKinds[:]))
	add("fallback cause", catalog.Names(catalog.Causes[:]))
	for _, p := range append(append([]catalog.Primitive(nil), catalog.Primitives...), catalog.Registry) {
		words[string(p)] = "primitive name"
	}
	words[catalog.OverflowName] = "overflow name"
	return words
}

// bucketBounds returns every classic bucket bound of the catalog, in seconds.
func bucketBounds() map[float64]bool {
	out := map[float64]bool{}
	for _, bs := range [][]float64{catalog.DurationBuckets, catalog.BackoffBuckets, catalog.WaitBuckets} {
		for _, b := range bs {
			out[b] = true
		}
	}
	return out
}

// durationUnits are the time package's units, in seconds.
var durationUnits = map[string]float64{
	"Nanosecond": float64(time.Nanosecond) / 1e9, "Microsecond": float64(time.Microsecond) / 1e9,
	"Millisecond": float64(time.Millisecond) / 1e9, "Second": 1, "Minute": 60, "Hour": 3600,
}

// seconds evaluates a numeric literal or a simple duration expression (2500 * time.Millisecond,
// time.Second, 2 * time.Second) to seconds.
func seconds(e ast.Expr) (float64, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT && e.Kind != token.FLOAT {
			return 0, false
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(e.Value, "_", ""), 64)
		return v, err == nil
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" {
			v, ok := durationUnits[e.Sel.Name]
			return v, ok
		}
	case *ast.ParenExpr:
		return seconds(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.MUL {
			return 0, false
		}
		a, okA := seconds(e.X)
		b, okB := seconds(e.Y)
		return a * b, okA && okB
	}
	return 0, false
}

// vocabularyFinding is one spelling of the vocabulary outside the catalog.
type vocabularyFinding struct {
	pos  token.Position
	key  string // "dir/file.go: value", the allow-list key
	what string
}

// scanVocabulary reports the vocabulary written in the Go source src of file rel.
func scanVocabulary(fset *token.FileSet, rel string, src any, words map[string]string, bounds map[float64]bool) ([]vocabularyFinding, error) {
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	tags := map[*ast.BasicLit]bool{} // struct tags are not vocabulary
	ast.Inspect(f, func(n ast.Node) bool {
		if fld, ok := n.(*ast.Field); ok && fld.Tag != nil {
			tags[fld.Tag] = true
		}
		return true
	})
	var out []vocabularyFinding
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false // import paths
		case *ast.BasicLit:
			if n.Kind != token.STRING || tags[n] {
				return true
			}
			v, err := strconv.Unquote(n.Value)
			if err != nil {
				return true
			}
			if kind, ok := words[v]; ok {
				out = append(out, vocabularyFinding{fset.Position(n.Pos()), rel + ": " + v,
					fmt.Sprintf("%q is a %s: use its catalog constant", v, kind)})
			}
		case *ast.CompositeLit:
			var hits []string
			for _, elt := range n.Elts {
				if kv, ok := elt.(*ast.KeyValueExpr); ok {
					elt = kv.Value
				}
				if s, ok := seconds(elt); ok && bounds[s] && !math.IsInf(s, 0) {
					hits = append(hits, strconv.FormatFloat(s, 'g', -1, 64))
				}
			}
			if len(hits) >= 2 {
				out = append(out, vocabularyFinding{fset.Position(n.Pos()), rel + ": " + strings.Join(hits, ","),
					fmt.Sprintf("a list holding the catalog bucket bounds %v s: use catalog.DurationBuckets, BackoffBuckets or WaitBuckets", hits)})
			}
		}
		return true
	})
	return out, nil
}

func TestNoVocabularyOutsideTheCatalog(t *testing.T) {
	words, bounds := vocabularyWords(), bucketBounds()
	fset := token.NewFileSet()
	used := map[string]bool{}
	var findings []string
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		files++
		rel := filepath.ToSlash(path)
		found, err := scanVocabulary(fset, rel, nil, words, bounds)
		if err != nil {
			return err
		}
		for _, f := range found {
			if _, ok := vocabularyAllowed[f.key]; ok {
				used[f.key] = true
				continue
			}
			findings = append(findings, fmt.Sprintf("%s: %s", f.pos, f.what))
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 20, "the scan sees the instrument packages")
	sort.Strings(findings)
	assert.Empty(t, findings, "vocabulary written outside catalog")
	for key := range vocabularyAllowed {
		assert.True(t, used[key], "allow-list entry %q matches nothing: remove it", key)
	}
}

func TestVocabularyScanFindsDuplicates(t *testing.T) {
	// The scanner itself: every form of duplicate it must catch, and what it must leave alone.
	src := `package breaker

import "time"

const halfOpen = "half_open"

type Kind string

const KindRetry Kind = "retry"

var overflow = "_overflow"

var bounds = []float64{.001, .005, .01, .25, .5, 1}

var durations = [3]time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}

var named = map[string]float64{"a": 0.25, "b": 2}

func f() string { return fmtError("timeout") }

func fmtError(s string) string { return s }

// Not vocabulary: a lone threshold, a one-second default, words that only contain a label value.
const threshold, limit = 0.5, time.Second

var msg = "retry %q: gave up"
`
	found, err := scanVocabulary(token.NewFileSet(), "breaker/x.go", src, vocabularyWords(), bucketBounds())
	require.NoError(t, err)
	var keys []string
	for _, f := range found {
		keys = append(keys, f.key)
	}
	assert.Equal(t, []string{
		"breaker/x.go: half_open",
		"breaker/x.go: retry",
		"breaker/x.go: _overflow",
		"breaker/x.go: 0.25,0.5,1",
		"breaker/x.go: 0.25,0.5,1",
		"breaker/x.go: 0.25,2",
		"breaker/x.go: timeout",
	}, keys)
}
