package stardust

import (
	"math"
	"testing"
)

func netfpga() Datapath {
	// §6.1.1: 4 x 10GE, 256-bit datapath at 150 MHz, 64 B cells.
	return Datapath{WidthBytes: 32, ClockHz: 150e6, Ports: 4, PortBps: 10e9, WireGapBytes: 20, CellBytes: 64}
}

func repeat(s, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// A 65 B packet takes three 32 B words alone, and 65 B of a packed stream
// a little over two: at 150 MHz the packet switch carries 150e6/3 = 50
// Mpps of the 58.8 Mpps 4 x 10GE brings (85%), packed cells all of it;
// unpacked, two 64 B cells of two words each, 37.5 Mpps (64%).
func TestDatapathCycles(t *testing.T) {
	d := netfpga()
	p := repeat(65, 1000)
	if got := d.Cycles(ModePacketSwitch, p); got != 3000 {
		t.Errorf("packet switch: %d cycles, want 3000", got)
	}
	if got := d.Cycles(ModeUnpackedCells, p); got != 4000 {
		t.Errorf("unpacked: %d cycles, want 4000", got)
	}
	if got := d.Cycles(ModePackedCells, p); got != (65000+63)/64*2 {
		t.Errorf("packed: %d cycles, want %d", got, (65000+63)/64*2)
	}
	want := 150e6 / 3 / (40e9 / (8 * 85.0))
	if got := d.Throughput(ModePacketSwitch, p); math.Abs(got-want) > 1e-9 {
		t.Errorf("packet switch at 65 B: %.4f of line rate, want %.4f", got, want)
	}
	if got := d.Throughput(ModePackedCells, p); got != 1 {
		t.Errorf("packed at 65 B: %.4f of line rate, want 1", got)
	}
	// App. B's example: 64 B packets at 12.8 Tb/s need 19.05 packets a
	// clock at 1 GHz; a 256 B datapath moves one a clock.
	big := Datapath{WidthBytes: 256, ClockHz: 1e9, Ports: 1, PortBps: 12.8e12, WireGapBytes: 20, CellBytes: 256}
	if got := big.Parallelism(ModePacketSwitch, repeat(64, 100)); math.Abs(got-19.047) > 0.001 {
		t.Errorf("App. B parallelism for 64 B: %.3f, want 19.047", got)
	}
	// Packing 64 B packets four to a 256 B word: a quarter of that
	// (§2.3: "a factor of x4").
	if got := big.Parallelism(ModePackedCells, repeat(64, 100)); math.Abs(got-19.047/4) > 0.01 {
		t.Errorf("packed parallelism for 64 B: %.3f, want %.3f", got, 19.047/4)
	}
}
