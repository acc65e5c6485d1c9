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
