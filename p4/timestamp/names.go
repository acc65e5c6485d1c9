package timestamp

import (
	"fmt"
	"strings"
)

// The two controls of the pipeline that hold the objects the control plane
// reaches (bfrt.timestamp.pipe.<Control>.<name>).
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

// QualifiedName is the name under bfrt.<program>.pipe: "SwitchIngress.snake".
func (d Declaration) QualifiedName() string { return d.Control + "." + d.Name }

func (d Declaration) String() string {
	return fmt.Sprintf("%s %s.%s", d.Kind, d.Program, d.QualifiedName())
}

// Declarations lists every name of this contract with the control that
// declares it.
func Declarations() []Declaration {
	return []Declaration{
		declTable(TableSnake, KeyIngressPort),
		declAction(TableSnake, ActionForward, ParamPort),
		declAction(TableSnake, ActionDrop),
		declRegister(RegRxTs),
		declRegister(RegTxTs),
	}
}

func split(qualified string) (string, string) {
	c, n, _ := strings.Cut(qualified, ".")
	return c, n
}

func declTable(qualified string, keys ...string) Declaration {
	c, n := split(qualified)
	return Declaration{Program: Program, Control: c, Kind: KindTable, Name: n, Keys: keys}
}

func declAction(table, name string, params ...string) Declaration {
	c, _ := split(table)
	return Declaration{Program: Program, Control: c, Kind: KindAction, Name: name, Table: table, Params: params}
}

func declRegister(qualified string) Declaration {
	c, n := split(qualified)
	return Declaration{Program: Program, Control: c, Kind: KindRegister, Name: n}
}
