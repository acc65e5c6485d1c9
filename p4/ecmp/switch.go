package ecmp

import (
	"context"
	"fmt"

	"testbed/dut/p4switch"
)

// Switch is the ecmp program's control plane on one switch, written
// against the switch kind's table and register core (p4switch.Core), so
// any switch driver serves it. The generator applications beyond the core
// use the driver's packet generator, and say so when it has none.
type Switch struct {
	p4switch.Core
}

// New is the control plane over a switch's core.
func New(core p4switch.Core) *Switch { return &Switch{Core: core} }

// StartPktgen starts a generator application through the driver's
// p4switch.PacketGenerator.
func (s *Switch) StartPktgen(ctx context.Context, p p4switch.Pktgen) error {
	g, ok := s.Core.(p4switch.PacketGenerator)
	if !ok {
		return fmt.Errorf("generator application %d: the switch driver (%T) has no packet generator (p4switch.PacketGenerator)", p.AppID, s.Core)
	}
	return g.StartPktgen(ctx, p)
}
