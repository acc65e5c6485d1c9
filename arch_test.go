package testbed

// The architecture test: DESIGN.md's layer table ("Layers (top-level
// folders)") and its rules of the house on imports, held over every
// package of the module. Only the imports of the packages themselves
// count, not their tests': a driver's test starts the emulator, a recipe's
// test the simulated lab.

import (
	"errors"
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "testbed"

// layer is a row of the table: what a top-level folder's packages may
// import of ours besides their own folder and internal/. Entries are
// module-relative paths; an entry covers the packages below it.
type layer struct {
	any bool // may import everything (a CLI that wires the layers)
	may []string
}

// kinds are the kinds' interface packages that the engine and the recipes
// may use: for instruments one package per kind with its interface and its
// drivers' files; for devices under test the switch kind and the host kind.
// A driver-only package (dut/tofino and its subpackages) is none of them.
var kinds = []string{"instruments/voa", "instruments/ocs", "instruments/trafficgen", "dut/p4switch", "dut/host", "dut/fabric"}

// layers is DESIGN.md's table. Two places where it differs from DESIGN's
// text, on purpose:
//   - experiments may import inventory: a recipe's bindings hand it the
//     lab's links and device entries, which are inventory's types (a leaf
//     that imports nothing of ours); wrapping them in the orchestrator would
//     only re-export them.
//   - scripts/ (development programs: the soak's checker) and drivers/ (the
//     driver registry) have no row in DESIGN; scripts are CLIs like cmd/,
//     and the registry sits beside transport, below the drivers that
//     register in it.
var layers = map[string]layer{
	"cmd":          {any: true},
	"scripts":      {any: true},
	"serve":        {may: []string{"orchestrator", "results", "inventory"}},
	"orchestrator": {may: append([]string{"inventory", "results", "transport", "drivers"}, kinds...)},
	"experiments":  {may: append([]string{"orchestrator", "p4", "results", "inventory"}, kinds...)},
	"instruments":  {may: []string{"transport", "drivers"}},
	"dut":          {may: []string{"transport", "p4", "hostagent", "drivers"}},
	"p4":           {may: []string{"dut/p4switch"}},
	"drivers":      {may: []string{"transport"}},
	"hostagent":    {},
	"results":      {},
	"inventory":    {},
	"transport":    {},
	"internal":     {},
	"simlab":       {may: []string{"inventory", "p4", "hostagent"}},
}

// exceptions are packages allowed more than their folder's row, and why.
var exceptions = map[string][]string{
	// The list of every driver of the build, which cmd/testbed imports so
	// that each registers itself: wiring, as cmd/ does.
	"drivers/all": {"dut", "instruments"},
	// Starts the simulated lab for the recipes' tests; only tests import
	// it (checked below).
	"experiments/recipetest": {"simlab"},
}

// pending are imports the table forbids that are still in the code, each
// with the work that removes it. The test logs one that has gone so the
// entry can be dropped; it fails on any forbidden import not listed here.
var pending = []struct{ from, to, why string }{
	{"experiments", "hostagent", "issue 29 items 1-2: recipes reach hosts' agents through the host kind's interfaces"},
}

// simlabShared are the packages under simlab below its device packages:
// what the emulators share, and the pure models. Every other package under
// simlab is a device package (an emulator, named after its driver's
// package) or one of its subpackages.
var simlabShared = []string{
	"simlab/world", "simlab/wire", "simlab/internal",
	"simlab/phy", "simlab/physics", "simlab/lgmodel", "simlab/fctmodel", "simlab/tcpmodel",
	"simlab/reactormodel", "simlab/stardustmodel", "simlab/ecmpmodel", "simlab/scenario",
}

// under reports whether path is dir or below it.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

func underAny(path string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return under(path, d) })
}

func top(path string) string { t, _, _ := strings.Cut(path, "/"); return t }

// simlabDevice is the device package path belongs to ("simlab/tofino" for
// simlab/tofino/x), "" for the root and the shared packages.
func simlabDevice(path string) string {
	if !under(path, "simlab") || path == "simlab" || underAny(path, simlabShared) {
		return ""
	}
	p := strings.Split(path, "/")
	return p[0] + "/" + p[1]
}

// pkg is a package of the module: its module-relative path and, for each
// import of ours, the file that makes it.
type pkg struct {
	path    string
	imports map[string]string // import (module-relative) -> file
}

