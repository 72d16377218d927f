package instrument

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// exported lists a package's exported identifiers, as a reader of its documentation meets
// them: top-level names, methods of exported types and fields (and interface methods) of
// exported types, from the non-test files of dir.
func exported(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			names = append(names, declNames(d)...)
		}
	}
	sort.Strings(names)
	return names
}

func declNames(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
		if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
			return []string{recv + "." + d.Name.Name}
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						names = append(names, n.Name)
					}
				}
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					names = append(names, s.Name.Name)
					names = append(names, memberNames(s.Name.Name, s.Type)...)
				}
			}
		}
	}
	return names
}

// receiverType is the name of a method's receiver type: T, *T, T[P] or *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// memberNames lists the exported fields of a struct type and the methods of an interface type.
func memberNames(typ string, e ast.Expr) []string {
	var list *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return nil
	}
	var names []string
	for _, f := range list.List {
		for _, n := range f.Names {
			if n.IsExported() {
				names = append(names, typ+"."+n.Name)
			}
		}
	}
	return names
}

// The API surface of the two largest primitives stays small enough to read at once: every
// exported identifier counts (top-level names, methods and fields of exported types, non-test
// files). A new exported name is a decision; raise a ceiling only with a reason.
func TestAPISurfaceCeilings(t *testing.T) {
	for dir, ceiling := range map[string]int{"breaker": 70, "retry": 70} {
		names := exported(t, dir)
		if len(names) > ceiling {
			t.Errorf("instrument/%s exports %d identifiers, more than %d:\n%s", dir, len(names), ceiling, strings.Join(names, "\n"))
		}
	}
	// The counter counts what it should: a type, its methods and its fields.
	names := exported(t, "breaker")
	for _, want := range []string{"Breaker", "Breaker.Do", "Config", "Config.WindowSize", "Permit.Done", "New", "ErrOpen", "CountBased"} {
		if i := sort.SearchStrings(names, want); i == len(names) || names[i] != want {
			t.Errorf("the count misses breaker's %s", want)
		}
	}
}

// The protocol-free primitives know nothing of HTTP: the HTTP mapping lives in httpx (as gRPC's
// lives in grpcx), so that a program that retries a database call does not link net/http.
func TestPrimitivesDoNotImportNetHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	pkgs := []string{"./retry", "./breaker", "./bulkhead", "./timeout", "./fallback", "./classify", "./clock", "./histogram"}
	out, err := exec.Command(goBin, append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Imports}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "net/http ") {
			t.Errorf("net/http is a dependency of %v; the packages importing what leads to it:\n%s", pkgs, importers(string(out)))
			return
		}
	}
}

// importers lists the packages of a go list -deps output that import net/http itself.
func importers(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		pkg, imports, _ := strings.Cut(line, " [")
		for _, imp := range strings.Fields(strings.TrimSuffix(imports, "]")) {
			if imp == "net/http" {
				b.WriteString(pkg + "\n")
			}
		}
	}
	return b.String()
}
