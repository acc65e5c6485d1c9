package tofino

import sd "testbed/p4/stardust"

// A program's contract (p4/internal/decl's declarations, as p4/stardust
// re-exports their type) says which registers and tables bf_switchd
// answers for and which actions each table takes. The Stardust programs
// and ecmp are read from their contracts the same way.

// contractObjects lists the registers and tables that decls declare for
// program.
func contractObjects(decls []sd.Declaration, program string) (regs, tables []string) {
	for _, d := range decls {
		if d.Program != program {
			continue
		}
		switch d.Kind {
		case sd.KindRegister:
			regs = append(regs, d.QualifiedName())
		case sd.KindTable:
			tables = append(tables, d.QualifiedName())
		}
	}
	return regs, tables
}

// contractAction reports whether decls give table the action.
func contractAction(decls []sd.Declaration, table, action string) bool {
	for _, d := range decls {
		if d.Kind == sd.KindAction && d.Table == table && d.Name == action {
			return true
		}
	}
	return false
}
