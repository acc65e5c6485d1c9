package orchestrator

import (
	"fmt"
	"reflect"

	"testbed/dut/p4switch"
)

// As returns the named device's driver as T, an interface of its kind
// (p4switch.Ports, host.Settings, voa.Shutter, ...): a recipe asks for what
// it uses and never names a driver's type. A driver that does not
// implement T is an error naming the device, its driver and T.
func As[T any](rc *RunContext, name string) (T, error) {
	var zero T
	d, ok := rc.devices.Get(name)
	if !ok {
		return zero, fmt.Errorf("device %s is not part of this run", name)
	}
	t, ok := d.Driver.(T)
	if !ok {
		return zero, fmt.Errorf("device %s (a %s, driver %s) does not offer %s", name, d.Dev.Kind, d.Dev.Driver, reflect.TypeFor[T]())
	}
	return t, nil
}

// Switch returns the named switch's table and register core.
func (rc *RunContext) Switch(name string) (p4switch.Core, error) {
	return As[p4switch.Core](rc, name)
}

// FirstTouch reports whether key is named for the first time in this run:
// a recipe records a device's state, and pushes the undo that restores it,
// only the first time it changes it.
func (rc *RunContext) FirstTouch(key string) bool { return rc.once(key) }
