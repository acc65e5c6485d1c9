package tofino

import sd "testbed/p4/stardust"

// The Stardust programs (p4/stardust) on a simulated switch: bf_switchd
// running stardust_fa or stardust_fe answers for the registers and tables
// their contract declares, and a table takes the actions the contract
// gives it. There is no Stardust dataplane behind them yet: a register
// holds what was last written (by the control plane, or by a test standing
// in for the data plane) and nothing ages or counts on its own.

// stardustObjects lists the registers and tables program declares, ok
// false when it is not a Stardust program.
func stardustObjects(program string) (regs, tables []string, ok bool) {
	if program != sd.ProgramFA && program != sd.ProgramFE {
		return nil, nil, false
	}
	for _, d := range sd.Declarations() {
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
	return regs, tables, true
}

// stardustAction reports whether the contract gives table the action.
func stardustAction(table, action string) bool {
	for _, d := range sd.Declarations() {
		if d.Kind == sd.KindAction && d.Table == table && d.Name == action {
			return true
		}
	}
	return false
}
