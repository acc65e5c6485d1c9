package stardust_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
)

// Fig. 8a's datapath (32 B at 150 MHz, 4 x 10GE, 64 B cells): packed cells
// carry at least what the packet switch and unpacked cells do at every
// size; at 65 B the packet switch takes three words a packet, 150e6/3 of
// the 58.8 Mpps 4 x 10GE brings (85%), and packed cells carry line rate,
// so the gain is the paper's 15%. Unpacked cells, two cells of two words
// a 65 B packet, carry 64%. Fig. 3: packing 64 B packets into 256 B
// words needs a quarter of the datapaths (§2.3).
func TestPackingFig8(t *testing.T) {
	var s stardust.PackingSummary
	res := runOffline(t, stardust.NewPacking(), &s)
	if !s.ModelOnly || s.Partial {
		t.Fatalf("summary %+v", s)
	}
	by := map[string]map[int]float64{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "packing_throughput") {
		if by[r["mode"]] == nil {
			by[r["mode"]] = map[int]float64{}
		}
		n, _ := strconv.Atoi(r["packet_bytes"])
		f, _ := strconv.ParseFloat(r["line_rate_fraction"], 64)
		by[r["mode"]][n] = f
	}
	packed, sw, un := by["packed-cells"], by["packet-switch"], by["unpacked-cells"]
	if len(packed) != s.Sizes || len(sw) != s.Sizes || len(un) != s.Sizes {
		t.Fatalf("rows per mode: %d %d %d, want %d", len(packed), len(sw), len(un), s.Sizes)
	}
	for n, f := range packed {
		if f < sw[n]-1e-12 || f < un[n]-1e-12 {
			t.Errorf("%d B: packed %.4f below packet switch %.4f or unpacked %.4f", n, f, sw[n], un[n])
		}
	}
	want := 150e6 / 3 / (40e9 / (8 * 85.0))
	if math.Abs(sw[65]-want) > 1e-9 || packed[65] != 1 || math.Abs(un[65]-want*3/4) > 1e-9 {
		t.Errorf("65 B: packet switch %.4f (want %.4f), packed %.4f (want 1), unpacked %.4f (want %.4f)", sw[65], want, packed[65], un[65], want*3/4)
	}
	if s.GainPacketSwitchAtBytes == nil || s.PackedGainOverPacketSwitch == nil || s.PackedGainOverUnpacked == nil || s.GainUnpackedAtBytes == nil || len(s.NotMeasured) != 0 {
		t.Fatalf("the model's summary lacks a gain or says one is not measured: %+v", s)
	}
	if *s.GainPacketSwitchAtBytes != 65 || math.Abs(*s.PackedGainOverPacketSwitch-(1-want)) > 1e-9 {
		t.Errorf("gain over the packet switch %.4f at %d B, want %.4f at 65 B", *s.PackedGainOverPacketSwitch, *s.GainPacketSwitchAtBytes, 1-want)
	}
	if math.Abs(s.Fig3Factor-4) > 1e-9 {
		t.Errorf("Fig. 3 factor at 64 B %.3f, want 4", s.Fig3Factor)
	}
	recipetest.CheckReport(t, res.Dir, "fig8a-throughput", "fig3-parallelism")
}

// A bad datapath is refused before the run, saying what is wrong.
func TestPackingRefusesBadCells(t *testing.T) {
	r := stardust.NewPacking()
	params := []string{"cell_bytes=8", "cell_header_bytes=8"}
	_, err := planWith(t, r, params...)
	if err == nil {
		t.Fatal("a cell all header accepted")
	}
	if got := err.Error(); !contains(got, "no room for data") {
		t.Errorf("error %q does not say what is wrong", got)
	}
}

// On a Stardust bench the gains over the packet switch and unpacked cells
// are not measured (a Tofino FA carries frames as cells, unpacked): the
// summary leaves them out rather than give a 0 that reads as a
// measurement, names them in not_measured, and the table's description
// (the report's) says a bench run does not give them. Planned on the
// bench's inventory: the summary's shape is set before any step runs.
func TestPackingOnABenchLeavesOutModelOnlyMetrics(t *testing.T) {
	text, err := simlab.Bench("stardust")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Parse("stardust.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	r := stardust.NewPacking()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := r.Plan(&orchestrator.PlanContext{Params: params, Lab: inv})
	if err != nil {
		t.Fatal(err)
	}
	v, err := plan.Summary(false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	modelOnly := []string{"packed_gain_over_packet_switch", "gain_over_packet_switch_at_bytes", "packed_gain_over_unpacked", "gain_over_unpacked_at_bytes"}
	var listed []string
	if l, ok := doc["not_measured"].([]any); ok {
		for _, x := range l {
			listed = append(listed, fmt.Sprint(x))
		}
	}
	if !slices.Equal(listed, modelOnly) {
		t.Errorf("not_measured %v, want %v", listed, modelOnly)
	}
	desc := plan.Tables[0].Description
	for _, k := range modelOnly {
		if x, ok := doc[k]; ok {
			t.Errorf("a bench run's summary gives %s = %v, which it does not measure", k, x)
		}
		if !strings.Contains(desc, k) {
			t.Errorf("the bench's %s description does not say %s is not given: %q", plan.Tables[0].Name, k, desc)
		}
	}
	if _, ok := doc["fig3_factor_smallest"]; !ok {
		t.Errorf("a bench run's summary leaves out Fig. 3, which it computes: %s", b)
	}
}
