package ocs

import (
	"context"
	"encoding/json"
	"fmt"

	"testbed/drivers"
)

// Kind is the inventory's kind for an optical circuit switch.
const Kind = "ocs"

// twinOption is an option the driver does not read: it shapes the
// simulated lab's emulator of the device (a real switch has its own).
func twinOption(what string) drivers.Option {
	return drivers.TextOption(what + ", for the simulated lab's twin of the switch")
}

// UndoDark is the undo kind of every OCS driver: {} no schedule, no circuit.
const UndoDark = "ocs.dark"

// register adds one OCS driver to the registry with its static
// capabilities (what its Capabilities answers once opened) and the
// options, besides insecure_tls, that a device of it may carry.
func register(name string, open func(ctx context.Context, address string, opts Options) (CircuitSwitch, error), options map[string]drivers.Option, caps ...string) {
	options["insecure_tls"] = drivers.BoolOption("whether to accept the device's certificate unchecked (a self-signed one)")
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: name, Capabilities: caps,
		Options: options,
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
