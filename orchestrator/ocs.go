package orchestrator

import (
	"context"
	"fmt"
	"time"

	"testbed/instruments/ocs"
	"testbed/inventory"
	"testbed/transport"
)

// openOCS opens an optical circuit switch with its inventory driver. The
// driver's errors begin with the device's name already.
func openOCS(ctx context.Context, d *inventory.Device, timeout time.Duration, tr *transport.Transcript) (*OpenedDevice, error) {
	cs, err := ocs.Open(ctx, d.Driver, d.Address, ocs.Options{Name: d.Name, Timeout: timeout, Transcript: tr, InsecureTLS: d.Options["insecure_tls"] == "true"})
	if err != nil {
		return nil, fmt.Errorf("%w (opening %s at %s)", err, d.Driver, d.Address)
	}
	id, err := cs.Identity(ctx)
	if err != nil {
		cs.Close()
		return nil, err
	}
	return &OpenedDevice{Dev: d, Driver: cs, Identity: id, closer: cs}, nil
}

// OCS returns the named optical circuit switch's driver. A recipe that
// runs schedules gets them with ocs.AsScheduler.
func (rc *RunContext) OCS(name string) (ocs.CircuitSwitch, error) {
	d, ok := rc.devices.Get(name)
	if !ok {
		return nil, fmt.Errorf("device %s is not part of this run", name)
	}
	cs, ok := d.Driver.(ocs.CircuitSwitch)
	if !ok {
		return nil, fmt.Errorf("device %s is a %s, not an optical circuit switch", name, d.Dev.Kind)
	}
	return cs, nil
}

// DarkOCSOnExit registers, the first time it is called for a switch in a
// run, the undo that stops the switch's schedule and disconnects every
// circuit when the run ends however it ends (the switch's safe state). A
// recipe calls it before it first changes the switch.
func (rc *RunContext) DarkOCSOnExit(name string) error {
	if _, err := rc.OCS(name); err != nil {
		return err
	}
	if rc.once("ocs/" + name) {
		return rc.Journal(name, Undo{Kind: UndoOCSDark, Desc: "put " + name + " dark (no schedule, no circuit)"})
	}
	return nil
}
