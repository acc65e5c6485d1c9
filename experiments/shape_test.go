package experiments

// Recipes are declarations and a list of steps, not long imperative
// functions: no function in experiments/ (test files aside) is longer
// than maxLines lines. Their cyclomatic complexity is held, with the rest
// of the module's, by the root's complexity test.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const maxLines = 120

// funcShape is one function's length.
type funcShape struct {
	name  string
	pos   token.Position
	lines int
}

// shapes lists the functions (and methods) declared in the non-test Go
// files below dir.
func shapes(dir string) ([]funcShape, error) {
	var out []funcShape
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			out = append(out, funcShape{name: funcName(fd), pos: start, lines: end.Line - start.Line + 1})
		}
		return nil
	})
	return out, err
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		return fmt.Sprintf("(*%s).%s", typeName(s.X), fd.Name.Name)
	}
	return fmt.Sprintf("%s.%s", typeName(t), fd.Name.Name)
}

func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	}
	return "?"
}

func TestRecipeFunctionsStayShort(t *testing.T) {
	fs, err := shapes(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) < 100 {
		t.Fatalf("found only %d functions below experiments/: is the walk broken?", len(fs))
	}
	for _, f := range fs {
		if f.lines > maxLines {
			t.Errorf("%s: %s is %d lines long (at most %d): split it into steps and helpers", f.pos, f.name, f.lines, maxLines)
		}
	}
}

// The length counts a function from its func line to its closing brace.
func TestShapesCountLines(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc short() {}\n\nfunc (*T) long() {\n" + strings.Repeat("\t_ = 1\n", 130) + "}\n\ntype T struct{}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := shapes(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range fs {
		got[f.name] = f.lines
	}
	if got["short"] != 1 || got["(*T).long"] != 132 {
		t.Errorf("lengths %v, want short 1 and (*T).long 132", got)
	}
}
