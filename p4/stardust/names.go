package stardust

import "testbed/p4/internal/decl"

// The two controls of the pipeline that hold the objects the control plane
// reaches (bfrt.<program>.pipe.<Control>.<name>).
const (
	ControlIngress = "SwitchIngress"
	ControlEgress  = "SwitchEgress"
)

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
// control that declare it.
func Declarations() []Declaration {
	var out []Declaration
	both := func(p string) {
		out = append(out,
			decl.Table(p, TableWhoami),
			decl.Action(p, TableWhoami, ActionSetID, ParamID),
			decl.Table(p, TableSpray, KeyDstFA, KeySlot),
			decl.Action(p, TableSpray, ActionToLink, ParamLink),
			decl.Action(p, TableSpray, ActionDrop),
			decl.Table(p, TableReachPort, KeyPacketID),
			decl.Action(p, TableReachPort, ActionReachOn, ParamLink),
			decl.Register(p, "", RegSpray),
			decl.Register(p, "", RegReachAge),
			decl.Register(p, "", RegFCIThreshold),
		)
	}
	both(ProgramFA)
	both(ProgramFE)
	fa := ProgramFA
	out = append(out,
		decl.Table(fa, TableVOQ, KeyDstAddr),
		decl.Action(fa, TableVOQ, ActionToVOQ, ParamFA, ParamPort, ParamVOQ, ParamTC),
		decl.Table(fa, TableHostPort, KeyDstPort),
		decl.Action(fa, TableHostPort, ActionToHost, ParamPort),
		decl.Table(fa, TableCreditPort, KeyPacketID),
		decl.Action(fa, TableCreditPort, ActionCreditFor, ParamPort),
		decl.Table(fa, TableCreditTo, KeyDstPort, KeySlot),
		decl.Action(fa, TableCreditTo, ActionToSource, ParamFA, ParamVOQ),
		decl.Register(fa, "", RegCredit),
		decl.Register(fa, "", RegSeqOut),
		decl.Register(fa, "", RegSeqIn),
		decl.Register(fa, "", RegReasmTimeout),
		decl.Register(fa, "", RegReasmDrops),
		decl.Register(fa, "", RegCreditRR),
		decl.Register(fa, "", RegFCI),
		decl.Table(fa, TableGenFlow, KeyAppID, KeySlot),
		decl.Action(fa, TableGenFlow, ActionToVOQ, ParamFA, ParamPort, ParamVOQ, ParamTC),
		decl.Register(fa, "", RegLatHist),
		decl.Register(ProgramFE, "", RegQHist),
	)
	return out
}
