package stardust

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// PackingMixName is the recipe's name on the command line.
const PackingMixName = "stardust-packing-mix"

// PackingMix is the stardust-packing-mix recipe (§6.1.1, Fig. 8b).
type PackingMix struct{}

// NewPackingMix returns the recipe.
func NewPackingMix() *PackingMix { return &PackingMix{} }

// Meta implements orchestrator.Recipe.
func (*PackingMix) Meta() o.Meta {
	return o.Meta{
		Name:        PackingMixName,
		Version:     "1.0.0",
		Summary:     "throughput of a packet switch, packed cells and unpacked cells on one datapath for a mix of packet sizes, against the datapath's clock (Fig. 8b); model only, a published mix in place of the paper's traces",
		Description: packingMixDescription,
		Params:      packingMixParams(),
		// Fig. 8b: each design's throughput on the mix at the paper's
		// 150 MHz, and the packed cells' edge.
		Headlines: []string{"at_150mhz.*", "packed_gain_over_packet_switch", "line_rate_clock_mhz.*"},
	}
}

const packingMixDescription = `Stardust's Fig. 8b: the datapaths of Fig. 8a (a packet switch, packed cells and
unpacked cells on one datapath of datapath_bytes a cycle, fed by ports ports of port_gbps,
cell_bytes cells) on a stream of packets whose sizes follow a mix, at each clock of
clocks_mhz. The paper replays Facebook's traces (its [74], Roy et al., SIGCOMM 2015), which
are not published; the default mix is the simple IMIX (frames of 64, 594 and 1518 B in the
ratio 7:4:1, as Ixia and Spirent define it), a published synthetic mix, and mix takes any
other as size:weight pairs (a lab with the traces' size histogram gives it here). The
stream is packets packets drawn from the mix in a seeded random order (packing depends on
which size follows which); the cycles are counted packet by packet with the FA datapath's
packing formulas (p4/stardust, as stardust-packing), and throughput is the time the packets
take on the wire (20 B of preamble and gap each) over the time the datapath takes, at most
line rate. No device is used (model_only). Writes data/mix_throughput.csv (Fig. 8b
against the clock) and data/mix_sizes.csv (the stream's sizes as drawn); the summary gives
each design's throughput at 150 MHz, the packed cells' gain over the packet switch there,
and the lowest clock of clocks_mhz at which each design carries the mix at line rate.`

func packingMixParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "mix", Type: o.TypeString, Default: "64:7,594:4,1518:1", Description: "packet sizes (frame bytes) and their weights, size:weight,... (default: the simple IMIX)"},
		{Name: "clocks_mhz", Type: o.TypeFloats, Unit: "MHz", Default: []float64{100, 120, 150, 180, 200}, Min: o.Bound(1), Max: o.Bound(10000), Description: "datapath clocks (§6.1.1: 150 MHz; the reference switch reaches line rate at 180)"},
		{Name: "datapath_bytes", Type: o.TypeInt, Unit: "B", Default: int64(32), Min: o.Bound(1), Max: o.Bound(4096), Description: "datapath width (§6.1.1: 32 B, NetFPGA SUME's 256-bit AXI-Stream)"},
		{Name: "cell_bytes", Type: o.TypeInt, Unit: "B", Default: int64(64), Min: o.Bound(2), Max: o.Bound(16384), Description: "cell size on the datapath (§6.1.1: 64 B)"},
		{Name: "cell_header_bytes", Type: o.TypeInt, Unit: "B", Default: int64(0), Min: o.Bound(0), Max: o.Bound(1024), Description: "part of a cell that is header (0: it travels beside the data, as NetFPGA's side-band metadata)"},
		{Name: "ports", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(1024), Description: "ports feeding the datapath (§6.1.1: 4)"},
		{Name: "port_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 10.0, Min: o.Bound(0.001), Max: o.Bound(1000), Description: "port rate (§6.1.1: 10GE)"},
		{Name: "packets", Type: o.TypeInt, Default: int64(12000), Min: o.Bound(1), Max: o.Bound(1e7), Description: "packets in the stream"},
	}
}