// checkImport returns why from may not import to, or "" when it may. The
// rules, in DESIGN's words where it has them:
//   - every top-level folder has a row, and a package imports its own
//     folder, internal/ (leaves every layer may use) and its row's entries;
//   - inside simlab, a device package never imports the root or a sibling
//     device package, and the shared packages import no device package;
//   - drivers and emulators never import each other, a recipe never
//     imports simlab: both follow from the rows (dut, instruments and
//     experiments have no simlab entry, simlab no dut or instruments).
func checkImport(from, to string) string {
	ft, tt := top(from), top(to)
	l, ok := layers[ft]
	if !ok {
		return fmt.Sprintf("the top-level folder %s/ has no row in the layer table (DESIGN.md, Layers; arch_test.go's layers)", ft)
	}
	if tt == "internal" && ft != "internal" {
		// internal/'s leaves are open to every layer, except a leaf of
		// another folder's internal/ (Go itself refuses those).
		return ""
	}
	if ft == "simlab" && tt == "simlab" {
		switch fd, td := simlabDevice(from), simlabDevice(to); {
		case to == "simlab" && from != "simlab":
			return "inside simlab, only the root (lab.go) wires devices together: no package imports it"
		case fd != "" && td != "" && fd != td:
			return fmt.Sprintf("inside simlab, a device package never imports a sibling device package (%s is one)", td)
		case fd == "" && from != "simlab" && td != "":
			return fmt.Sprintf("simlab's shared packages and models sit below the device packages: %s is one", td)
		}
		return ""
	}
	if ft == tt || l.any || underAny(to, l.may) || underAny(to, exceptions[from]) {
		return ""
	}
	may := append([]string{ft, "internal"}, l.may...)
	return fmt.Sprintf("%s/ may import only %s (DESIGN.md, Layers)", ft, strings.Join(may, ", "))
}

