package linkguardian

import (
	"fmt"
	"strings"
)

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
type Kind string

const (
	KindTable    Kind = "table"
	KindAction   Kind = "action"
	KindRegister Kind = "register"
)

// Declaration is one object the control plane reaches by name, and where
// the P4 source must declare it: in which program, in which control.
type Declaration struct {
	Program string // ProgramSender or ProgramReceiver
	Control string // ControlIngress or ControlEgress
	Kind    Kind
	Name    string // as declared inside the control
	// For KindAction: the table whose actions list holds it, by its
	// qualified name, and the action's parameters in order.
	Table  string
	Params []string
	// For KindTable: the match keys, in order.
	Keys []string
}

// QualifiedName is the name under bfrt.<program>.pipe: "SwitchEgress.reg_seq_no".
func (d Declaration) QualifiedName() string { return d.Control + "." + d.Name }

func (d Declaration) String() string {
	return fmt.Sprintf("%s %s.%s", d.Kind, d.Program, d.QualifiedName())
}

// Declarations lists every name of this contract with the program and
// control that declare it. Names the contract gives without their control
// (RegSeqNo, RegEra, RegAck) get it here, as the control plane uses them.
func Declarations() []Declaration {
	return []Declaration{
		// Sender.
		declTable(ProgramSender, TableLinkProtect, KeyEgressPort),
		declAction(ProgramSender, TableLinkProtect, ActionProtect, ParamDummyPktMaxCount, ParamBlockingMode),
		declRegister(ProgramSender, ControlEgress, RegSeqNo),
		declRegister(ProgramSender, ControlEgress, RegEra),
		declTable(ProgramSender, TableRetxMcast, KeyEgressPort),
		declAction(ProgramSender, TableRetxMcast, ActionRetxCopies, ParamNumCopies),
		declTable(ProgramSender, TableEmulateDrop, KeyRandNum),
		declAction(ProgramSender, TableEmulateDrop, ActionDrop),
		declRegister(ProgramSender, "", RegEmulatedDrops),

		// Receiver.
		declRegister(ProgramReceiver, "", RegExpectedSeqNo),
		declRegister(ProgramReceiver, ControlIngress, RegAck),
		declRegister(ProgramReceiver, "", RegTimeoutCount),
		declRegister(ProgramReceiver, "", RegPauseThreshold),
		declRegister(ProgramReceiver, "", RegResumeThreshold),
	}
}

// splitQualified separates "Control.name"; a name without a control gets control.
func splitQualified(control, name string) (string, string) {
	if c, n, ok := strings.Cut(name, "."); ok {
		return c, n
	}
	return control, name
}

func declTable(program, qualified string, keys ...string) Declaration {
	c, n := splitQualified("", qualified)
	return Declaration{Program: program, Control: c, Kind: KindTable, Name: n, Keys: keys}
}

func declAction(program, table, name string, params ...string) Declaration {
	c, _ := splitQualified("", table)
	return Declaration{Program: program, Control: c, Kind: KindAction, Name: name, Table: table, Params: params}
}

func declRegister(program, control, name string) Declaration {
	c, n := splitQualified(control, name)
	return Declaration{Program: program, Control: c, Kind: KindRegister, Name: n}
}
