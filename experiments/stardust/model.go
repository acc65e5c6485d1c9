package stardust

import (
	"context"
	"fmt"

	"testbed/dut/fabric"
	"testbed/inventory"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
)

// modelTopology is what a model-mode run needs of the lab: one fabric
// device (kind fabric), which runs the cell-level fabric and the
// packet-switched one it is compared with; the simulated lab's is fabric1
// (driver stardust-model). The recipe reaches it through the kind's
// interfaces (dut/fabric's Fabric and Faults), never the model itself.
var modelTopology = o.Topology{Roles: []o.Role{{Name: "fabric", Kind: fabric.Kind,
	Desc: "a Stardust fabric device that runs the cell-level fabric and the packet-switched one (the simulated lab's fabric1, driver stardust-model)"}}}

// bindFabric names the lab's fabric device, or says why the lab has none.
func bindFabric(inv *inventory.Inventory) (string, error) {
	if inv == nil {
		return "", o.Inputf("the model mode runs on a fabric device (kind fabric), and there is no lab")
	}
	a, err := modelTopology.Bind(inv)
	if err != nil {
		return "", err
	}
	return a.Devices["fabric"], nil
}

// modelBinding is the plan's binding of the fabric role to device name.
func modelBinding(name, detail string) o.Binding {
	return o.Binding{Role: "fabric", Resource: name, Detail: detail}
}

// fabricOf is device name's fabric interface.
func fabricOf(rc *o.RunContext, name string) (fabric.Fabric, error) {
	return o.As[fabric.Fabric](rc, name)
}

// openCells makes device name's fabric a Stardust fabric of cells c,
// seeded (seed, stream).
func openCells(ctx context.Context, rc *o.RunContext, name string, c sd.Fabric, seed, stream uint64) (fabric.Fabric, error) {
	f, err := fabricOf(rc, name)
	if err != nil {
		return nil, err
	}
	if err := f.OpenCells(ctx, c, fabric.Seed{seed, stream}); err != nil {
		return nil, fmt.Errorf("%s: open a fabric of cells: %w", name, err)
	}
	return f, nil
}

// runSlots steps f n slots, a thousand at a time, so that an interrupted
// run stops soon.
func runSlots(ctx context.Context, f fabric.Fabric, n int64) error {
	for n > 0 {
		k := min(n, 1000)
		if _, err := f.Run(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}
