package stardust_test

import (
	"context"
	"strconv"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
	sd "testbed/p4/stardust"
)

// stardust-permutation on the Stardust bench: every FA sends at its host
// port's line rate to another FA's and receives one flow, through the
// switches' tables, credits and spraying. One flow needs all four of its
// FA's 25 Gb/s links, so only spraying every frame over them (§5.3)
// carries it at line rate: the flows measured at the destinations' host
// ports are all within the generators' pacing of line rate, none is
// lost, and every destination receives from its one source. ECMP (the
// model's packet fabric at the bench's shape) hashes each flow onto one
// link: a quarter of it. The switches hold none of the run's entries
// afterwards.
func TestPermutationOnTheBench(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test does); TestFabricOnTheBenchInterrupted covers the bring-up under it")
	}
	lab := startStardustBench(t, 3)
	var s stardust.PermutationSummary
	res := recipetest.Run(t, lab, stardust.NewPermutation(), 3, &s, nil, "bench_measure=50us", "bench_warmup=20us", "bench_drain=500us", "measure=1ms", "warmup=200us")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.ModelOnly || s.MeasuredOn != "bench" || s.PacketFrom != "model" || s.Partial || len(s.Fabrics) != 2 {
		t.Fatalf("summary %+v", s)
	}
	st, pk := s.Fabrics["stardust"], s.Fabrics["packet"]
	// Within 1%: a frame or two at the window's edges is 0.2% of 50 us
	// (the simulated host port counts a released frame at once).
	if st.Flows != 8 || st.MinGbps < 99 || st.MinGbps > 101 || st.ShareAt94 != 1 || st.Jain < 0.9999 || st.Lost != 0 || s.CellsLost != 0 {
		t.Errorf("stardust on the bench: %+v, want every flow at the 100 Gb/s line rate and nothing lost", st)
	}
	if pk.Flows != 8 || pk.MeanUtilisation > 0.25 || pk.MeanUtilisation < 0.2 {
		t.Errorf("ECMP at the bench's shape: %+v, want each flow on one 25 Gb/s link", pk)
	}
	srcs, dsts := map[string]bool{}, map[string]bool{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "permutation_flows") {
		if r["fabric"] != "stardust" {
			continue
		}
		if r["src_port"] == r["dst_port"] || srcs[r["src_port"]] || dsts[r["dst_port"]] {
			t.Errorf("flow %s -> %s: not a derangement of the FAs", r["src_port"], r["dst_port"])
		}
		srcs[r["src_port"]], dsts[r["dst_port"]] = true, true
		if u, err := strconv.ParseFloat(r["utilisation"], 64); err != nil || u < 0.99 {
			t.Errorf("flow %s -> %s: utilisation %q", r["src_port"], r["dst_port"], r["utilisation"])
		}
	}
	if len(dsts) != 8 {
		t.Errorf("%d destinations, want 8", len(dsts))
	}
	recipetest.CheckReport(t, res.Dir, "fig10a-permutation")
	fa := openSwitch(t, lab, "fa5")
	for _, tb := range []string{sd.TableSpray, sd.TableGenFlow, sd.TableCreditTo} {
		if es, err := fa.Entries(context.Background(), tb); err != nil || len(es) != 0 {
			t.Errorf("fa5's %s after the run: %d entries, %v", tb, len(es), err)
		}
	}
}
