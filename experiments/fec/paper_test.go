package fec

import (
	"math"
	"testing"
)

// The closed forms against numbers worked by hand from IEEE 802.3 and the
// paper: T_acc = 5280 b / 25.78125 GBd = 204.8 ns; striped over 4 lanes
// 51.2 ns; RS(544,514) on one 53.125 Gb/s lane 102.4 ns. The worst
// cut-through offset at 25G leaves 8 header bytes (at 257/256) and 140
// parity bits in the first codeword: 7.92 ns + 204.8 + 2 x 15 = 242.72 ns.
func TestPaperClosedForms(t *testing.T) {
	for _, c := range []struct {
		gbps  int
		fec   string
		tAcc  float64
		ctMax float64
	}{
		{25, "rs528", 204.8, (8*8*257.0/256+140)/25.78125 + 204.8 + 30},
		{100, "rs528", 51.2, (8*8*257.0/256+140)/(4*25.78125) + 51.2 + 30},
		{50, "rs544", 102.4, (8*8*257.0/256+300)/53.125 + 102.4 + 62},
	} {
		p, err := phyOf(c.gbps, c.fec)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.TAcc()-c.tAcc) > 1e-9 {
			t.Errorf("%dG %s: T_acc %.4f, want %.4f", c.gbps, c.fec, p.TAcc(), c.tAcc)
		}
		pr, ok := p.Predict(64, false)
		if !ok || math.Abs(pr.MaxNs-c.ctMax) > 1e-9 {
			t.Errorf("%dG %s: cut-through worst %.4f, want %.4f", c.gbps, c.fec, pr.MaxNs, c.ctMax)
		}
		// Case A at offset 0: a whole codeword and one decode.
		if got := p.paperNs(0, 64, false); math.Abs(got-(c.tAcc+p.TDec)) > 1e-9 {
			t.Errorf("%dG %s: offset 0 %.4f, want T_acc + T_dec", c.gbps, c.fec, got)
		}
	}
	if _, ok := (PHY{FEC: "fc", CodeBits: 2112, TDec: math.NaN()}).Predict(64, false); ok {
		t.Error("a prediction for FC-FEC, which the paper does not analyse")
	}
	if _, err := phyOf(50, "rs528"); err == nil {
		t.Error("50G RS(528,514) accepted: a 50G RS port runs RS(544,514)")
	}
}
