package stardust_test

import (
	"math"
	"strings"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
	"testbed/orchestrator"
)

// Fig. 8b on the simple IMIX: packed cells carry the mix at line rate at
// the paper's 150 MHz, the packet switch and unpacked cells only at a
// higher clock; below line rate a datapath's throughput is its clock over
// the cycles the stream takes, so it grows in proportion to the clock. The
// stream is drawn from the mix: its size counts are near 7:4:1.
func TestPackingMixFig8b(t *testing.T) {
	var s stardust.PackingMixSummary
	res := runOffline(t, stardust.NewPackingMix(), &s)
	if !s.ModelOnly || s.Partial {
		t.Fatalf("summary %+v", s)
	}
	if s.At150MHz["packed-cells"] < 1 || s.At150MHz["packet-switch"] >= 1 || s.At150MHz["unpacked-cells"] >= s.At150MHz["packet-switch"] {
		t.Errorf("at 150 MHz: %v", s.At150MHz)
	}
	if s.LineRateClockMHz["packed-cells"] != 150 || s.LineRateClockMHz["packet-switch"] != 180 {
		t.Errorf("line rate from %v", s.LineRateClockMHz)
	}
	byMode := map[string]map[float64]float64{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "mix_throughput") {
		if byMode[r["mode"]] == nil {
			byMode[r["mode"]] = map[float64]float64{}
		}
		byMode[r["mode"]][num(t, r["clock_mhz"])] = num(t, r["line_rate_fraction"])
	}
	for mode, f := range byMode {
		if f[100] >= 1 || math.Abs(f[120]/f[100]-1.2) > 1e-9 {
			t.Errorf("%s: %.5f at 100 MHz and %.5f at 120: not in proportion to the clock", mode, f[100], f[120])
		}
		if f[150] > byMode["packed-cells"][150] {
			t.Errorf("%s carries more than packed cells at 150 MHz", mode)
		}
	}
	count := map[string]float64{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "mix_sizes") {
		count[r["packet_bytes"]] = num(t, r["packets"])
	}
	if math.Abs(count["64"]/12000-7.0/12) > 0.02 || math.Abs(count["1518"]/12000-1.0/12) > 0.01 {
		t.Errorf("the stream's sizes %v are not near 7:4:1", count)
	}
	recipetest.CheckReport(t, res.Dir, "fig8b-mix")
}

// A mix the recipe cannot read is refused before anything runs, naming
// the parameter and what it expects.
func TestPackingMixRefusesABadMix(t *testing.T) {
	r := stardust.NewPackingMix()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"mix=64:7,594"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Plan(&orchestrator.PlanContext{Params: params, Lab: fabricLab(t)})
	if err == nil || !strings.Contains(err.Error(), "mix:") || !strings.Contains(err.Error(), "size:weight") {
		t.Errorf("mix=64:7,594: %v", err)
	}
}
