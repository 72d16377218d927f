// Package codesize measures the length of functions in Go source trees, so a test can hold
// the code to "functions short enough to read at once".
package codesize

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Func is one function or method declaration and its length in lines (end line − start line
// + 1 of the declaration, doc comment excluded).
type Func struct {
	// Key is "<slash path relative to the walked root's parent>:<name>", the name being
	// "Recv.Method" for a method, e.g. "cmd/stormwatch/internal/demo/storm.go:runStorm".
	Key   string
	Lines int
}

// Longer returns every function declared in the non-test .go files under each of roots (paths
// relative to base) whose length is over max, sorted by key. Directories named testdata and
// files ending in _test.go are skipped.
func Longer(base string, max int, roots ...string) ([]Func, error) {
	var out []Func
	fset := token.NewFileSet()
	for _, root := range roots {
		err := filepath.WalkDir(filepath.Join(base, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(base, path)
			if err != nil {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return fmt.Errorf("codesize: %w", err)
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n > max {
					out = append(out, Func{Key: filepath.ToSlash(rel) + ":" + funcName(fd), Lines: n})
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// funcName is the declaration's name, "Recv.Name" for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch r := t.(type) {
	case *ast.IndexExpr:
		t = r.X
	case *ast.IndexListExpr:
		t = r.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
