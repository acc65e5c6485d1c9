package stardust_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
	"testbed/p4/ecmp"
	sd "testbed/p4/stardust"
	"testbed/simlab"
)

// stardust-permutation on the Stardust bench: every FA sends at its host
// port's line rate to another FA's and receives one flow, through the
// switches' tables, credits and spraying. One flow needs all four of its
// FA's 25 Gb/s links, so only spraying every frame over them (§5.3)
// carries it near line rate: the flows measured at the destinations' host
// ports are all within a few percent of it (what the credits and
// reachability cells leave of links with no speed-up), none is lost, and every destination receives from its one source. Then the same
// switches run p4/ecmp, each host port's traffic carried as four flows of
// a quarter of its rate, each hashed onto one of its ToR's four 25 Gb/s
// uplinks: the uplinks the flows take, predicted here from the program's
// hash (ecmp.FlowSlot over the 5-tuples the run records) and the slots'
// round robin, give each pair 25 Gb/s per distinct uplink, and flows that
// share one split it. Afterwards every switch runs its Stardust program
// again, holding none of the run's entries.
func TestPermutationOnTheBench(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test-long does); TestFabricOnTheBenchInterrupted covers the bring-up under it")
	}
	recipetest.Long(t)
	lab := startStardustBench(t, 3)
	var s stardust.PermutationSummary
	res := recipetest.Run(t, lab, stardust.NewPermutation(), 3, &s, nil, "bench_measure=50us", "bench_warmup=20us", "bench_drain=500us", "measure=1ms", "warmup=200us", "packet_bytes=1500", "bench_ecmp_flows=4")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.ModelOnly || s.MeasuredOn != "bench" || s.PacketFrom != "bench" || s.Partial || len(s.Fabrics) != 2 {
		t.Fatalf("summary %+v", s)
	}
	st, pk := s.Fabrics["stardust"], s.Fabrics["packet"]
	// The credits and reachability cells take their place on the links
	// the data fills (a 64 B credit per 4 KB, one reachability cell per
	// link every 10 us: about 2%), and the bench's fabric has no speed-up
	// (four 25 Gb/s links for a 100 Gb/s port), so the FAs' fabric ports
	// reach their FCI threshold and every flow runs a few percent under
	// line rate: 96-99 Gb/s, as the model's 0.970, never at it.
	if st.Flows != 8 || st.MinGbps < 96 || st.MinGbps > 99 || st.ShareAt94 != 1 || st.Jain < 0.999 || st.Lost != 0 || s.CellsLost != 0 {
		t.Errorf("stardust on the bench: %+v, want every flow at 96-99 Gb/s (line rate less the control cells' share) and nothing lost", st)
	}
	checkECMPCollisions(t, lab, res.Dir, pk)
	srcs, dsts := map[string]bool{}, map[string]bool{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "permutation_flows") {
		if r["fabric"] != "stardust" {
			continue
		}
		if r["src_port"] == r["dst_port"] || srcs[r["src_port"]] || dsts[r["dst_port"]] {
			t.Errorf("flow %s -> %s: not a derangement of the FAs", r["src_port"], r["dst_port"])
		}
		srcs[r["src_port"]], dsts[r["dst_port"]] = true, true
		if u, err := strconv.ParseFloat(r["utilisation"], 64); err != nil || u < 0.96 || u > 0.99 {
			t.Errorf("flow %s -> %s: utilisation %q", r["src_port"], r["dst_port"], r["utilisation"])
		}
	}
	if len(dsts) != 8 {
		t.Errorf("%d destinations, want 8", len(dsts))
	}
	recipetest.CheckReport(t, res.Dir, "fig10a-permutation")
	fa := openSwitch(t, lab, "fa5")
	if prog, err := fa.Program(context.Background()); err != nil || prog != sd.ProgramFA {
		t.Errorf("fa5 runs %q after the run (%v), want %s back", prog, err, sd.ProgramFA)
	}
	for _, tb := range []string{sd.TableSpray, sd.TableGenFlow, sd.TableCreditTo} {
		if es, err := fa.Entries(context.Background(), tb); err != nil || len(es) != 0 {
			t.Errorf("fa5's %s after the run: %d entries, %v", tb, len(es), err)
		}
	}
}

