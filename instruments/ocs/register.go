package ocs

import (
	"context"
	"encoding/json"
	"fmt"

	"testbed/drivers"
)

// Kind is the inventory's kind for an optical circuit switch.
const Kind = "ocs"

// UndoDark is the undo kind of every OCS driver: {} no schedule, no circuit.
const UndoDark = "ocs.dark"

// register adds one OCS driver to the registry with its static
// capabilities (what its Capabilities answers once opened).
func register(name string, open func(ctx context.Context, address string, opts Options) (CircuitSwitch, error), caps ...string) {
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: name, Capabilities: caps,
		Options: map[string]drivers.Option{"insecure_tls": drivers.BoolOption("whether to accept the device's certificate unchecked (a self-signed one)")},
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			return open(ctx, c.Address, Options{Name: c.Name, Timeout: c.Timeout, Transcript: c.Transcript, InsecureTLS: c.Options["insecure_tls"] == "true"})
		},
		Undo: map[string]drivers.UndoFunc{
			UndoDark: func(ctx context.Context, dev drivers.Device, _ json.RawMessage) error {
				cs, ok := dev.(CircuitSwitch)
				if !ok {
					return fmt.Errorf("driver %T is not an optical circuit switch", dev)
				}
				return cs.Dark(ctx)
			},
		},
	})
}
