package stardust_test

import (
	"math"
	"strconv"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
)

// Fig. 10b on a small fabric: flows between one pair of hosts beside four
// long flows from every other host. No flow beats its size at the port
// rate; Stardust loses no cell, and its credits keep the other hosts'
// long flows out of the pair's way, so its flows finish far nearer that
// bound than the packet fabric's, whose ECMP and shallow buffers queue
// and drop them behind the long flows.
func TestWebFCTFig10b(t *testing.T) {
	var s stardust.WebFCTSummary
	res := runOffline(t, stardust.NewWebFCT(), &s, "fas=6", "flows=10", "max_flow_mb=0.3", "warmup=200us")
	if !s.ModelOnly || s.Partial || len(s.Fabrics) != 2 {
		t.Fatalf("summary %+v", s)
	}
	sd, pk := s.Fabrics["stardust"], s.Fabrics["packet"]
	if sd.Finished != 10 || pk.Finished != 10 || sd.Lost != 0 {
		t.Errorf("stardust %+v, packet %+v", sd, pk)
	}
	if pk.Lost == 0 || pk.MeanSlowdown < 2*sd.MeanSlowdown || pk.MaxFCTUpTo1MB < sd.MaxFCTUpTo1MB {
		t.Errorf("the packet fabric did no worse than Stardust: stardust %+v, packet %+v", sd, pk)
	}
	rows := recipetest.ReadTable(t, res.Dir, "fct_flows")
	if len(rows) != 20 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for _, r := range rows {
		fct, ideal := num(t, r["fct_ms"]), num(t, r["ideal_ms"])
		if fct < ideal {
			t.Errorf("%s flow %s of %s B: FCT %.4f ms under its size at the port rate, %.4f ms", r["fabric"], r["flow"], r["bytes"], fct, ideal)
		}
		if math.Abs(num(t, r["slowdown"])-fct/ideal) > 1e-9 {
			t.Errorf("row %v: the slowdown is not FCT over ideal", r)
		}
	}
	recipetest.CheckReport(t, res.Dir, "fig10b-fct")
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}
