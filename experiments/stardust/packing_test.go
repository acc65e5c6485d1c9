package stardust_test

import (
	"math"
	"strconv"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
)

// Fig. 8a's datapath (32 B at 150 MHz, 4 x 10GE, 64 B cells): packed cells
// carry at least what the packet switch and unpacked cells do at every
// size; at 65 B the packet switch takes three words a packet, 150e6/3 of
// the 58.8 Mpps 4 x 10GE brings (85%), and packed cells carry line rate,
// so the gain is the paper's 15%. Unpacked cells, two cells of two words
// a 65 B packet, carry 64%. Fig. 3: packing 64 B packets into 256 B
// words needs a quarter of the datapaths (§2.3).
func TestPackingFig8(t *testing.T) {
	var s stardust.PackingSummary
	res := runOffline(t, stardust.NewPacking(), &s)
	if !s.ModelOnly || s.Partial {
		t.Fatalf("summary %+v", s)
	}
	by := map[string]map[int]float64{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "packing_throughput") {
		if by[r["mode"]] == nil {
			by[r["mode"]] = map[int]float64{}
		}
		n, _ := strconv.Atoi(r["packet_bytes"])
		f, _ := strconv.ParseFloat(r["line_rate_fraction"], 64)
		by[r["mode"]][n] = f
	}
	packed, sw, un := by["packed-cells"], by["packet-switch"], by["unpacked-cells"]
	if len(packed) != s.Sizes || len(sw) != s.Sizes || len(un) != s.Sizes {
		t.Fatalf("rows per mode: %d %d %d, want %d", len(packed), len(sw), len(un), s.Sizes)
	}
	for n, f := range packed {
		if f < sw[n]-1e-12 || f < un[n]-1e-12 {
			t.Errorf("%d B: packed %.4f below packet switch %.4f or unpacked %.4f", n, f, sw[n], un[n])
		}
	}
	want := 150e6 / 3 / (40e9 / (8 * 85.0))
	if math.Abs(sw[65]-want) > 1e-9 || packed[65] != 1 || math.Abs(un[65]-want*3/4) > 1e-9 {
		t.Errorf("65 B: packet switch %.4f (want %.4f), packed %.4f (want 1), unpacked %.4f (want %.4f)", sw[65], want, packed[65], un[65], want*3/4)
	}
	if s.GainPacketSwitchAtBytes != 65 || math.Abs(s.PackedGainOverPacketSwitch-(1-want)) > 1e-9 {
		t.Errorf("gain over the packet switch %.4f at %d B, want %.4f at 65 B", s.PackedGainOverPacketSwitch, s.GainPacketSwitchAtBytes, 1-want)
	}
	if math.Abs(s.Fig3Factor-4) > 1e-9 {
		t.Errorf("Fig. 3 factor at 64 B %.3f, want 4", s.Fig3Factor)
	}
	recipetest.CheckReport(t, res.Dir, "fig8a-throughput", "fig3-parallelism")
}

// A bad datapath is refused before the run, saying what is wrong.
func TestPackingRefusesBadCells(t *testing.T) {
	r := stardust.NewPacking()
	params := []string{"cell_bytes=8", "cell_header_bytes=8"}
	_, err := planWith(t, r, params...)
	if err == nil {
		t.Fatal("a cell all header accepted")
	}
	if got := err.Error(); !contains(got, "no room for data") {
		t.Errorf("error %q does not say what is wrong", got)
	}
}
