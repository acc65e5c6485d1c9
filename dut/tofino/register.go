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

// DriverOptions are the forms of the options both Tofino drivers read
// (the BF Runtime gRPC driver reads start_timeout, and agent_port for
// its agent side channel), checked when the inventory is.
func DriverOptions() map[string]drivers.Option {
	return map[string]drivers.Option{"start_timeout": startTimeoutOption, "agent_port": drivers.PortOption()}
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
