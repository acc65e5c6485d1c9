package bfrtgrpc

import (
	"context"
	"fmt"

	"testbed/drivers"
	"testbed/dut/p4switch"
	"testbed/dut/tofino"
)

// The registration of this driver: a switch, chosen by `driver:
// tofino-bfrt-grpc`, reached at bf_switchd's BF Runtime gRPC address with
// options.artifacts (where the programs' bfrt.json and binaries are),
// options.start_timeout (how long a program's load may take, default
// 3 min) and, optionally, options.agent_ssh: the switch's SSH address
// (ssh://user@host[:port], with the device's credentials and the
// tofino-bfrt driver's options known_hosts, sde, privilege, cpu_iface,
// agent_port), where the testbed agent answers what BF Runtime does not
// serve: the port manager's FEC counters (CapFEC) and packet-out
// (ops.go, agentOps). Without it those answer unsupported, naming the
// option. No optics: transceiver diagnostics need the platform CLI over
// SSH.
func init() {
	drivers.Register(drivers.Driver{
		Kind: p4switch.Kind, Name: Driver,
		Capabilities: []string{p4switch.CapPrograms, p4switch.CapPacketGenerator, p4switch.CapClock, p4switch.CapQueues, p4switch.CapFEC},
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			o := Options{Artifacts: c.Option("artifacts", true), Timeout: c.Timeout, Transcript: c.Transcript}
			st, err := tofino.StartTimeoutOf(c)
			if err != nil {
				return nil, err
			}
			o.StartTimeout = st
			if a := c.Options["agent_ssh"]; a != "" {
				so, err := tofino.OptionsOf(c)
				if err != nil {
					return nil, err
				}
				ag, err := tofino.Open(ctx, a, so)
				if err != nil {
					return nil, fmt.Errorf("%s: agent side channel (options.agent_ssh %s): %w", c.Name, a, err)
				}
				o.Agent = ag
			}
			sw, err := Open(ctx, c.Address, o)
			if err != nil {
				if o.Agent != nil {
					o.Agent.Close()
				}
				return nil, err
			}
			return sw, nil
		},
		Undo:      tofino.UndoKinds(),
		UndoBound: tofino.UndoBounds(),
		Options:   driverOptions(),
	})
}

// driverOptions are the Tofino drivers' options and this driver's own.
func driverOptions() map[string]drivers.Option {
	o := tofino.DriverOptions()
	o["artifacts"] = drivers.TextOption("the directory of the programs' builds in the SDE's install layout")
	o["agent_ssh"] = drivers.TextOption("the switch's SSH address, where the agent side channel answers")
	return o
}
