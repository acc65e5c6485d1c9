package physics

import (
	"math"
	"testing"
)

func mustFibre(t *testing.T, name string) Fibre {
	f, err := FibreByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// reachM is the longest fibre (1 m steps) over which the link, with
// connectorDB of connectors, still has BER <= ber.
func reachM(t Transceiver, f Fibre, connectorDB, ber float64) float64 {
	lo, hi := 0.0, 100000.0
	ok := func(l float64) bool {
		return t.BER(t.TxPowerDBm()-connectorDB-t.FibrePenaltyDB(f, l)) <= ber
	}
	if !ok(lo) {
		return 0
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func TestDispersionPenaltyShape(t *testing.T) {
	om3, om4, os2 := mustFibre(t, "OM3"), mustFibre(t, "OM4"), mustFibre(t, "OS2")
	for _, name := range []string{"10GBASE-SR", "40GBASE-SR4", "25GBASE-SR", "100GBASE-SR4"} {
		tr := mustT(t, name)
		if p := tr.DispersionPenaltyDB(om3, 0); p != 0 {
			t.Errorf("%s: %g dB back to back", name, p)
		}
		prev := 0.0
		for l := 10.0; l <= 2000; l += 10 {
			p3, p4 := tr.DispersionPenaltyDB(om3, l), tr.DispersionPenaltyDB(om4, l)
			if p3 < prev || p3 <= 0 {
				t.Fatalf("%s: OM3 penalty %g dB at %g m after %g", name, p3, l, prev)
			}
			if !(p4 < p3) && !math.IsInf(p3, 1) {
				t.Fatalf("%s: OM4 (%g dB) no better than OM3 (%g dB) at %g m", name, p4, p3, l)
			}
			prev = p3
		}
		if !math.IsInf(prev, 1) {
			t.Errorf("%s: the eye is still open after 2 km of OM3 (%g dB)", name, prev)
		}
		if err := tr.Carries(os2); err == nil {
			t.Errorf("%s runs on OS2", name)
		}
	}
	// 850 nm light on multimode: D = -103 ps/(nm km) with the link
	// model's fibre (IEEE 802.3 cl. 52.14).
	if d := om3.DispersionPsNmKm(850); math.Abs(d+103) > 1 {
		t.Errorf("D(850 nm) = %g ps/(nm km)", d)
	}
	lr := mustT(t, "10GBASE-LR")
	if err := lr.Carries(om4); err == nil {
		t.Error("10GBASE-LR runs on OM4")
	}
	// Near λ0 a DFB laser's pulse hardly spreads: 10 km cost it
	// attenuation, not eye.
	if p := lr.DispersionPenaltyDB(os2, 10000); p <= 0 || p > 0.05 {
		t.Errorf("10GBASE-LR: %g dB dispersion penalty after 10 km of OS2", p)
	}
}

// At the reach each standard promises, over its fibre and with its
// connector allowance (1.5 dB: cl. 52.14, 86.10, 95.11), a typical module
// meets the standard's BER; and the multimode links end where the eye
// closes, long before their power budget is spent on attenuation: the
// mechanism RAIL's stretch experiments meet (§7.1: "complex dispersion
// effects").
func TestNominalReachMetAndDispersionLimits(t *testing.T) {
	for _, c := range []struct {
		tr, fibre string
		nominalM  float64
		ber       float64 // the clause's BER objective
	}{
		{"10GBASE-SR", "OM3", 300, 1e-12},   // cl. 52.14 Table 52-14
		{"10GBASE-SR", "OM4", 400, 1e-12},   // cl. 52.14 (OM4 400 m)
		{"40GBASE-SR4", "OM3", 100, 1e-12},  // cl. 86.10 Table 86-12
		{"40GBASE-SR4", "OM4", 150, 1e-12},  // cl. 86.10 Table 86-12
		{"100GBASE-SR4", "OM3", 70, 5e-5},   // cl. 95.11 Table 95-11 (BER 5e-5 before RS-FEC)
		{"100GBASE-SR4", "OM4", 100, 5e-5},  // cl. 95.11 Table 95-11
		{"10GBASE-LR", "OS2", 10000, 1e-12}, // cl. 52.14 Table 52-16
	} {
		tr, f := mustT(t, c.tr), mustFibre(t, c.fibre)
		r := reachM(tr, f, 1.5, c.ber)
		t.Logf("%s on %s: BER %g up to %.0f m (nominal %.0f m)", c.tr, c.fibre, c.ber, r, c.nominalM)
		if r < c.nominalM {
			t.Errorf("%s on %s: BER %g only up to %.0f m, the standard promises %.0f m", c.tr, c.fibre, c.ber, r, c.nominalM)
		}
		if f.Multimode {
			margin := tr.TxPowerDBm() - 1.5 - rxFor(tr, c.ber)
			if f.LossDB(r) > margin/2 {
				t.Errorf("%s on %s: at the %.0f m reach attenuation is %.1f dB of a %.1f dB margin: not dispersion-limited", c.tr, c.fibre, r, f.LossDB(r), margin)
			}
		}
	}
}

// rxFor is the received power at which the BER is ber.
func rxFor(tr Transceiver, ber float64) float64 {
	lo, hi := -40.0, 10.0
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if tr.BER(mid) > ber {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
