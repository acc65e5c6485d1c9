package simlab

import (
	"os/exec"
	"strings"
	"testing"
)

// shared are the packages under simlab that sit below the device packages:
// what emulators share, and the pure models. Every other package under
// simlab is a device package (an emulator, named after its driver's
// package).
var shared = map[string]bool{
	"testbed/simlab/world":         true,
	"testbed/simlab/wire":          true,
	"testbed/simlab/wire/scpi":     true,
	"testbed/simlab/phy":           true,
	"testbed/simlab/physics":       true,
	"testbed/simlab/lgmodel":       true,
	"testbed/simlab/fctmodel":      true,
	"testbed/simlab/reactormodel":  true,
	"testbed/simlab/stardustmodel": true,
	"testbed/simlab/ecmpmodel":     true,
	"testbed/simlab/tcpmodel":      true,
	"testbed/simlab/scenario":      true,

	// The models' event queue.
	"testbed/simlab/internal/evheap": true,
}

// The layering of the simulated lab, as go list sees it (tests aside):
// a device package depends neither on the root nor on another device
// package, the shared packages on no device package, and nothing under
// simlab on a recipe. Only the root wires devices together.
func TestSimlabImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "testbed/simlab/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, deps := f[0], f[1:]
		pkgs++
		device := pkg != "testbed/simlab" && !shared[pkg]
		for _, d := range deps {
			switch {
			case d == "testbed/experiments" || strings.HasPrefix(d, "testbed/experiments/"):
				t.Errorf("%s depends on the recipe package %s: nothing under simlab may", pkg, d)
			case d == "testbed/simlab" && pkg != d:
				t.Errorf("%s depends on the simlab root: only the root wires devices together", pkg)
			case strings.HasPrefix(d, "testbed/simlab/") && !shared[d] && (device || shared[pkg]):
				t.Errorf("%s depends on the device package %s: device packages meet only in the simlab root", pkg, d)
			}
		}
	}
	if pkgs < len(shared)+2 {
		t.Fatalf("go list found %d packages under simlab:\n%s", pkgs, out)
	}
}
