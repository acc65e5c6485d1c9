package tofino

import (
	"fmt"

	sd "testbed/p4/stardust"
)

// The Stardust programs (p4/stardust) on a simulated switch: bf_switchd
// running stardust_fa or stardust_fe answers for the registers and tables
// their contract declares, each register as large as the P4 source
// declares it (regSize), and a table takes the actions the contract gives
// it. When switches running them are joined by fibres, the dataplane runs
// the fabric behind them (stardust_dp.go): cells move through the
// switches' own tables, registers and generator applications, and the
// registers, port counters and queues a driver reads are what the cells
// did.

// stardustObjects lists the registers and tables program declares, ok
// false when it is not a Stardust program (contract.go).
func stardustObjects(program string) (regs, tables []string, ok bool) {
	if program != sd.ProgramFA && program != sd.ProgramFE {
		return nil, nil, false
	}
	regs, tables = contractObjects(sd.Declarations(), program)
	return regs, tables, true
}

// stardustAction reports whether the contract gives table the action.
func stardustAction(table, action string) bool {
	return contractAction(sd.Declarations(), table, action)
}

// stardustRegSizes are the Stardust registers' sizes as the P4 sources
// declare them (Register<..>(SD_MAX_VOQS), (SD_MAX_FAS), (SD_MAX_PORTS),
// (SD_HIST_BUCKETS), (1)).
var stardustRegSizes = map[string]int{
	sd.RegCredit:       sd.MaxVOQs,
	sd.RegSeqOut:       sd.MaxFAs,
	sd.RegSeqIn:        sd.MaxFAs,
	sd.RegSpray:        sd.MaxFAs,
	sd.RegCreditRR:     sd.PortCount,
	sd.RegFCI:          sd.PortCount,
	sd.RegReachAge:     sd.PortCount,
	sd.RegLatHist:      sd.HistBuckets,
	sd.RegQHist:        sd.HistBuckets,
	sd.RegFCIThreshold: 1,
	sd.RegReasmTimeout: 1,
	sd.RegReasmDrops:   sd.MaxFAs,
}

// regSize is the number of entries register name has: the Stardust and
// ecmp registers' declared sizes, 512 for the others.
func regSize(name string) int {
	if n, ok := stardustRegSizes[name]; ok {
		return n
	}
	if n, ok := ecmpRegSizes[name]; ok { // ecmp.go
		return n
	}
	return 512
}

// stardustInitial is a register's state when bf_switchd starts: the
// reachability ages start at SD_AGE_MAX (no cell seen yet), everything
// else at 0.
func stardustInitial(name string) map[int]int64 {
	r := map[int]int64{}
	if name == sd.RegReachAge {
		for i := 0; i < sd.PortCount; i++ {
			r[i] = sd.AgeMax
		}
	}
	return r
}

// stardustBuffer reads a generator application's packet buffer
// (buffer_hex) for program: only the Stardust programs parse one; for the
// others the buffer is written and nothing here reads it (nil).
func stardustBuffer(program string, b []byte) (*sd.Cell, error) {
	if program != sd.ProgramFA && program != sd.ProgramFE {
		return nil, nil
	}
	_, c, err := sd.ParseGeneratorBuffer(b)
	if err != nil {
		return nil, err
	}
	if c.Kind > sd.KindAge {
		return nil, fmt.Errorf("cell kind %d (want 0 data, 1 credit, 2 reachability, 3 aging tick)", c.Kind)
	}
	return &c, nil
}
