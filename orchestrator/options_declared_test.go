package orchestrator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"testbed/drivers"
	"testbed/inventory"
)

// Every built-in bench and every inventory example in the docs (a yaml
// block with devices that name their kind and driver) carries only
// options their drivers take: unknown keys are refused, so an example
// that a lab copies must not carry one.
func TestBenchesAndDocExamplesTakeTheirOptions(t *testing.T) {
	benches, _ := filepath.Glob("../simlab/benches/*.yaml")
	for _, f := range benches {
		inv, err := inventory.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range DriverProblems(inv) {
			t.Errorf("%s: %s: %s", p.Pos, p.Field, p.Msg)
		}
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	checked := 0
	for _, f := range markdownFiles(t) {
		b, _ := os.ReadFile(f)
		for _, m := range block.FindAllSubmatch(b, -1) {
			var doc struct {
				Devices map[string]struct {
					Kind, Driver string
					Options      map[string]string
				}
			}
			if yaml.Unmarshal(m[1], &doc) != nil {
				continue
			}
			for name, d := range doc.Devices {
				dr, ok := drivers.Lookup(d.Kind, d.Driver)
				if !ok {
					continue
				}
				checked++
				for _, p := range dr.OptionProblems(d.Options) {
					t.Errorf("%s: device %s: option %s: unknown %v, expected %s", f, name, p.Key, p.Unknown, p.Expected)
				}
			}
		}
	}
	if len(benches) < 5 || checked < 5 {
		t.Fatalf("checked %d benches and %d devices of the docs' examples: the paths moved", len(benches), checked)
	}
}

func markdownFiles(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir("..", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && strings.HasPrefix(e.Name(), ".") && p != ".." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every device option key the module's code reads by name (x.Options["key"],
// c.Option("key", ...), or a constant naming it) is one some driver
// declares: a key read but not declared would be refused by the
// inventory's check in every lab that sets it. Link options (the
// inventory's own check) are left out.
func TestEveryOptionReadIsDeclared(t *testing.T) {
	declared := func(k string) bool {
		for _, kind := range drivers.Kinds() {
			for _, n := range drivers.Names(kind) {
				d, _ := drivers.Lookup(kind, n)
				if ps := d.OptionProblems(map[string]string{k: ""}); len(ps) == 0 || !ps[0].Unknown {
					return true
				}
			}
		}
		return false
	}
	links := []string{"loss_after_voa_db", "loss_before_voa_db", "fibre_length_m", "fibre_type", "data_path"}
	read := map[string]string{}
	err := filepath.WalkDir("..", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "/simlab/lgmodel/") {
			return err
		}
		for k, at := range optionKeysRead(t, p) {
			read[k] = at
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, at := range read {
		if !declared(k) && !slices.Contains(links, k) {
			t.Errorf("%s reads option %q, which no driver declares", at, k)
		}
	}
	for _, k := range []string{"serial", "known_hosts", "role", "stardust_role", "reactor", "clock_ppm", "travel_time"} {
		if read[k] == "" {
			t.Errorf("option %q not found read: the scan misses a form of read", k)
		}
	}
}

// optionKeysRead finds the option keys a Go file reads by name, with
// where.
func optionKeysRead(t *testing.T, path string) map[string]string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for i, id := range vs.Names {
				if i < len(vs.Values) {
					if s, ok := literal(vs.Values[i], nil); ok {
						consts[id.Name] = s
					}
				}
			}
		}
		return true
	})
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		var key ast.Expr
		switch x := n.(type) {
		case *ast.IndexExpr:
			if sel, ok := x.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Options" {
				key = x.Index
			}
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Option" && len(x.Args) == 2 {
				key = x.Args[0]
			}
		}
		if s, ok := literal(key, consts); ok {
			out[s] = fset.Position(n.Pos()).String()
		}
		return true
	})
	return out
}

func literal(e ast.Expr, consts map[string]string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[x.Name]
		return s, ok
	}
	return "", false
}
