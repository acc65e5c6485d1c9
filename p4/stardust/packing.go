package stardust

import (
	"fmt"
	"math"
)

// The packing formulas of §3.4 and App. B: how many clock cycles a switch's
// datapath spends on a stream of packets when it moves each packet on its
// own, chops each into cells, or packs the stream into full cells. They are
// closed-form, like the rest of the contract's formulas, so the packing
// recipe computes Fig. 3 and Fig. 8 from them on any lab (moved here from
// the simulated lab's cell-level model, which does not use them).

// Datapath is a switch's internal data path: WidthBytes wide, one word a
// clock at ClockHz, fed by Ports ports of PortBps whose frames carry
// WireGapBytes of preamble, delimiter and inter-frame gap on the wire
// (App. B: G = 20 B). §6.1.1 measures NetFPGA SUME designs of 4 x 10GE
// ports and a 32 B (256-bit) datapath at 150 MHz, with 64 B cells; §2.3 and
// Fig. 3 a 12.8 Tb/s device with a 256 B datapath at 1 GHz.
type Datapath struct {
	WidthBytes   int
	ClockHz      float64
	Ports        int
	PortBps      float64
	WireGapBytes int
	// CellBytes is a cell's size on the datapath and CellHeaderBytes the
	// part of it that is header (0 where the header travels beside the
	// data, as NetFPGA's AXI-Stream side-band metadata does).
	CellBytes       int
	CellHeaderBytes int
}

// Mode is how a datapath moves packets.
type Mode string

// The three datapaths of Fig. 8.
const (
	// ModePacketSwitch moves each packet on its own: ceil(S/W) words (App. B,
	// c = 1 cycle a word, a packet never shares a word).
	ModePacketSwitch Mode = "packet-switch"
	// ModePackedCells chops the stream of packets into full cells, a cell
	// holding the tail of one packet and the head of the next (§3.4).
	ModePackedCells Mode = "packed-cells"
	// ModeUnpackedCells chops each packet into cells on its own; its last
	// cell is padded (§3.4: one byte over a cell wastes almost half).
	ModeUnpackedCells Mode = "unpacked-cells"
)

// Validate says what is wrong with d.
func (d Datapath) Validate() error {
	if d.WidthBytes <= 0 || d.ClockHz <= 0 || d.Ports <= 0 || d.PortBps <= 0 || d.WireGapBytes < 0 {
		return fmt.Errorf("datapath %d B at %g Hz, %d ports of %g b/s, gap %d B: all must be positive", d.WidthBytes, d.ClockHz, d.Ports, d.PortBps, d.WireGapBytes)
	}
	if d.CellBytes <= d.CellHeaderBytes || d.CellHeaderBytes < 0 {
		return fmt.Errorf("cell of %d B with a %d B header: no room for data", d.CellBytes, d.CellHeaderBytes)
	}
	return nil
}

// Cycles is how many clock cycles the datapath spends moving the packets
// of sizes (bytes, in arrival order) in mode m.
func (d Datapath) Cycles(m Mode, sizes []int) int64 {
	w := int64(d.WidthBytes)
	words := func(b int64) int64 { return (b + w - 1) / w }
	payload := int64(d.CellBytes - d.CellHeaderBytes)
	cell := words(int64(d.CellBytes))
	var cycles, pending int64
	for _, s := range sizes {
		switch m {
		case ModePacketSwitch:
			cycles += words(int64(s))
		case ModeUnpackedCells:
			cycles += (int64(s) + payload - 1) / payload * cell
		case ModePackedCells:
			pending += int64(s)
			cycles += pending / payload * cell
			pending %= payload
		}
	}
	if pending > 0 {
		cycles += cell // the last, partial cell
	}
	return cycles
}

// Throughput is the fraction of line rate the datapath carries for the
// packets of sizes arriving back to back on all ports: the time they take
// on the wire over the time the datapath takes, at most 1.
func (d Datapath) Throughput(m Mode, sizes []int) float64 {
	var wire float64
	for _, s := range sizes {
		wire += float64(s+d.WireGapBytes) * 8
	}
	wireSec := wire / (float64(d.Ports) * d.PortBps)
	busy := float64(d.Cycles(m, sizes)) / d.ClockHz
	if busy == 0 {
		return 1
	}
	return math.Min(1, wireSec/busy)
}

// Parallelism is P of App. B (Eq. 3) generalised to cells: the datapaths
// (pipelines of one word a clock) needed to carry the packets of sizes at
// line rate, the cycles they need at line rate over the clock (Fig. 3).
func (d Datapath) Parallelism(m Mode, sizes []int) float64 {
	var wire float64
	for _, s := range sizes {
		wire += float64(s+d.WireGapBytes) * 8
	}
	wireSec := wire / (float64(d.Ports) * d.PortBps)
	return float64(d.Cycles(m, sizes)) / d.ClockHz / wireSec
}
