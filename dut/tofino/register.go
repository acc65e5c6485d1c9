package tofino

import (
	"context"
	"encoding/json"
	"fmt"

	"testbed/drivers"
	"testbed/dut/p4switch"
	"testbed/transport"
)

// The registration of this driver: a switch, chosen by `driver:
// tofino-bfrt`, reached at ssh://user@host[:port] with the inventory's
// credentials, options.known_hosts and options.sde (the SDE directory).
func init() {
	drivers.Register(drivers.Driver{
		Kind: p4switch.Kind, Name: "tofino-bfrt",
		Capabilities: []string{p4switch.CapPrograms, p4switch.CapPacketGenerator, p4switch.CapClock, p4switch.CapQueues, p4switch.CapOptics, p4switch.CapFEC, p4switch.CapBuilder},
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			var so transport.SSHOptions
			if c.SSH != nil {
				var err error
				if so, err = c.SSH(); err != nil {
					return nil, fmt.Errorf("%s: %w", c.Name, err)
				}
			}
			return Open(ctx, c.Address, Options{SSH: so, SDE: c.Options["sde"], Timeout: c.Timeout, Transcript: c.Transcript})
		},
		Undo: UndoKinds(),
	})
}

// UndoKinds are the switch kind's undo kinds (p4switch.UndoKinds) as a
// switch driver registers them.
func UndoKinds() map[string]drivers.UndoFunc {
	undo := map[string]drivers.UndoFunc{}
	for k, f := range p4switch.UndoKinds() {
		undo[k] = func(ctx context.Context, dev drivers.Device, raw json.RawMessage) error { return f(ctx, dev, raw) }
	}
	return undo
}
