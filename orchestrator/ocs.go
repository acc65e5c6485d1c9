package orchestrator

import (
	"fmt"

	"testbed/instruments/ocs"
)

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
