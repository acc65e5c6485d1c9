package stardust

import (
	"fmt"
	"strings"
)

// The two controls of the pipeline that hold the objects the control plane
// reaches (bfrt.<program>.pipe.<Control>.<name>).
const (
	ControlIngress = "SwitchIngress"
	ControlEgress  = "SwitchEgress"
)

// Kind is the sort of P4 object a Declaration names.
type Kind string

const (
	KindTable    Kind = "table"
	KindAction   Kind = "action"
	KindRegister Kind = "register"
)

// Declaration is one object the control plane reaches by name, and where
// the P4 source must declare it.
type Declaration struct {
	Program string
	Control string
	Kind    Kind
	Name    string // as declared inside the control
	// For KindAction: its table (qualified) and its parameters in order.
	Table  string
	Params []string
	// For KindTable: the match keys, in order.
	Keys []string
}

// QualifiedName is the name under bfrt.<program>.pipe: "SwitchIngress.spray".
func (d Declaration) QualifiedName() string { return d.Control + "." + d.Name }

func (d Declaration) String() string {
	return fmt.Sprintf("%s %s.%s", d.Kind, d.Program, d.QualifiedName())
}

// Declarations lists every name of this contract with the program and
// control that declare it.
func Declarations() []Declaration {
	var out []Declaration
	both := func(p string) {
		out = append(out,
			declTable(p, TableWhoami),
			declAction(p, TableWhoami, ActionSetID, ParamID),
			declTable(p, TableSpray, KeyDstFA, KeySlot),
			declAction(p, TableSpray, ActionToLink, ParamLink),
			declAction(p, TableSpray, ActionDrop),
			declTable(p, TableReachPort, KeyPacketID),
			declAction(p, TableReachPort, ActionReachOn, ParamLink),
			declRegister(p, RegSpray),
			declRegister(p, RegReachAge),
		)
	}
	both(ProgramFA)
	both(ProgramFE)
	fa := ProgramFA
	out = append(out,
		declTable(fa, TableVOQ, KeyDstAddr),
		declAction(fa, TableVOQ, ActionToVOQ, ParamFA, ParamPort, ParamVOQ, ParamTC),
		declTable(fa, TableHostPort, KeyDstPort),
		declAction(fa, TableHostPort, ActionToHost, ParamPort),
		declTable(fa, TableCreditPort, KeyPacketID),
		declAction(fa, TableCreditPort, ActionCreditFor, ParamPort),
		declTable(fa, TableCreditTo, KeyDstPort, KeySlot),
		declAction(fa, TableCreditTo, ActionToSource, ParamFA, ParamVOQ),
		declRegister(fa, RegCredit),
		declRegister(fa, RegSeqOut),
		declRegister(fa, RegSeqIn),
		declRegister(fa, RegCreditRR),
		declRegister(fa, RegFCI),
		declRegister(ProgramFE, RegFCIThreshold),
	)
	return out
}

func split(qualified string) (string, string) {
	c, n, _ := strings.Cut(qualified, ".")
	return c, n
}

func declTable(program, qualified string, keys ...string) Declaration {
	c, n := split(qualified)
	return Declaration{Program: program, Control: c, Kind: KindTable, Name: n, Keys: keys}
}

func declAction(program, table, name string, params ...string) Declaration {
	c, _ := split(table)
	return Declaration{Program: program, Control: c, Kind: KindAction, Name: name, Table: table, Params: params}
}

func declRegister(program, qualified string) Declaration {
	c, n := split(qualified)
	return Declaration{Program: program, Control: c, Kind: KindRegister, Name: n}
}
