package tofino

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"testbed/drivers"
	"testbed/dut/p4switch"
	"testbed/transport"
)

// The registration of this driver: a switch, chosen by `driver:
// tofino-bfrt`, reached at ssh://user@host[:port] with the inventory's
// credentials, options.known_hosts, options.sde (the SDE directory),
// options.privilege (none or sudo), options.cpu_iface,
// options.agent_port and options.start_timeout (docs/tofino.md).
func init() {
	drivers.Register(drivers.Driver{
		Kind: p4switch.Kind, Name: "tofino-bfrt",
		Capabilities: []string{p4switch.CapPrograms, p4switch.CapPacketGenerator, p4switch.CapClock, p4switch.CapQueues, p4switch.CapOptics, p4switch.CapFEC, p4switch.CapBuilder},
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			o, err := OptionsOf(c)
			if err != nil {
				return nil, err
			}
			return Open(ctx, c.Address, o)
		},
		Undo:      UndoKinds(),
		UndoBound: UndoBounds(),
		Options:   DriverOptions(),
	})
}

// OptionsOf reads a switch's SSH options from its inventory entry: the
// credentials, options.known_hosts, sde, privilege, cpu_iface and
// agent_port. The BF Runtime gRPC driver reads its agent side channel's
// with it too.
func OptionsOf(c drivers.Config) (Options, error) {
	var so transport.SSHOptions
	if c.SSH != nil {
		var err error
		if so, err = c.SSH(); err != nil {
			return Options{}, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	o := Options{SSH: so, SDE: c.Options["sde"], Timeout: c.Timeout, Transcript: c.Transcript,
		Privilege: c.Options["privilege"], CPUIface: c.Options["cpu_iface"]}
	d, err := StartTimeoutOf(c)
	if err != nil {
		return Options{}, err
	}
	o.StartTimeout = d
	if v, ok := c.Options["agent_port"]; ok {
		if err := drivers.PortOption().Check(c.Name, "agent_port", v); err != nil {
			return Options{}, err
		}
		o.AgentPort, _ = strconv.Atoi(v)
	}
	return o, nil
}

// StartTimeoutOf reads options.start_timeout, how long a program's start
// may take on the switch (bf_switchd's over SSH, a warm init over BF
// Runtime gRPC): a Go duration; 0 when not given (the driver's default,
// 3 min).
func StartTimeoutOf(c drivers.Config) (time.Duration, error) {
	v, ok := c.Options["start_timeout"]
	if !ok {
		return 0, nil
	}
	if err := startTimeoutOption.Check(c.Name, "start_timeout", v); err != nil {
		return 0, err
	}
	return time.ParseDuration(v)
}

// DriverOptions are the options a switch of either Tofino driver may
// carry, checked when the inventory is: those of the SSH driver (the BF
// Runtime gRPC driver reads start_timeout, and the rest for its agent
// side channel), and those describing the switch that recipes and the
// simulated lab's twin read.
func DriverOptions() map[string]drivers.Option {
	return map[string]drivers.Option{
		"start_timeout": startTimeoutOption, "agent_port": drivers.PortOption(),
		"known_hosts": drivers.TextOption("the known_hosts file the switch's host key is checked against"),
		"sde":         drivers.TextOption("the SDE's directory on the switch"),
		"privilege":   drivers.TextOption("none or sudo: how the agent gets the SDE's privileges"),
		"cpu_iface":   drivers.TextOption("the CPU port's interface on the switch"),
		// Read by recipes and the simulated lab, not by the driver.
		"role":          drivers.TextOption("the switch's stage in a Clos (tor, agg or core), for the RAIL and monitor recipes"),
		"stardust_role": drivers.TextOption("fa or fe: the switch's part in a Stardust fabric"),
		"stardust_id":   drivers.TextOption("the switch's id in its Stardust fabric"),
		"clock_ppm":     drivers.TextOption("the simulated switch's clock offset in ppm (a real switch's is the hardware's)"),
	}
}

var startTimeoutOption = drivers.DurationOption("3m", "how long the switch may take to start a program")

// UndoBounds say how long the switch kind's undos that outlast a run's
// fixed bound may take: a program's restart (LoadProgramBound).
func UndoBounds() map[string]drivers.UndoBoundFunc {
	return map[string]drivers.UndoBoundFunc{
		p4switch.UndoProgram: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) (time.Duration, error) {
			if b, ok := dev.(interface{ LoadProgramBound() time.Duration }); ok {
				return b.LoadProgramBound(), nil
			}
			return 0, nil
		},
	}
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
