package simlab

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"testbed/inventory"
)

// The benches built into the binary, one inventory file each.
//
//go:embed benches/*.yaml
var benchFiles embed.FS

// BenchNames lists the built-in benches ("default", ...).
func BenchNames() []string {
	ents, _ := fs.ReadDir(benchFiles, "benches")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Bench returns the inventory file of a built-in bench.
func Bench(name string) ([]byte, error) {
	b, err := benchFiles.ReadFile(path.Join("benches", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("no built-in bench %q (there are: %s)", name, strings.Join(BenchNames(), ", "))
	}
	return b, nil
}

// DefaultInventory describes the default bench (benches/default.yaml) with
// placeholder addresses: what a dry run plans against when no lab is
// started.
func DefaultInventory() *inventory.Inventory {
	b, err := Bench("default")
	if err == nil {
		var inv *inventory.Inventory
		if inv, err = inventory.Parse("simlab/benches/default.yaml", b); err == nil {
			return inv
		}
	}
	panic(err) // the file is built into the binary and checked by a test; a failure is a bug
}