// checkECMPCollisions predicts, from the flows' 5-tuples in ecmp_flows,
// which of its ToR's four uplinks each flow took (ecmp.FlowSlot, the slots
// written round robin over the uplinks), and holds the packet bench's
// result to it: a pair gets 25 Gb/s per distinct uplink (the mean
// utilisation is their mean over four).
func checkECMPCollisions(t *testing.T, lab *simlab.Lab, dir string, pk stardust.PermutationPoint) {
	t.Helper()
	type key struct {
		src  string
		link int
	}
	on := map[key][]map[string]string{}
	links := map[string]map[int]bool{}
	for _, r := range recipetest.ReadTable(t, dir, "ecmp_flows") {
		d, _ := lab.Inventory().Device(r["src"])
		id, _ := strconv.Atoi(d.Options["stardust_id"])
		dst, _ := strconv.Atoi(r["dst_subnet"])
		sport, _ := strconv.Atoi(r["udp_src_port"])
		// The generator application is the recipe's (4), its source
		// address ecmp.SourceAddr's.
		link := ecmp.FlowSlot(ecmp.SourceAddr(id, 4), ecmp.HostAddr(dst), 17, uint16(sport), ecmp.FlowDstPort) % 4
		on[key{r["src"], link}] = append(on[key{r["src"], link}], r)
		if links[r["src"]] == nil {
			links[r["src"]] = map[int]bool{}
		}
		links[r["src"]][link] = true
	}
	if len(links) != 8 {
		t.Fatalf("ecmp_flows has flows from %d ToRs, want 8", len(links))
	}
	want := 0.0
	for _, l := range links {
		want += float64(len(l)) / 4 / 8
	}
	if want == 1 {
		t.Fatalf("no two flows of a pair share an uplink with this seed: the test would not see ECMP's collisions")
	}
	if pk.Flows != 8 || math.Abs(pk.MeanUtilisation-want) > 0.01 {
		t.Errorf("ECMP on the packet-switched bench: mean utilisation %.4f, the flows' hashes give %.4f (%+v)", pk.MeanUtilisation, want, pk)
	}
	// Pair by pair: 25 Gb/s of 1500 B frames per distinct uplink over
	// the 50 us window (the generator spreads its frames over the flows'
	// slots at random per frame, so a flow alone offers about, not
	// exactly, a link's worth: a pair may fall a little short).
	link := 25e9 * 50e-6 / float64((1500+24)*8)
	got := map[string]float64{}
	for _, fs := range on {
		for _, r := range fs {
			w, _ := strconv.ParseFloat(r["window_received"], 64)
			got[r["src"]] += w
		}
	}
	for src, l := range links {
		if r := got[src] / (link * float64(len(l))); r < 0.9 || r > 1.03 {
			t.Errorf("%s: %.0f frames in the window over %d distinct uplinks, %.2f of %.1f frames per uplink", src, got[src], len(l), r, link)
		}
	}
}

// With bench_packet_fabric=model the packet fabric's row is the model's
// at the bench's shape (Reno-like windows over ECMP): each flow on one of
// its FA's four 25 Gb/s links, a quarter of its port, and no switch is
// restarted with p4/ecmp.
func TestPermutationPacketFabricFromTheModel(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test does)")
	}
	lab := startStardustBench(t, 3)
	var s stardust.PermutationSummary
	res := recipetest.Run(t, lab, stardust.NewPermutation(), 3, &s, nil, "bench_measure=50us", "bench_warmup=20us", "bench_drain=500us", "measure=1ms", "warmup=200us", "bench_packet_fabric=model")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.MeasuredOn != "bench" || s.PacketFrom != "model" || s.Partial {
		t.Fatalf("summary %+v", s)
	}
	if pk := s.Fabrics["packet"]; pk.Flows != 8 || pk.MeanUtilisation > 0.25 || pk.MeanUtilisation < 0.2 {
		t.Errorf("ECMP in the model at the bench's shape: %+v, want each flow on one 25 Gb/s link", pk)
	}
	ev, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ev), "built "+ecmp.Program) {
		t.Errorf("a switch was restarted with %s", ecmp.Program)
	}
}