// parseMix reads size:weight pairs.
func parseMix(s string) ([]int, []float64, error) {
	var sizes []int
	var weights []float64
	for _, part := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), ":")
		size, err1 := strconv.Atoi(a)
		w, err2 := strconv.ParseFloat(b, 64)
		if !ok || err1 != nil || err2 != nil || size < 1 || size > 16384 || !(w > 0) {
			return nil, nil, o.Inputf("mix: %q: expected size:weight with a size of 1..16384 B and a positive weight, e.g. 64:7,594:4,1518:1", part)
		}
		sizes, weights = append(sizes, size), append(weights, w)
	}
	return sizes, weights, nil
}

// drawMix draws n sizes from the mix in a random order seeded by seed.
func drawMix(seed uint64, sizes []int, weights []float64, n int) []int {
	r := rand.New(rand.NewPCG(seed, 0x8b))
	var total float64
	for _, w := range weights {
		total += w
	}
	out := make([]int, n)
	for i := range out {
		u := r.Float64() * total
		k := 0
		for k < len(weights)-1 && u >= weights[k] {
			u -= weights[k]
			k++
		}
		out[i] = sizes[k]
	}
	return out
}

// PackingMixTables are the recipe's tables.
func PackingMixTables() []results.Table {
	return []results.Table{
		{Name: "mix_throughput", Title: "Throughput on the mix against the clock (Fig. 8b)", Description: "One row per datapath mode and clock.",
			Fields: []results.Field{
				{Name: "mode", Type: "string", Description: "packet-switch, packed-cells or unpacked-cells"},
				{Name: "clock_mhz", Type: "number", Unit: "MHz"},
				{Name: "line_rate_fraction", Type: "number", Unit: "1", Description: "throughput over line rate"},
				{Name: "throughput_gbps", Type: "number", Unit: "Gb/s", Description: "line_rate_fraction x ports x port rate (wire bits)"},
			},
			Figures: []results.Figure{{Name: "fig8b-mix", Title: "Throughput on a mix of packet sizes",
				Caption: "As Stardust Fig. 8b, with a published mix of sizes in place of the paper's traces.",
				Kind:    results.Line, X: "clock_mhz", Y: "line_rate_fraction", YScale: 100, Series: []string{"mode"},
				XLabel: "Datapath clock (MHz)", YLabel: "Throughput (% of line rate)"}}},
		{Name: "mix_sizes", Title: "The stream's packet sizes", Description: "How many packets of each size the stream drew.",
			Fields: []results.Field{
				{Name: "packet_bytes", Type: "integer", Unit: "B"},
				{Name: "packets", Type: "integer"},
			}},
	}
}

// PackingMixSummary is summary.json.
type PackingMixSummary struct {
	Partial   bool   `json:"partial"`
	ModelOnly bool   `json:"model_only"`
	Datapath  string `json:"datapath"`
	Mix       string `json:"mix"`
	// MeanBytes is the stream's mean frame size.
	MeanBytes float64 `json:"mean_bytes"`
	// At150MHz is each mode's line-rate fraction at 150 MHz (when 150 is
	// among the clocks).
	At150MHz map[string]float64 `json:"at_150mhz,omitempty"`
	// PackedGainOverPacketSwitch is packed cells' fraction less the
	// packet switch's at 150 MHz.
	PackedGainOverPacketSwitch float64 `json:"packed_gain_over_packet_switch"`
	// LineRateClockMHz is, per mode, the lowest clock at which the mix
	// runs at line rate (0: none of the clocks).
	LineRateClockMHz map[string]float64 `json:"line_rate_clock_mhz"`
}

