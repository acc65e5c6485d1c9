package rail_test

import (
	"math"
	"testing"

	"testbed/experiments/rail"
	"testbed/experiments/recipetest"
	"testbed/simlab"
	"testbed/simlab/physics"
)

// modelReachM is, independently of the recipe, where the optics model
// puts a frame loss of bound on the bench's spools: 2.7 dB of patch
// cords, VOA insertion loss and connectors (simlab/lab.go) plus the
// fibre's loss and dispersion penalty.
func modelReachM(t *testing.T, tr, fec string, bound float64) float64 {
	x, err := physics.TransceiverByName(tr)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := physics.FECByName(fec)
	om3, _ := physics.FibreByName("OM3")
	lo, hi := 0.0, 2000.0
	for hi-lo > 0.01 {
		mid := (lo + hi) / 2
		if physics.FrameLossProbability(x, f, x.TxPowerDBm()-2.7-x.FibrePenaltyDB(om3, mid), 1518) > bound {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}

// rail-stretch on the simulated stretch bench: per transceiver the reach
// grows with the bound, lies past the standard's, FEC stretches 100G
// further, and the reach the spools give is where the optics model puts
// the crossing, to within the spools' spacing.
func TestStretchOnTheSimulatedBench(t *testing.T) {
	lab, err := simlab.StartBench("rail-stretch", simlab.Options{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	var s rail.StretchSummary
	res := recipetest.Run(t, lab, rail.NewStretch(), 11, &s, nil, "seconds=0.2", "margin_seconds=0.1")
	if s.Partial || res.Status != "ok" {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	if len(s.Groups) != 4 {
		t.Fatalf("groups %v", s.Groups)
	}
	for k, g := range s.Groups {
		prev := 0.0
		for _, b := range []string{"1e-08", "1e-06", "1e-03"} {
			r := g.Reach[b]
			t.Logf("%s %s: %+v reach %v [%v, %v]", k, b, r.Method, deref(r.ReachM), deref(r.LowM), deref(r.HighM))
			if r.ReachM == nil {
				t.Errorf("%s: no reach at %s: %+v", k, b, r)
				continue
			}
			if *r.ReachM < prev || *r.ReachM <= *g.NominalM || (r.LowM != nil && *r.ReachM < *r.LowM) || *r.ReachM > *r.HighM {
				t.Errorf("%s at %s: reach %.1f m (previous bound %.1f, nominal %.0f, bracket %v-%v)", k, b, *r.ReachM, prev, *g.NominalM, *r.LowM, *r.HighM)
			}
			prev = *r.ReachM
		}
		// 1e-3 is measured on both sides with many frames: the estimate
		// is where the model crosses, within a few metres.
		want := modelReachM(t, g.Transceiver, g.FEC, 1e-3)
		if got := *g.Reach["1e-03"].ReachM; math.Abs(got-want) > 4 {
			t.Errorf("%s: 1e-3 reach %.1f m, the optics model crosses at %.1f m", k, got, want)
		}
	}
	// Fig. 11c: at the standard's reach the added-attenuation sweep finds
	// a margin that grows with the bound; RS-FEC's is the larger.
	for k, g := range s.Groups {
		if g.MarginSpoolM == nil || *g.MarginSpoolM != *g.NominalM {
			t.Errorf("%s: margin swept on %v, want the %v m spool", k, g.MarginSpoolM, *g.NominalM)
			continue
		}
		prev := 0.0
		for _, b := range []string{"1e-08", "1e-06", "1e-03"} {
			m := g.Margin[b]
			if m.ReachM == nil || *m.ReachM < prev || *m.ReachM < 3 {
				t.Errorf("%s: margin at %s %+v after %.2f dB", k, b, m, prev)
				continue
			}
			prev = *m.ReachM
		}
	}
	nf, rs := s.Groups["100GBASE-SR4_none_OM3"], s.Groups["100GBASE-SR4_rs528_OM3"]
	if *rs.Margin["1e-06"].ReachM <= *nf.Margin["1e-06"].ReachM+1 {
		t.Errorf("RS(528,514) margin %v dB, FEC off %v dB", *rs.Margin["1e-06"].ReachM, *nf.Margin["1e-06"].ReachM)
	}
	if *rs.Reach["1e-06"].ReachM <= *nf.Reach["1e-06"].ReachM {
		t.Errorf("RS(528,514) does not stretch 100GBASE-SR4: %v vs %v m", *rs.Reach["1e-06"].ReachM, *nf.Reach["1e-06"].ReachM)
	}
	recipetest.CheckReport(t, res.Dir, "lper-vs-added-attenuation", "lper-vs-length", "reach")
	if rows := recipetest.ReadTable(t, res.Dir, "reach"); len(rows) != 12 {
		t.Errorf("%d reach rows, want 4 groups x 3 bounds", len(rows))
	}
}
