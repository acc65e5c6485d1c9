package stardust_test

import (
	"math"
	"strconv"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
)

// Fig. 10a on a fabric with no speed-up: Stardust's credits and spraying
// give every flow the same share, what the links carry after cell
// headers (512 of 528 B, 0.970: the capacity, not a constant), with no
// cell lost; the packet fabric's ECMP puts flows on the same links and
// its shallow buffers drop, so its mean is far lower and its flows
// uneven. The rows' utilisations agree with the summary's mean.
func TestPermutationFig10a(t *testing.T) {
	var s stardust.PermutationSummary
	res := runOffline(t, stardust.NewPermutation(), &s, "fas=8", "measure=3ms", "warmup=500us")
	if !s.ModelOnly || s.Partial || len(s.Fabrics) != 2 {
		t.Fatalf("summary %+v", s)
	}
	sd, pk := s.Fabrics["stardust"], s.Fabrics["packet"]
	data := 512.0 / (512 + 16)
	if s.CellsLost != 0 || math.Abs(sd.MeanUtilisation-data) > 0.01 || sd.Jain < 0.999 || sd.Flows != 32 {
		t.Errorf("stardust: %+v (link data capacity %.4f)", sd, data)
	}
	if pk.Lost == 0 || pk.MeanUtilisation > sd.MeanUtilisation-0.2 || pk.Jain > 0.9 {
		t.Errorf("packet fabric: %+v", pk)
	}
	var sum float64
	n := 0
	for _, r := range recipetest.ReadTable(t, res.Dir, "permutation_flows") {
		if r["fabric"] == "stardust" {
			u, _ := strconv.ParseFloat(r["utilisation"], 64)
			sum += u
			n++
		}
	}
	if n != 32 || math.Abs(sum/float64(n)-sd.MeanUtilisation) > 1e-9 {
		t.Errorf("%d Stardust rows, mean %.4f, summary %.4f", n, sum/float64(n), sd.MeanUtilisation)
	}
	recipetest.CheckReport(t, res.Dir, "fig10a-permutation")
}

// With 256 B cells the cell headers take more of the links (256 of 272
// B), and Stardust's flows carry that less: the utilisation is the
// cells', not a number written in.
func TestPermutationFollowsTheCellOverhead(t *testing.T) {
	var s stardust.PermutationSummary
	runOffline(t, stardust.NewPermutation(), &s, "fas=8", "measure=2ms", "warmup=500us", "cell_bytes=256")
	if got, want := s.Fabrics["stardust"].MeanUtilisation, 256.0/272; math.Abs(got-want) > 0.01 {
		t.Errorf("mean utilisation %.4f with 256 B cells, links carry %.4f", got, want)
	}
}

// Interrupted after its first fabric, the run leaves a verifiable bundle
// whose summary holds Stardust's result and says it is partial.
func TestPermutationInterruptedLeavesAReadableBundle(t *testing.T) {
	var s stardust.PermutationSummary
	interrupted(t, stardust.NewPermutation(), &s, "fas=4", "measure=1ms", "warmup=100us")
	if !s.Partial || len(s.Fabrics) != 1 || s.Fabrics["stardust"].Flows == 0 {
		t.Errorf("summary of the interrupted run: %+v", s)
	}
}

// Two FAs of many ports: a random permutation almost never sends every
// port across, and the recipe still plans and runs one that does.
func TestPermutationFewFAsManyPorts(t *testing.T) {
	var s stardust.PermutationSummary
	runOffline(t, stardust.NewPermutation(), &s, "fas=2", "ports_per_fa=16", "fes=4", "measure=200us", "warmup=50us")
	if s.Fabrics["stardust"].Flows != 32 || s.Fabrics["stardust"].MeanUtilisation < 0.9 {
		t.Errorf("summary %+v", s)
	}
}
