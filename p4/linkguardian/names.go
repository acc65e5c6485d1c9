package linkguardian

import "testbed/p4/internal/decl"

// The two controls of a Tofino pipeline that hold the objects the control
// plane reaches (bfrt.<program>.pipe.<Control>.<name>).
const (
	ControlIngress = "SwitchIngress"
	ControlEgress  = "SwitchEgress"
)

// Match keys and action parameters the control plane names when it adds
// table entries, as bfrt_python spells them: a key is the last component
// of the P4 key expression (eg_intr_md.egress_port -> egress_port).
const (
	// TableLinkProtect and TableRetxMcast are keyed by the protected port.
	KeyEgressPort = "egress_port"
	// TableEmulateDrop is keyed by the packet's random number.
	KeyRandNum = "rand_num"

	ParamDummyPktMaxCount = "dummy_pkt_max_count" // ActionProtect
	ParamBlockingMode     = "blocking_mode"       // ActionProtect: 1 ordered, 0 NB
	ParamNumCopies        = "num_copies"          // ActionRetxCopies

	// ActionDrop is TableEmulateDrop's action: the packet is lost.
	ActionDrop = "drop"
)

// DropRandomBits is the width of the random number the sender draws for
// loss emulation: DropTableEntries counts entries out of 2^DropRandomBits.
const DropRandomBits = 20

// Kind is the sort of P4 object a Declaration names.
type Kind = decl.Kind

const (
	KindTable    = decl.KindTable
	KindAction   = decl.KindAction
	KindRegister = decl.KindRegister
)

// Declaration is one object the control plane reaches by name, and where
// the P4 source must declare it (the shape every program's contract shares).
type Declaration = decl.Declaration

// Declarations lists every name of this contract with the program and
// control that declare it. Names the contract gives without their control
// (RegSeqNo, RegEra, RegAck) get it here, as the control plane uses them.
func Declarations() []Declaration {
	return []Declaration{
		// Sender.
		decl.Table(ProgramSender, TableLinkProtect, KeyEgressPort),
		decl.Action(ProgramSender, TableLinkProtect, ActionProtect, ParamDummyPktMaxCount, ParamBlockingMode),
		decl.Register(ProgramSender, ControlEgress, RegSeqNo),
		decl.Register(ProgramSender, ControlEgress, RegEra),
		decl.Table(ProgramSender, TableRetxMcast, KeyEgressPort),
		decl.Action(ProgramSender, TableRetxMcast, ActionRetxCopies, ParamNumCopies),
		decl.Table(ProgramSender, TableEmulateDrop, KeyRandNum),
		decl.Action(ProgramSender, TableEmulateDrop, ActionDrop),
		decl.Register(ProgramSender, "", RegEmulatedDrops),
		decl.Table(ProgramSender, TableL2Forward, KeyDstAddr),
		decl.Action(ProgramSender, TableL2Forward, ActionForwardToQueue, ParamPort, ParamQID),

		// Receiver.
		decl.Register(ProgramReceiver, "", RegExpectedSeqNo),
		decl.Register(ProgramReceiver, ControlIngress, RegAck),
		decl.Register(ProgramReceiver, "", RegTimeoutCount),
		decl.Register(ProgramReceiver, "", RegPauseThreshold),
		decl.Register(ProgramReceiver, "", RegResumeThreshold),
		decl.Table(ProgramReceiver, TableL2Forward, KeyDstAddr),
		decl.Action(ProgramReceiver, TableL2Forward, ActionForwardToQueue, ParamPort, ParamQID),
	}
}
