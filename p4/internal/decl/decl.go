// Package decl is the shape of a P4 program's control-plane contract:
// each object the control plane reaches by name (a table, an action, a
// register) and where the P4 source must declare it. Every program
// package (p4/linkguardian, p4/stardust, p4/timestamp) lists its
// declarations in this type, and p4check holds the sources to them.
package decl

import (
	"fmt"
	"strings"
)

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
	Program string
	Control string // SwitchIngress or SwitchEgress
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

// SplitQualified separates "Control.name"; a name without a control gets
// control.
func SplitQualified(control, name string) (string, string) {
	if c, n, ok := strings.Cut(name, "."); ok {
		return c, n
	}
	return control, name
}

// Table declares a table by its qualified name and match keys.
func Table(program, qualified string, keys ...string) Declaration {
	c, n := SplitQualified("", qualified)
	return Declaration{Program: program, Control: c, Kind: KindTable, Name: n, Keys: keys}
}

// Action declares an action of a table (qualified) with its parameters.
func Action(program, table, name string, params ...string) Declaration {
	c, _ := SplitQualified("", table)
	return Declaration{Program: program, Control: c, Kind: KindAction, Name: name, Table: table, Params: params}
}

// Register declares a register: name is qualified, or control says where
// a name the contract gives without its control is declared.
func Register(program, control, name string) Declaration {
	c, n := SplitQualified(control, name)
	return Declaration{Program: program, Control: c, Kind: KindRegister, Name: n}
}
