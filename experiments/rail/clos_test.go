package rail_test

import (
	"os"
	"path/filepath"
	"testing"

	"testbed/experiments/rail"
	"testbed/experiments/rail/topo"
	"testbed/experiments/recipetest"
	"testbed/simlab"
)

func startClos(t *testing.T, seed uint64) *simlab.Lab {
	t.Helper()
	lab, err := simlab.StartBench("rail-clos", simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

// link-qualify then rail-topology on the RAIL Clos bench, end to end:
// every one of its 16 links is qualified (10G, 40G and 100G optics), the
// stretched and dirty links come out as the optics make them, and the
// link table the first writes is what the second reads.
func TestQualifyAndTopologyOnTheClosBench(t *testing.T) {
	lab := startClos(t, 7)
	var s rail.QualifySummary
	res := recipetest.Run(t, lab, rail.NewQualify(), 7, &s, nil, "seconds=0.2", "front_from_names=true")
	if s.Partial || res.Status != "ok" {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	if len(s.Links) != 16 {
		t.Fatalf("%d links qualified, want 16", len(s.Links))
	}
	for n, h := range s.Links {
		t.Logf("%s: att %v/%v dB, %d of %d lost, LPER %.3g [%.3g, %.3g] %s", n, deref(h.AttenuationABDB), deref(h.AttenuationBADB), h.FramesLost, h.FramesSent, h.LPER, h.LPERLow, h.LPERHigh, h.Health)
		if h.AttenuationABDB == nil || h.FramesSent == 0 {
			t.Errorf("%s: not measured: %+v", n, h)
		}
	}
	// The dirty connector shows in the diagnostics of its direction: 7.5
	// dB more than its pod neighbour's 120 m (and 130 m more OM3), and in
	// its losses; so does the dispersion of the 510 m stretched link,
	// though its light is within 1.7 dB of the short links'.
	if d := *s.Links["t2-a2"].AttenuationABDB - *s.Links["t2-a1"].AttenuationABDB; d < 7.5 || d > 8.5 {
		t.Errorf("t2-a2 is %.2f dB worse than t2-a1, want 7.5 dB of connector and 0.46 dB of fibre", d)
	}
	// RAIL Fig. 5b: high attenuation is asymmetric, the dirty connector
	// being on one fibre of the pair; elsewhere the asymmetry is the VOA's
	// 1.2 dB insertion loss, on the a -> b fibre.
	if a := s.Links["t2-a2"].AsymmetryDB; a == nil || *a < 7.5+1.2-0.1 || *a > 7.5+1.2+0.1 {
		t.Errorf("t2-a2 asymmetry %v dB, want 8.7 (7.5 dirty connector, 1.2 VOA)", deref(a))
	}
	if a := s.Links["t2-a1"].AsymmetryDB; a == nil || *a < 1.1 || *a > 1.3 {
		t.Errorf("t2-a1 asymmetry %v dB, want the VOA's 1.2", deref(a))
	}
	// Both directions are tested: the dirty connector is on the a -> b
	// fibre only, so t2-a2 loses nothing b -> a. (t4-a4's return fibre is
	// as long but has no VOA: its 1.2 dB more light keeps it clean too, so
	// steep is the cliff.)
	for n, h := range s.Links {
		if h.FramesSentBA == 0 || h.FramesSentBA != h.FramesSent {
			t.Errorf("%s: b -> a sent %d frames, a -> b %d", n, h.FramesSentBA, h.FramesSent)
		}
	}
	if h := s.Links["t2-a2"]; h.FramesLostBA != 0 {
		t.Errorf("t2-a2 lost %d frames b -> a, where its connector is clean", h.FramesLostBA)
	}
	for _, n := range []string{"t2-a2", "t4-a4"} {
		if h := s.Links[n]; h.FramesLost == 0 || h.Health != "gray" {
			t.Errorf("%s: %+v, want losses (gray)", n, h)
		}
	}
	if d := *s.Links["t4-a4"].AttenuationABDB - *s.Links["t1-a1"].AttenuationABDB; d > 1.7 {
		t.Errorf("t4-a4 is %.2f dB worse than t1-a1 in light: 480 m of OM3 is 1.68 dB", d)
	}
	for _, n := range []string{"t1-a1", "c1-a1", "c2-a1", "c1-a4"} {
		if h := s.Links[n]; h.FramesLost != 0 {
			t.Errorf("%s lost frames: %+v", n, h)
		}
	}
	// c2's links run RS(528,514): their BERs come from the receiving
	// switch's FEC counters, read through the driver before and after the
	// test; links without FEC have none and say nothing.
	for n, h := range s.Links {
		fec := n[:2] == "c2"
		if (h.FEC != nil) != fec || h.FECNote != "" {
			t.Errorf("%s: FEC %+v, note %q", n, h.FEC, h.FECNote)
		}
		if fec && (h.FEC.Codewords == 0 || h.FEC.PreFEC < 0 || h.FEC.Uncorrectable != 0) {
			t.Errorf("%s: FEC %+v: codewords counted, no uncorrectable ones on a clean link", n, h.FEC)
		}
		if fec {
			t.Logf("%s: pre-FEC BER %.3g over %d codewords", n, h.FEC.PreFEC, h.FEC.Codewords)
		}
	}
	f, err := os.Open(filepath.Join(res.Dir, "data", "links.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := topo.ReadTable("links.csv", f)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Links) != 16 {
		t.Fatalf("link table has %d links", len(tab.Links))
	}
	rows := recipetest.ReadTable(t, res.Dir, "links")
	for _, r := range rows {
		if r["link"] == "t4-a4" && r["length_m"] != "510" {
			t.Errorf("t4-a4 length %q in the link table, want the inventory's 510", r["length_m"])
		}
	}
	var ts rail.Summary
	tres := recipetest.Run(t, lab, rail.NewTopology(), 7, &ts, nil, "links_file="+filepath.Join(res.Dir, "data", "links.csv"), "estimate=point")
	if tres.Status != "ok" {
		t.Fatalf("rail-topology: %s: %s", tres.Status, tres.Reason)
	}
	// The two gray links leave the most reliable class (1e-6) and only it;
	// every ToR pair keeps a path in it.
	t.Logf("classes %+v", ts.Classes)
	if ts.Links != 16 || ts.ToRs != 4 || ts.Aggs != 4 || ts.Cores != 2 || ts.Algorithm1Agrees == nil || !*ts.Algorithm1Agrees {
		t.Errorf("topology summary %+v", ts)
	}
	excluded := map[float64]int{}
	for _, c := range ts.Classes {
		excluded[c.Bound] = c.LinksExcluded
		if c.PairsConnected != 12 {
			t.Errorf("class %g joins %d ordered ToR pairs, want 12", c.Bound, c.PairsConnected)
		}
	}
	if excluded[1e-6] != 2 || excluded[1e-3] != 0 || excluded[0.1] != 0 {
		t.Errorf("links excluded per class %v, want 2 from 1e-6 only", excluded)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}
