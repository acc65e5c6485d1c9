package tofino

import (
	"testing"

	"testbed/simlab/world"
)

// The LinkGuardian links' FEC delay: none without FEC; with RS(528,514) at
// 25G, a 1518 B frame arrives whole after its last codeword is in and
// decoded: on average about half a codeword's accumulation (204.8 / 2 ns)
// plus the decodes of the codewords it spans (15 ns each, 3 or 4 of them),
// less what the frame's own serialization already covered.
func TestFECDelayOfBenchLinks(t *testing.T) {
	sw := &Tofino{name: "sw", dp: NewDataplane(world.New(1))}
	none := &simPort{dev: 1, gbps: 25, fec: "BF_FEC_TYP_NONE"}
	if d := sw.fecDelay(none, 1518); d != 0 {
		t.Errorf("no FEC: %v", d)
	}
	rs := &simPort{dev: 1, gbps: 25, fec: "BF_FEC_TYP_RS"}
	d := sw.fecDelay(rs, 1518).Seconds() * 1e9
	if d < 204.8/2 || d > 204.8+4*15 {
		t.Errorf("25G RS(528,514), 1518 B: FEC adds %.1f ns on average", d)
	}
	rs100 := &simPort{dev: 1, gbps: 100, fec: "BF_FEC_TYP_RS"}
	if d100 := sw.fecDelay(rs100, 1518).Seconds() * 1e9; d100 >= d/2 || d100 <= 0 {
		t.Errorf("100G RS(528,514): %.1f ns, 25G %.1f ns; striping over 4 lanes should cut it", d100, d)
	}
	t.Logf("mean FEC delay, 1518 B: 25G RS(528,514) %.1f ns", d)
}
