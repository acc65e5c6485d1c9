package simlab

import (
	"fmt"

	"testbed/inventory"
)

// BenchInventory describes a built-in bench with its placeholder
// addresses: what a run plans against before its lab is started.
func BenchInventory(name string) (*inventory.Inventory, error) {
	if name == "" || name == "default" {
		return DefaultInventory(), nil
	}
	b, err := Bench(name)
	if err != nil {
		return nil, err
	}
	return inventory.Parse("simlab/benches/"+name+".yaml", b)
}

// StartBench starts a built-in bench (benches/<name>.yaml) as a twin;
// "default" is StartDefault. Every device of a built-in bench has an
// emulator: one left out is an error.
func StartBench(name string, opts Options) (*Lab, error) {
	if name == "" || name == "default" {
		return StartDefault(opts)
	}
	inv, err := BenchInventory(name)
	if err != nil {
		return nil, err
	}
	lab, skipped, err := StartTwin(inv, opts)
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		lab.Close()
		return nil, fmt.Errorf("simulated lab: bench %s has devices without an emulator: %v", name, skipped)
	}
	if opts.Log != nil {
		opts.Log.Info("simulated lab up", "bench", name, "seed", opts.Seed, "endpoints", lab.Endpoints())
	}
	return lab, nil
}