// Plan implements Recipe: arithmetic, no device.
func (r *PackingMix) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	sizes, weights, err := parseMix(p.String("mix"))
	if err != nil {
		return nil, err
	}
	d := sd.Datapath{WidthBytes: int(p.Int("datapath_bytes")), Ports: int(p.Int("ports")), ClockHz: 1,
		PortBps: p.Float("port_gbps") * 1e9, WireGapBytes: 20, CellBytes: int(p.Int("cell_bytes")), CellHeaderBytes: int(p.Int("cell_header_bytes"))}
	if err := d.Validate(); err != nil {
		return nil, o.Inputf("%s: %v", PackingMixName, err)
	}
	clocks := slices.Sorted(slices.Values(p.Floats("clocks_mhz")))
	desc := fmt.Sprintf("%d B datapath, %d x %g Gb/s ports, %d B cells with %d B of header", d.WidthBytes, d.Ports, d.PortBps/1e9, d.CellBytes, d.CellHeaderBytes)
	var mu sync.Mutex
	sum := PackingMixSummary{ModelOnly: true, Datapath: desc, Mix: p.String("mix"), LineRateClockMHz: map[string]float64{}}
	done := false
	plan := &o.Plan{Tables: PackingMixTables(),
		Bindings: []o.Binding{{Role: "datapath", Resource: "p4/stardust", Detail: "the FA datapath's packing formulas alone (model_only): " + desc}},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || !done
			return s, nil
		}}
	plan.Steps = []*o.Step{{Name: "fig 8b", Action: "compute", Note: fmt.Sprintf("%d packets of the mix %s", p.Int("packets"), p.String("mix")),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			stream := drawMix(rc.Seed, sizes, weights, int(p.Int("packets")))
			s, err := packingMix(rc, d, stream, clocks)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			s.Partial, s.ModelOnly, s.Datapath, s.Mix = false, true, desc, p.String("mix")
			sum, done = s, true
			return nil
		}}}
	return plan, nil
}

// packingMix writes the tables for stream at every clock and returns the
// summary's numbers.
func packingMix(rc *o.RunContext, d sd.Datapath, stream []int, clocks []float64) (PackingMixSummary, error) {
	s := PackingMixSummary{LineRateClockMHz: map[string]float64{}}
	count := map[int]int{}
	var total float64
	for _, b := range stream {
		count[b]++
		total += float64(b)
	}
	s.MeanBytes = total / float64(len(stream))
	st, err := rc.Table("mix_sizes")
	if err != nil {
		return s, err
	}
	for _, b := range slices.Sorted(func(yield func(int) bool) {
		for k := range count {
			if !yield(k) {
				return
			}
		}
	}) {
		if err := st.Write(b, count[b]); err != nil {
			return s, err
		}
	}
	t, err := rc.Table("mix_throughput")
	if err != nil {
		return s, err
	}
	for _, m := range modes {
		for _, mhz := range clocks {
			d.ClockHz = mhz * 1e6
			f := d.Throughput(m, stream)
			if err := t.Write(string(m), mhz, f, f*float64(d.Ports)*d.PortBps/1e9); err != nil {
				return s, err
			}
			if mhz == 150 {
				if s.At150MHz == nil {
					s.At150MHz = map[string]float64{}
				}
				s.At150MHz[string(m)] = f
			}
			if _, ok := s.LineRateClockMHz[string(m)]; !ok && f >= 1 {
				s.LineRateClockMHz[string(m)] = mhz
			}
		}
		if _, ok := s.LineRateClockMHz[string(m)]; !ok {
			s.LineRateClockMHz[string(m)] = 0
		}
	}
	if s.At150MHz != nil {
		s.PackedGainOverPacketSwitch = s.At150MHz[string(sd.ModePackedCells)] - s.At150MHz[string(sd.ModePacketSwitch)]
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("mix of mean %.1f B: at 150 MHz packet switch %.4f, packed cells %.4f, unpacked cells %.4f of line rate; line rate from %g, %g and %g MHz (0: none of the clocks)",
		s.MeanBytes, s.At150MHz[string(sd.ModePacketSwitch)], s.At150MHz[string(sd.ModePackedCells)], s.At150MHz[string(sd.ModeUnpackedCells)],
		s.LineRateClockMHz[string(sd.ModePacketSwitch)], s.LineRateClockMHz[string(sd.ModePackedCells)], s.LineRateClockMHz[string(sd.ModeUnpackedCells)])})
	return s, nil
}
