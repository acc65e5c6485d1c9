package stardust

import (
	"context"
	"fmt"

	"testbed/dut/p4switch"
)

// Switch is the Stardust programs' control plane on one switch, written
// against the switch kind's table and register core (p4switch.Core), so
// any switch driver serves it. The few reads and the generator beyond the
// core (a port's link state, a queue's drop counter, a generator
// application) use the driver's fixed-function interfaces, and say so
// when it has none.
type Switch struct {
	p4switch.Core
}

// New is the control plane over a switch's core.
func New(core p4switch.Core) *Switch { return &Switch{Core: core} }

// PortStatus reads a port's state through the driver's p4switch.Ports.
func (s *Switch) PortStatus(ctx context.Context, devPort int) (p4switch.PortStatus, error) {
	p, ok := s.Core.(p4switch.Ports)
	if !ok {
		return p4switch.PortStatus{}, fmt.Errorf("port %d status: the switch driver (%T) has no ports interface (p4switch.Ports)", devPort, s.Core)
	}
	return p.PortStatus(ctx, devPort)
}

// Queue reads a port's egress queue through the driver's p4switch.Queues.
func (s *Switch) Queue(ctx context.Context, devPort, qid int, clearWatermark bool) (p4switch.QueueUsage, error) {
	q, ok := s.Core.(p4switch.Queues)
	if !ok {
		return p4switch.QueueUsage{}, fmt.Errorf("port %d queue %d: the switch driver (%T) has no queues interface (p4switch.Queues)", devPort, qid, s.Core)
	}
	return q.Queue(ctx, devPort, qid, clearWatermark)
}

// StartPktgen starts a generator application through the driver's
// p4switch.PacketGenerator.
func (s *Switch) StartPktgen(ctx context.Context, p p4switch.Pktgen) error {
	g, ok := s.Core.(p4switch.PacketGenerator)
	if !ok {
		return fmt.Errorf("generator application %d: the switch driver (%T) has no packet generator (p4switch.PacketGenerator)", p.AppID, s.Core)
	}
	return g.StartPktgen(ctx, p)
}
