package tofino

import "testbed/p4/ecmp"

// The ecmp program (p4/ecmp) on a simulated switch: bf_switchd running
// ecmp answers for the registers and tables its contract declares, the
// flow registers MaxFlows entries each, and a table takes the actions the
// contract gives it. Its generator applications run at their period, as a
// Stardust program's do (not the line-rate path of the LinkGuardian
// programs). When switches running it are joined by fibres, the dataplane
// runs the packet fabric behind them (ecmp_dp.go).

func isECMP(program string) bool { return program == ecmp.Program }

// ecmpObjects lists the registers and tables program declares, ok false
// when it is not ecmp (contract.go).
func ecmpObjects(program string) (regs, tables []string, ok bool) {
	if !isECMP(program) {
		return nil, nil, false
	}
	regs, tables = contractObjects(ecmp.Declarations(), program)
	return regs, tables, true
}

// ecmpAction reports whether the contract gives table the action.
func ecmpAction(table, action string) bool {
	return contractAction(ecmp.Declarations(), table, action)
}

// ecmpRegSizes are the flow registers' sizes as the contract gives them
// (Register<bit<32>, bit<8>>(MaxFlows)).
var ecmpRegSizes = map[string]int{
	ecmp.RegFlowSent:  ecmp.MaxFlows,
	ecmp.RegFlowRcvd:  ecmp.MaxFlows,
	ecmp.RegFlowFirst: ecmp.MaxFlows,
	ecmp.RegFlowLast:  ecmp.MaxFlows,
}

// ecmpGen is an ecmp application's packet buffer: the headers its frames
// carry before gen_flow rewrites them. ip false: no buffer was written,
// so the frames are not IPv4 and the program's parser leaves them to be
// dropped; they are generated at their period all the same.
type ecmpGen struct {
	ip  bool
	gen ecmp.Generator
}

// ecmpBuffer reads a generator application's packet buffer for program
// (given false: pktgen.start had no buffer_hex); nil for the other
// programs. The frame size the buffer's IPv4 length gives is not checked
// against pkt_len: the hardware sends pkt_len bytes whatever the headers
// say.
func ecmpBuffer(program string, b []byte, given bool) (*ecmpGen, error) {
	if !isECMP(program) {
		return nil, nil
	}
	if !given {
		return &ecmpGen{}, nil
	}
	g, _, err := ecmp.ParseGeneratorBuffer(b)
	if err != nil {
		return nil, err
	}
	return &ecmpGen{ip: true, gen: g}, nil
}
