package rail

import (
	"math"
	"testing"
)

func TestFECBERFromCounters(t *testing.T) {
	// 1e6 frames of 1518 B: (1526 x 8 x 257/256) bits over 5140 data bits
	// per codeword = 2,384,375.5: 2,384,376 codewords.
	got, err := fecBER(FECCounts{SymbolErrors: 5280, Uncorrectable: 2}, "rs528", 1_000_000, 1518)
	if err != nil {
		t.Fatal(err)
	}
	if got.Codewords != 2384376 {
		t.Errorf("codewords %d", got.Codewords)
	}
	bits := 2384376.0 * 5280
	if math.Abs(got.PreFEC/(5280/bits)-1) > 1e-12 || math.Abs(got.PostFECLow/(2*8/bits)-1) > 1e-12 {
		t.Errorf("%+v", got)
	}
	// A switch that counts codewords is believed.
	if got, _ := fecBER(FECCounts{Codewords: 1000, SymbolErrors: 1}, "rs544", 1, 64); got.PreFEC != 1/(1000*5440.0) {
		t.Errorf("%+v", got)
	}
	if _, err := fecBER(FECCounts{}, "none", 10, 64); err == nil {
		t.Error("no FEC, yet a BER")
	}
	if _, err := fecBER(FECCounts{SymbolErrors: -1}, "rs528", 10, 64); err == nil {
		t.Error("counters going backwards accepted")
	}
}
