package experiments

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// driverTypes are the driver packages' concrete device types: a recipe
// reaches a switch through the switch kind's interfaces (dut/p4switch) and
// a host through the host kind's (dut/host's Settings, AgentRunner, ...),
// never through a driver's own type, so another vendor's driver serves it.
var driverTypes = map[string][]string{
	"testbed/dut/tofino": {"Switch"},
	"testbed/dut/host":   {"Host"},
}

// No recipe (non-test file under experiments/) names a driver's concrete
// device type: not *tofino.Switch, tofino.Switch, *host.Host nor any
// pointer to a type of a driver package, found in the syntax tree
// whatever the import is named.
func TestRecipesNameNoDriversType(t *testing.T) {
	fset := token.NewFileSet()
	found := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := map[string]string{} // import name -> path, for driver packages
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if _, ok := driverTypes[p]; !ok {
				continue
			}
			name := filepath.Base(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				if star, ok := n.(*ast.StarExpr); ok {
					if sel, ok := star.X.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && local[id.Name] != "" {
							found[path] = append(found[path], fset.Position(star.Pos()).String()+": *"+id.Name+"."+sel.Sel.Name)
						}
					}
				}
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(driverTypes[local[id.Name]], sel.Sel.Name) {
				found[path] = append(found[path], fset.Position(sel.Pos()).String()+": "+id.Name+"."+sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, uses := range found {
		t.Errorf("%s names a driver's concrete type (use the kind's interfaces, orchestrator.As):\n  %s", path, strings.Join(uses, "\n  "))
	}
}
