package timestamp

import "testbed/p4/internal/decl"

// The two controls of the pipeline that hold the objects the control plane
// reaches (bfrt.timestamp.pipe.<Control>.<name>).
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

// Declarations lists every name of this contract with the control that
// declares it.
func Declarations() []Declaration {
	return []Declaration{
		decl.Table(Program, TableSnake, KeyIngressPort),
		decl.Action(Program, TableSnake, ActionForward, ParamPort),
		decl.Action(Program, TableSnake, ActionDrop),
		decl.Register(Program, "", RegRxTs),
		decl.Register(Program, "", RegTxTs),
	}
}
