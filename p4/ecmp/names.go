package ecmp

import "testbed/p4/internal/decl"

// The two controls of the pipeline that hold the objects the control plane
// reaches (bfrt.ecmp.pipe.<Control>.<name>).
const (
	ControlIngress = "SwitchIngress"
	ControlEgress  = "SwitchEgress"
)

// Declarations lists every name of this contract with the control that
// declares it.
func Declarations() []decl.Declaration {
	p := Program
	return []decl.Declaration{
		decl.Table(p, TableWhoami),
		decl.Action(p, TableWhoami, ActionSetID, ParamID),
		decl.Table(p, TableGenFlow, KeyAppID, KeySlot),
		decl.Action(p, TableGenFlow, ActionToFlow, ParamDst, ParamFlow, ParamTC),
		decl.Action(p, TableGenFlow, ActionDrop),
		decl.Table(p, TableRoute, KeyDst),
		decl.Action(p, TableRoute, ActionToHost, ParamPort),
		decl.Action(p, TableRoute, ActionECMPHash),
		decl.Action(p, TableRoute, ActionECMPSpray),
		decl.Action(p, TableRoute, ActionDrop),
		decl.Table(p, TableECMPSlot, KeyDst, KeySlot),
		decl.Action(p, TableECMPSlot, ActionToLink, ParamLink),
		decl.Action(p, TableECMPSlot, ActionDrop),
		decl.Register(p, "", RegFlowSent),
		decl.Register(p, "", RegFlowRcvd),
		decl.Register(p, "", RegFlowFirst),
		decl.Register(p, "", RegFlowLast),
	}
}
