package simlab

import (
	"context"

	"testbed/inventory"
	"testbed/simlab/fabric"
)

// startFabric serves a Stardust fabric (driver stardust-model): the
// cell-level model and its packet-switched comparison behind dut/fabric's
// protocol on a loopback port. The fabric is made, seeded and stepped by
// its client, so the lab's seed does not enter it.
func startFabric(t *twin, d *inventory.Device, n int) (string, error) {
	srv, err := fabric.ListenFaults(context.Background(), t.opts.Listen+":0", t.lab.faults[d.Name])
	if err != nil {
		return "", err
	}
	t.lab.closers = append(t.lab.closers, srv.Close)
	return srv.Address(), nil
}
