package bfrtgrpc

import (
	"context"

	"testbed/drivers"
	"testbed/dut/p4switch"
	"testbed/dut/tofino"
)

// The registration of this driver: a switch, chosen by `driver:
// tofino-bfrt-grpc`, reached at bf_switchd's BF Runtime gRPC address with
// options.artifacts (where the programs' bfrt.json and binaries are).
// No FEC counters (CapFEC): Tofino 1's BF Runtime port tables have none
// (ops.go, port.fec_stat), and no optics: transceiver diagnostics need
// the platform CLI over SSH.
func init() {
	drivers.Register(drivers.Driver{
		Kind: p4switch.Kind, Name: Driver,
		Capabilities: []string{p4switch.CapPrograms, p4switch.CapPacketGenerator, p4switch.CapClock, p4switch.CapQueues},
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			return Open(ctx, c.Address, Options{Artifacts: c.Option("artifacts", true), Timeout: c.Timeout, Transcript: c.Transcript})
		},
		Undo: tofino.UndoKinds(),
	})
}
