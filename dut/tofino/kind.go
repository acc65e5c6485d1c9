package tofino

import (
	"context"
	"time"

	"testbed/dut/p4switch"
)

// The switch kind's types, by their names in this package.
type (
	Entry         = p4switch.Entry
	MirrorSession = p4switch.MirrorSession
	MulticastNode = p4switch.MulticastNode
	PFC           = p4switch.PFC
	PortStatus    = p4switch.PortStatus
	PortMode      = p4switch.PortMode
	TxStamp       = p4switch.TxStamp
	Counters      = p4switch.Counters
	QueueUsage    = p4switch.QueueUsage
	Pktgen        = p4switch.Pktgen
	PktgenStatus  = p4switch.PktgenStatus
	Lane          = p4switch.Lane
	FECCounters   = p4switch.FECCounters
	PortFrames    = p4switch.PortFrames
	FrameField    = p4switch.FrameField
	SizeRange     = p4switch.SizeRange
	FrameQuery    = p4switch.FrameQuery
	Build         = p4switch.Build
)

// The PortFrames fields, by their names in this package.
const (
	FramesTxOK        = p4switch.FramesTxOK
	FramesTxAll       = p4switch.FramesTxAll
	FramesTxOctets    = p4switch.FramesTxOctets
	FramesTxPriPause  = p4switch.FramesTxPriPause
	FramesRxOK        = p4switch.FramesRxOK
	FramesRxAll       = p4switch.FramesRxAll
	FramesRxFCSErrors = p4switch.FramesRxFCSErrors
	FramesAll         = p4switch.FramesAll
)

// The switch kind's interfaces this driver implements.
var (
	_ p4switch.Core            = (*Switch)(nil)
	_ p4switch.Programs        = (*Switch)(nil)
	_ p4switch.Ports           = (*Switch)(nil)
	_ p4switch.PortCounters    = (*Switch)(nil)
	_ p4switch.Queues          = (*Switch)(nil)
	_ p4switch.PacketGenerator = (*Switch)(nil)
	_ p4switch.Clock           = (*Switch)(nil)
	_ p4switch.Optics          = (*Switch)(nil)
	_ p4switch.Builder         = (*Switch)(nil)
)

// LoadProgram restarts bf_switchd with program (StartSwitchd).
func (s *Switch) LoadProgram(ctx context.Context, program string) error {
	return s.StartSwitchd(ctx, program)
}

// LoadProgramBound is how long LoadProgram may take over SSH: the waits
// for bfshell's port and the agent, within StartTimeout, and the
// exchanges around them (stopping the old bf_switchd and starting the new,
// the agent's hello, the program read back), a Timeout each. A run's undo
// of a program change is given this long. Over a connection that manages
// the program itself (BF Runtime gRPC) it is that connection's
// StartProgramBound, or nothing (0) if it has none.
func (s *Switch) LoadProgramBound() time.Duration {
	if s.life != nil {
		if b, ok := s.life.(interface{ StartProgramBound() time.Duration }); ok {
			return b.StartProgramBound()
		}
		return 0
	}
	return s.opts.StartTimeout + 4*s.opts.Timeout
}

// Ready starts the agent if it does not answer (EnsureAgent).
func (s *Switch) Ready(ctx context.Context) error { return s.EnsureAgent(ctx) }
