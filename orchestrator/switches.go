package orchestrator

import (
	"fmt"

	"testbed/dut/tofino"
)

// Switch returns the named Tofino switch's driver.
func (rc *RunContext) Switch(name string) (*tofino.Switch, error) {
	d, ok := rc.devices.Get(name)
	if !ok {
		return nil, fmt.Errorf("device %s is not part of this run", name)
	}
	s, ok := d.Driver.(*tofino.Switch)
	if !ok {
		return nil, fmt.Errorf("device %s is a %s, not a Tofino switch", name, d.Dev.Kind)
	}
	return s, nil
}

// FirstTouch reports whether key is named for the first time in this run:
// a recipe records a device's state, and pushes the undo that restores it,
// only the first time it changes it.
func (rc *RunContext) FirstTouch(key string) bool { return rc.once(key) }