// loadPackages reads the imports of every package of the module under root
// (build constraints as go build sees them; tests, testdata and hidden
// folders left out).
func loadPackages(root string) ([]pkg, error) {
	var out []pkg
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if dir != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		bp, err := build.Default.ImportDir(dir, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		rel, _ := filepath.Rel(root, dir)
		p := pkg{path: filepath.ToSlash(rel), imports: map[string]string{}}
		for _, name := range append(slices.Clone(bp.GoFiles), bp.CgoFiles...) {
			file := filepath.Join(dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, is := range f.Imports {
				imp, _ := strconv.Unquote(is.Path.Value)
				if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
					if _, seen := p.imports[rest]; !seen {
						p.imports[rest] = filepath.ToSlash(filepath.Join(p.path, name))
					}
				}
			}
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

func isPending(from, to string) bool {
	return slices.ContainsFunc(pending, func(e struct{ from, to, why string }) bool {
		return under(from, e.from) && under(to, e.to)
	})
}

// violations are the forbidden imports of pkgs, one line each, and the
// pending entries that matched nothing.
func violations(pkgs []pkg) (bad []string, gone []string) {
	used := make([]bool, len(pending))
	for _, p := range pkgs {
		for to, file := range p.imports {
			why := checkImport(p.path, to)
			if why == "" {
				continue
			}
			if i := slices.IndexFunc(pending, func(e struct{ from, to, why string }) bool {
				return under(p.path, e.from) && under(to, e.to)
			}); i >= 0 {
				used[i] = true
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: %s imports %s/%s: %s", file, p.path, module, to, why))
		}
		// Only tests may use the recipes' test helper that starts the
		// simulated lab.
		if file, ok := p.imports["experiments/recipetest"]; ok {
			bad = append(bad, fmt.Sprintf("%s: %s imports %s/experiments/recipetest: only tests may (it starts the simulated lab)", file, p.path, module))
		}
	}
	for i, e := range pending {
		if !used[i] {
			gone = append(gone, fmt.Sprintf("%s -> %s (%s)", e.from, e.to, e.why))
		}
	}
	sort.Strings(bad)
	return bad, gone
}

// driverPackages hold a driver's files: the instruments' kind packages
// (interface and drivers in one), the Tofino and Linux host drivers.
var driverPackages = []string{"instruments", "dut/tofino", "dut/host", "dut/fabric"}

// transitive holds the rules of the house that are about what a package
// depends on at all, through any chain of imports the rows allow: a
// recipe never depends on simlab, a driver never on an emulator, an
// emulator never on a driver.
func transitive(pkgs []pkg) []string {
	graph := map[string][]string{}
	for _, p := range pkgs {
		for to := range p.imports {
			graph[p.path] = append(graph[p.path], to)
		}
	}
	var bad []string
	for _, p := range pkgs {
		var rule string
		var forbidden func(string) bool
		switch {
		case under(p.path, "experiments") && p.path != "experiments/recipetest":
			rule, forbidden = "a recipe never depends on simlab", func(d string) bool { return under(d, "simlab") }
		case underAny(p.path, driverPackages):
			rule, forbidden = "a driver never depends on an emulator", func(d string) bool { return under(d, "simlab") }
		case under(p.path, "simlab"):
			rule, forbidden = "an emulator never depends on a driver", func(d string) bool { return underAny(d, driverPackages) }
		default:
			continue
		}
		// Breadth first, keeping the chain that reached each package.
		via := map[string]string{p.path: ""}
		queue := []string{p.path}
		for len(queue) > 0 {
			at := queue[0]
			queue = queue[1:]
			for _, next := range graph[at] {
				if _, seen := via[next]; seen || isPending(at, next) {
					continue // a pending import is reported by violations alone
				}
				via[next] = at
				if forbidden(next) {
					chain := []string{next}
					for c := at; c != ""; c = via[c] {
						chain = append([]string{c}, chain...)
					}
					bad = append(bad, fmt.Sprintf("%s depends on %s (%s): %s (DESIGN.md, rules of the house)", p.path, next, strings.Join(chain, " -> "), rule))
					continue // one report per way in, not one per package behind it
				}
				queue = append(queue, next)
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func TestLayerTable(t *testing.T) {
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := loadPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]bool{}
	for _, p := range pkgs {
		folders[top(p.path)] = true
	}
	// A sanity check on the walk itself: every layer that has Go code today.
	for _, want := range []string{"cmd", "orchestrator", "experiments", "instruments", "dut", "p4", "hostagent", "results", "inventory", "transport", "simlab", "internal"} {
		if !folders[want] {
			t.Fatalf("found no package under %s/: the walk of %s is broken", want, root)
		}
	}
	bad, gone := violations(pkgs)
	bad = append(bad, transitive(pkgs)...)
	for _, b := range bad {
		t.Error(b)
	}
	for _, g := range gone {
		t.Logf("a pending exception matches no import any more; drop it from arch_test.go: %s", g)
	}
}

// The rules catch what they are meant to: a forbidden import of each kind,
// added to the module's real packages, is reported with its file.
func TestLayerTableCatchesForbiddenImports(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"instruments/voa", "simlab/voa", "instruments/ may import only"},
		{"simlab/voa", "instruments/voa", "simlab/ may import only"},
		{"dut/tofino", "simlab/tofino", "dut/ may import only"},
		{"experiments/fct", "simlab", "experiments/ may import only"},
		{"experiments/fct", "simlab/fctmodel", "experiments/ may import only"},
		{"experiments/fct", "transport", "experiments/ may import only"},
		{"orchestrator", "experiments", "orchestrator/ may import only"},
		{"p4/linkguardian", "dut/tofino", "p4/ may import only"},
		{"transport", "inventory", "transport/ may import only"},
		{"results", "orchestrator", "results/ may import only"},
		{"simlab/tofino", "simlab/host", "sibling device package (simlab/host is one)"},
		{"simlab/tofino", "simlab", "only the root (lab.go) wires devices together"},
		{"simlab/lgmodel", "simlab/tofino", "below the device packages: simlab/tofino is one"},
		{"internal/sched", "instruments/ocs", "internal/ may import only"},
		{"newfolder/x", "transport", "the top-level folder newfolder/ has no row"},
	} {
		pkgs := []pkg{{path: c.from, imports: map[string]string{c.to: c.from + "/x.go"}}}
		bad, _ := violations(pkgs)
		if len(bad) != 1 || !strings.Contains(bad[0], c.want) || !strings.HasPrefix(bad[0], c.from+"/x.go: ") {
			t.Errorf("%s importing %s: %q, want one violation saying %q", c.from, c.to, bad, c.want)
		}
	}
	// And what the table allows passes.
	for _, c := range [][2]string{
		{"cmd/testbed", "simlab"}, {"experiments/fct", "orchestrator"}, {"experiments/reactor", "internal/sched"},
		{"simlab/reactor", "internal/sched"}, {"instruments/ocs", "internal/sched"}, {"simlab/tofino", "simlab/wire/scpi"},
		{"simlab", "simlab/tofino"}, {"simlab/tofino/x", "simlab/tofino"}, {"dut/tofino", "p4/linkguardian"},
		{"experiments/recipetest", "simlab"}, {"p4/stardust", "dut/p4switch"},
	} {
		if why := checkImport(c[0], c[1]); why != "" {
			t.Errorf("%s importing %s: %s", c[0], c[1], why)
		}
	}
	// A chain the rows allow one link at a time still may not carry a
	// driver into an emulator.
	chain := []pkg{
		{path: "simlab/tofino", imports: map[string]string{"p4/linkguardian": "simlab/tofino/x.go"}},
		{path: "p4/linkguardian", imports: map[string]string{"dut/p4switch": "p4/linkguardian/x.go"}},
		{path: "dut/p4switch", imports: map[string]string{"dut/tofino": "dut/p4switch/x.go"}},
	}
	if bad := transitive(chain); len(bad) != 1 || !strings.Contains(bad[0], "simlab/tofino -> p4/linkguardian -> dut/p4switch -> dut/tofino): an emulator never depends on a driver") {
		t.Errorf("a driver reached through allowed links: %q", bad)
	}
	if bad, _ := violations([]pkg{{path: "experiments/fct", imports: map[string]string{"experiments/recipetest": "experiments/fct/fct.go"}}}); len(bad) != 1 {
		t.Errorf("a recipe importing recipetest outside its tests: %q", bad)
	}
}
