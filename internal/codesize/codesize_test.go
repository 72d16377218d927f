package codesize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxLines is the longest a function in cmd/ or rules/ may be: short enough to read at once.
const maxLines = 80

// tooLong lists the functions still over maxLines, each with the length it had when listed (a
// function that shrinks may lower its entry). The list can only shrink: TestFunctionsAreShort
// fails when a listed function grows past its entry, when a function not listed is over the
// limit, and when a listed one is within it or gone (delete its line).
var tooLong = map[string]int{}

func TestFunctionsAreShort(t *testing.T) {
	long, err := Longer("../..", maxLines, "cmd", "rules")
	require.NoError(t, err)
	found := map[string]bool{}
	for _, f := range long {
		found[f.Key] = true
		allowed, ok := tooLong[f.Key]
		switch {
		case !ok:
			t.Errorf("%s is %d lines, over %d: split it into short functions", f.Key, f.Lines, maxLines)
		case f.Lines > allowed:
			t.Errorf("%s grew to %d lines (listed at %d, limit %d): shorten it", f.Key, f.Lines, allowed, maxLines)
		}
	}
	for key := range tooLong {
		if !found[key] {
			t.Errorf("%s is listed in tooLong but is now within %d lines (or gone): delete its entry", key, maxLines)
		}
	}
}

func TestLongerCountsDeclarationLines(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	body := func(n int) string { return strings.Repeat("\t_ = 0\n", n-2) }
	write("a/a.go", "package a\n\n// Doc lines do not count.\n// Nor this one.\nfunc Long() {\n"+body(5)+"}\n\nfunc short() {\n"+body(4)+"}\n\ntype T[K any] struct{}\n\nfunc (t *T[K]) Method() {\n"+body(6)+"}\n")
	write("a/a_test.go", "package a\n\nfunc TestLong() {\n"+body(50)+"}\n")
	write("a/testdata/x.go", "package x\n\nfunc Long() {\n"+body(50)+"}\n")
	write("b/b.go", "package b\n\nfunc Skipped() {\n"+body(50)+"}\n")

	got, err := Longer(dir, 4, "a")
	require.NoError(t, err)
	assert.Equal(t, []Func{{Key: "a/a.go:Long", Lines: 5}, {Key: "a/a.go:T.Method", Lines: 6}}, got)

	_, err = Longer(dir, 4, "missing")
	assert.Error(t, err)
	write("c/bad.go", "package c\nfunc {")
	_, err = Longer(dir, 4, "c")
	assert.ErrorContains(t, err, "codesize")
}
