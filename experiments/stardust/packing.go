package stardust

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// PackingName is the recipe's name on the command line.
const PackingName = "stardust-packing"

// Packing is the stardust-packing recipe.
type Packing struct{}

// NewPacking returns the recipe.
func NewPacking() *Packing { return &Packing{} }

// Meta implements orchestrator.Recipe.
func (*Packing) Meta() o.Meta {
	return o.Meta{
		Name:        PackingName,
		Version:     "1.3.0",
		Summary:     "throughput against packet size of a packet switch, packed cells and unpacked cells on one datapath (Figs. 8a and 3); on the model, or frames as cells on a Stardust bench",
		Description: packingDescription,
		Params:      packingParams(),
		// Figs. 8a and 3: what packing gains over a packet switch, and where.
		Headlines: []string{"packed_gain_over_packet_switch", "gain_over_packet_switch_at_bytes", "packed_gain_over_unpacked", "fig3_factor_smallest"},
	}
}

const packingDescription = `Counts, packet by packet, the clock cycles a datapath of datapath_bytes a cycle at
clock_mhz spends on back-to-back packets of each size in sizes arriving on ports ports of
port_gbps (20 B of preamble and gap each on the wire), three ways (§3.4, §6.1.1): as a
packet switch (a packet takes ceil(S/W) words and never shares one), as packed cells
(the stream chopped into cell_bytes cells, a cell holding the tail of one packet and the
head of the next) and as unpacked cells (each packet chopped on its own, its last cell
padded). Throughput is the time the packets take on the wire over the time the datapath
takes, at most line rate (Fig. 8a: NetFPGA SUME, 4 x 10GE, 32 B datapath at 150 MHz,
64 B cells). It also computes Fig. 3: the parallel datapaths a fig3_tbps device with a
fig3_datapath_bytes datapath at fig3_clock_ghz needs per packet size, as a packet switch
and with packed cells (App. B, Eq. 3).

No device is used: these are the FA datapath's packing formulas (p4/stardust), model_only in
the summary. A Tofino cannot pack packets into cells (p4/stardust/README.md). Writes
data/packing_throughput.csv and data/parallelism.csv.

On a Stardust bench (switches with the inventory option stardust_role fa or fe, e.g.
--bench stardust) Fig. 8a is measured on the switches instead (measured_on: bench): the
datapath is the Tofino FA's, where a frame is a cell and nothing is packed. The fabric is
brought up through the switch driver, and for each size every FA's packet generator
sends frames of that size at its host port's line rate to the next FA (a permutation,
each host port's credits going to its one sender); the host ports' counters give the
throughput delivered (mode bench-frames, the frames on the wire over line rate) and the
share of it that is data after the Ethernet and cell headers (bench-frame-payload).
Fig. 3 is computed as on the model. A bench run does not give the metrics that compare
the model's packed and unpacked cells (packed_gain_over_packet_switch,
gain_over_packet_switch_at_bytes, packed_gain_over_unpacked, gain_over_unpacked_at_bytes):
its summary.json leaves them out and names them in not_measured. The bench_*,
credit_bytes, speed_up, fci_threshold and reach_period parameters set the bench's fabric.`

// Fig. 8a's packet sizes: the minimum, one byte over each word and cell
// boundary up to 257 B, and larger packets to the Ethernet maximum.
var defaultSizes = []float64{64, 65, 96, 97, 128, 129, 160, 161, 192, 193, 224, 225, 256, 257, 384, 385, 512, 513, 768, 1024, 1025, 1280, 1500, 1518}

func packingParams() []o.ParamSpec {
	return append([]o.ParamSpec{
		{Name: "sizes", Type: o.TypeFloats, Unit: "B", Default: defaultSizes, Min: o.Bound(1), Max: o.Bound(16384), Description: "packet sizes (frame bytes without preamble and gap)"},
		// §6.1.1: NetFPGA SUME, 4 x 10GE, 256-bit datapath at 150 MHz, 64 B cells.
		{Name: "clock_mhz", Type: o.TypeFloat, Unit: "MHz", Default: 150.0, Min: o.Bound(1), Max: o.Bound(10000), Description: "datapath clock (§6.1.1: 150 MHz)"},
		{Name: "datapath_bytes", Type: o.TypeInt, Unit: "B", Default: int64(32), Min: o.Bound(1), Max: o.Bound(4096), Description: "datapath width (§6.1.1: 32 B, NetFPGA SUME's 256-bit AXI-Stream)"},
		{Name: "cell_bytes", Type: o.TypeInt, Unit: "B", Default: int64(64), Min: o.Bound(2), Max: o.Bound(16384), Description: "cell size on the datapath (§6.1.1: 64 B)"},
		{Name: "cell_header_bytes", Type: o.TypeInt, Unit: "B", Default: int64(0), Min: o.Bound(0), Max: o.Bound(1024), Description: "part of a cell that is header (0: it travels beside the data, as NetFPGA's side-band metadata)"},
		{Name: "ports", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(1024), Description: "ports feeding the datapath (§6.1.1: 4)"},
		{Name: "port_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 10.0, Min: o.Bound(0.001), Max: o.Bound(1000), Description: "port rate (§6.1.1: 10GE)"},
		{Name: "packets", Type: o.TypeInt, Default: int64(1000), Min: o.Bound(1), Max: o.Bound(1e7), Description: "packets per size (back to back; the last packed cell is flushed)"},
		// §2.3, Fig. 3: 12.8 Tb/s, 256 B datapath, 1 GHz.
		{Name: "fig3_tbps", Type: o.TypeFloat, Unit: "Tb/s", Default: 12.8, Min: o.Bound(0.001), Max: o.Bound(1000), Description: "Fig. 3: device bandwidth (12.8 Tb/s)"},
		{Name: "fig3_datapath_bytes", Type: o.TypeInt, Unit: "B", Default: int64(256), Min: o.Bound(1), Max: o.Bound(4096), Description: "Fig. 3: datapath width (256 B)"},
		{Name: "fig3_clock_ghz", Type: o.TypeFloat, Unit: "GHz", Default: 1.0, Min: o.Bound(0.01), Max: o.Bound(100), Description: "Fig. 3: datapath clock (1 GHz)"},
		// The bench's fabric: as stardust-fabric's defaults.
		{Name: "credit_bytes", Type: o.TypeInt, Unit: "B", Default: int64(4096), Min: o.Bound(64), Max: o.Bound(1 << 20), Description: "bench only: data one credit releases (§6.3: 4 KB)"},
		{Name: "speed_up", Type: o.TypeFloat, Unit: "1", Default: 0.03, Min: o.Bound(0), Max: o.Bound(1), Description: "bench only: credit rate above the host port's rate (§6.3: 3%)"},
		{Name: "fci_threshold", Type: o.TypeInt, Unit: "frames", Default: int64(32), Min: o.Bound(0), Max: o.Bound(1 << 16), Description: "bench only: FE queue depth that marks FCI; 0 turns FCI off"},
		{Name: "reach_period", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "bench only: reachability cell and aging period (Table 4: 10 us)"},
	}, packingBenchParams()...)
}

// packingBenchParams are the bench parameters with fabric links of 40
// Gb/s by default: the recipe measures the FA's datapath, so the fabric
// must not be what limits it. The credits and reachability cells take
// their place on the links (a 64 B credit per 4 KB), and with links that
// carry just the host port (four of 25 Gb/s) the FAs' fabric ports sit at
// their FCI threshold and frames cross at 64-79% of line rate (seed 1);
// four of 40 Gb/s are the speed-up a Stardust fabric has above its credit
// rate (§4.1).
func packingBenchParams() []o.ParamSpec {
	ps := benchParams(100*time.Microsecond, 20*time.Microsecond, time.Millisecond)
	for i := range ps {
		if ps[i].Name == "bench_link_gbps" {
			ps[i].Default = int64(40)
			ps[i].Description = "bench only: the fabric ports' speed (40: four links carry 1.6 times the 100 Gb/s host port, room for the credits and reachability cells; at 25 the fabric, not the datapath, sets what crosses)"
		}
	}
	return ps
}

var modes = []sd.Mode{sd.ModePacketSwitch, sd.ModePackedCells, sd.ModeUnpackedCells}

// PackingTables are the recipe's tables and Figs. 8a and 3.
func PackingTables() []results.Table {
	return []results.Table{
		{Name: "packing_throughput", Title: "Throughput against packet size (Fig. 8a)", Description: "One row per datapath mode and packet size.",
			Fields: []results.Field{
				{Name: "mode", Type: "string", Description: "packet-switch, packed-cells or unpacked-cells"},
				{Name: "packet_bytes", Type: "integer", Unit: "B"},
				{Name: "cycles_per_packet", Type: "number", Unit: "cycles", Description: "datapath cycles over packets"},
				{Name: "line_rate_fraction", Type: "number", Unit: "1", Description: "throughput over line rate"},
				{Name: "throughput_gbps", Type: "number", Unit: "Gb/s", Description: "line_rate_fraction x ports x port rate (wire bits, preamble and gap included)"},
			},
			Figures: []results.Figure{{
				Name: "fig8a-throughput", Title: "Throughput against packet size",
				Caption: "As Stardust Fig. 8a: a packet switch, packed cells and unpacked cells on one datapath width and clock, cycles counted packet by packet.",
				Kind:    results.Line, X: "packet_bytes", Y: "line_rate_fraction", YScale: 100, Series: []string{"mode"},
				XLabel: "Packet size (B)", YLabel: "Throughput (% of line rate)"}},
		},
		{Name: "parallelism", Title: "Parallel datapaths needed (Fig. 3)", Description: "One row per mode and packet size: the datapaths (one word a clock each) a device needs to carry the size at line rate (App. B, Eq. 3).",
			Fields: []results.Field{
				{Name: "mode", Type: "string", Description: "packet-switch or packed-cells"},
				{Name: "packet_bytes", Type: "integer", Unit: "B"},
				{Name: "parallelism", Type: "number", Unit: "1", Description: "P = required packet (or cell) rate over the clock"},
			},
			Figures: []results.Figure{{
				Name: "fig3-parallelism", Title: "Parallel datapaths needed at line rate",
				Caption: "As Stardust Fig. 3: a standard packet switch against optimal packing into datapath-wide units.",
				Kind:    results.Line, X: "packet_bytes", Y: "parallelism", Series: []string{"mode"},
				XLabel: "Packet size (B)", YLabel: "Parallel datapaths"}},
		},
	}
}

// ModeSummary is one mode's headline numbers on the Fig. 8a datapath.
type ModeSummary struct {
	MinFraction float64 `json:"min_line_rate_fraction"`
	MinAtBytes  int     `json:"min_at_bytes"`
	// LineRateSizes is how many of the sizes reach line rate.
	LineRateSizes int `json:"line_rate_sizes"`
}

// PackingSummary is summary.json.
type PackingSummary struct {
	Partial   bool `json:"partial"`
	ModelOnly bool `json:"model_only"`
	// MeasuredOn is "bench" when Fig. 8a was measured on a Stardust
	// bench's switches (empty for the model); Datapath then says which.
	MeasuredOn string `json:"measured_on,omitempty"`
	Datapath   string `json:"datapath"`
	Sizes      int    `json:"sizes"`
	// Modes are keyed by mode.
	Modes map[string]ModeSummary `json:"modes"`
	// PackedGainOverPacketSwitch and PackedGainOverUnpacked are the
	// largest differences in line-rate fraction over the sizes (the
	// paper: up to 15% and 49%), with the sizes where they occur. They
	// compare the model's packed and unpacked cells, which a bench does
	// not have: nil (absent from summary.json, where a 0 would read as a
	// measurement) on a bench run, whose NotMeasured names them.
	PackedGainOverPacketSwitch *float64 `json:"packed_gain_over_packet_switch,omitempty"`
	GainPacketSwitchAtBytes    *int     `json:"gain_over_packet_switch_at_bytes,omitempty"`
	PackedGainOverUnpacked     *float64 `json:"packed_gain_over_unpacked,omitempty"`
	GainUnpackedAtBytes        *int     `json:"gain_over_unpacked_at_bytes,omitempty"`
	// NotMeasured names the metrics above that the run does not give (a
	// bench run's model-only metrics).
	NotMeasured []string `json:"not_measured,omitempty"`
	// Fig3Factor is the packet switch's parallelism over packed cells'
	// at the smallest size (§2.3: x4 for 64 B).
	Fig3Factor float64 `json:"fig3_factor_smallest"`
}

// Plan implements Recipe. On the model it touches no device.
func (r *Packing) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	d := sd.Datapath{WidthBytes: int(p.Int("datapath_bytes")), ClockHz: p.Float("clock_mhz") * 1e6, Ports: int(p.Int("ports")),
		PortBps: p.Float("port_gbps") * 1e9, WireGapBytes: 20, CellBytes: int(p.Int("cell_bytes")), CellHeaderBytes: int(p.Int("cell_header_bytes"))}
	if err := d.Validate(); err != nil {
		return nil, o.Inputf("%s: %v", PackingName, err)
	}
	// Fig. 3's device: packed into datapath-wide units (§2.3).
	d3 := sd.Datapath{WidthBytes: int(p.Int("fig3_datapath_bytes")), ClockHz: p.Float("fig3_clock_ghz") * 1e9, Ports: 1,
		PortBps: p.Float("fig3_tbps") * 1e12, WireGapBytes: 20}
	d3.CellBytes = d3.WidthBytes
	var sizes []int
	for _, s := range p.Floats("sizes") {
		if s != math.Trunc(s) {
			return nil, o.Inputf("sizes: %g is not a whole number of bytes", s)
		}
		sizes = append(sizes, int(s))
	}
	if len(sizes) == 0 {
		return nil, o.Inputf("sizes: expected at least one packet size, e.g. 64,65,1500")
	}
	sort.Ints(sizes)
	n := int(p.Int("packets"))
	if b, err := findBench(pc.Lab); err != nil {
		return nil, err
	} else if b != nil {
		return r.planBench(pc, b, sizes, d3, n)
	}
	desc := fmt.Sprintf("%d B datapath at %g MHz, %d x %g Gb/s ports, %d B cells with %d B of header", d.WidthBytes, d.ClockHz/1e6, d.Ports, d.PortBps/1e9, d.CellBytes, d.CellHeaderBytes)
	var mu sync.Mutex
	sum := PackingSummary{ModelOnly: true, Datapath: desc, Sizes: len(sizes), Modes: map[string]ModeSummary{}}
	done := false
	plan := &o.Plan{Tables: PackingTables(),
		Bindings: []o.Binding{{Role: "datapath", Resource: "p4/stardust", Detail: "the FA datapath's packing formulas alone (model_only): " + desc}},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || !done
			return s, nil
		}}
	plan.Steps = []*o.Step{
		{Name: "fig 8a", Action: "compute", Note: desc,
			Run: func(ctx context.Context, rc *o.RunContext) error {
				t, err := rc.Table("packing_throughput")
				if err != nil {
					return err
				}
				frac := map[sd.Mode][]float64{}
				for _, m := range modes {
					ms := ModeSummary{MinFraction: 2}
					for _, s := range sizes {
						pk := repeat(s, n)
						f := d.Throughput(m, pk)
						frac[m] = append(frac[m], f)
						if err := t.Write(string(m), s, float64(d.Cycles(m, pk))/float64(n), f, f*float64(d.Ports)*d.PortBps/1e9); err != nil {
							return err
						}
						if f < ms.MinFraction {
							ms.MinFraction, ms.MinAtBytes = f, s
						}
						if f >= 1 {
							ms.LineRateSizes++
						}
					}
					mu.Lock()
					sum.Modes[string(m)] = ms
					mu.Unlock()
				}
				var gainSw, gainUn float64
				var atSw, atUn int
				for i, s := range sizes {
					if g := frac[sd.ModePackedCells][i] - frac[sd.ModePacketSwitch][i]; g > gainSw {
						gainSw, atSw = g, s
					}
					if g := frac[sd.ModePackedCells][i] - frac[sd.ModeUnpackedCells][i]; g > gainUn {
						gainUn, atUn = g, s
					}
				}
				mu.Lock()
				defer mu.Unlock()
				sum.PackedGainOverPacketSwitch, sum.GainPacketSwitchAtBytes = &gainSw, &atSw
				sum.PackedGainOverUnpacked, sum.GainUnpackedAtBytes = &gainUn, &atUn
				rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("packed cells: line rate at %d of %d sizes; gain up to %.1f%% over the packet switch (%d B), %.1f%% over unpacked cells (%d B)",
					sum.Modes[string(sd.ModePackedCells)].LineRateSizes, len(sizes), gainSw*100, atSw, gainUn*100, atUn)})
				return nil
			}},
		fig3Step(d3, sizes, n, func(f float64) {
			mu.Lock()
			sum.Fig3Factor = f
			done = true
			mu.Unlock()
		}),
	}
	return plan, nil
}

// fig3Step computes Fig. 3 (App. B, Eq. 3): arithmetic of a datapath,
// the same on the model and on a bench.
func fig3Step(d3 sd.Datapath, sizes []int, n int, set func(factor float64)) *o.Step {
	return &o.Step{Name: "fig 3", Action: "compute", Note: fmt.Sprintf("%g Tb/s, %d B datapath at %g GHz", d3.PortBps/1e12, d3.WidthBytes, d3.ClockHz/1e9),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			t, err := rc.Table("parallelism")
			if err != nil {
				return err
			}
			var first [2]float64
			for i, m := range []sd.Mode{sd.ModePacketSwitch, sd.ModePackedCells} {
				for j, s := range sizes {
					pp := d3.Parallelism(m, repeat(s, n))
					if j == 0 {
						first[i] = pp
					}
					if err := t.Write(string(m), s, pp); err != nil {
						return err
					}
				}
			}
			set(first[0] / first[1])
			return nil
		}}
}

func repeat(s, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// Bench modes of Fig. 8a: what a Tofino FA carries. A frame is a cell
// (p4/stardust/README.md: no packing, no chopping), so the bench measures
// the frames' throughput at line rate, and how much of it is data after
// the Ethernet and cell headers.
const (
	benchFrames  = "bench-frames"
	benchPayload = "bench-frame-payload"
)

// benchNotMeasured are the summary's metrics a bench run does not give:
// they compare the model's packed and unpacked cells, and a Tofino FA
// carries frames as cells, unpacked (p4/stardust/README.md).
func benchNotMeasured() []string {
	return []string{"packed_gain_over_packet_switch", "gain_over_packet_switch_at_bytes", "packed_gain_over_unpacked", "gain_over_unpacked_at_bytes"}
}

// planBench is stardust-packing on a Stardust bench: for each size, every
// FA's packet generator sends frames of that size at its host port's line
// rate to the next FA (a permutation, so no destination is oversubscribed
// and the fabric, not contention, sets the throughput), and the FAs' host
// port counters give the delivered throughput. Fig. 3 is arithmetic, as on
// the model.
func (r *Packing) planBench(pc *o.PlanContext, b *bench, sizes []int, d3 sd.Datapath, n int) (*o.Plan, error) {
	p := pc.Params
	cfg, err := benchConfigFrom(p, sizes[0])
	if err != nil {
		return nil, o.Inputf("sizes: %v", err)
	}
	if _, err := benchConfigFrom(p, sizes[len(sizes)-1]); err != nil {
		return nil, o.Inputf("sizes: %v", err)
	}
	cfg.FCIFrames = int(p.Int("fci_threshold"))
	warm, measure, drain := p.Duration("bench_warmup"), p.Duration("bench_measure"), p.Duration("bench_drain")
	desc := fmt.Sprintf("Tofino FAs (%s) as a bench measures them: frames as cells, no packing (Tofino cannot merge packets); %s; each FA's generator at its host port's line rate to the next FA",
		sd.ProgramFA, b.describe(cfg.LinkGbps, cfg.HostGbps))
	var mu sync.Mutex
	sum := PackingSummary{ModelOnly: false, MeasuredOn: "bench", Datapath: desc, Sizes: len(sizes), Modes: map[string]ModeSummary{}, NotMeasured: benchNotMeasured()}
	ms := map[string]*ModeSummary{benchFrames: {MinFraction: 2}, benchPayload: {MinFraction: 2}}
	measured, done := 0, false
	var br *benchRun
	devs := b.devices()
	tables := PackingTables()
	// The bench draws frames as cells, not the model's three datapaths:
	// the caption says what its two curves are.
	tables[0].Figures[0].Caption = "As Stardust Fig. 8a, measured on a Stardust bench, where a frame is a cell and nothing is packed: bench-frames is what the host ports delivered, on the wire, over line rate; bench-frame-payload the share of it that is data after the Ethernet and cell headers. The packed and unpacked cells are the model's (run without a bench)."
	// Nor does it give the metrics that compare them: the report says
	// which, where a summary without them could read as an oversight.
	tables[0].Description += " A bench run does not give " + strings.Join(benchNotMeasured(), ", ") + ": they compare the model's packed and unpacked cells (run without a bench for them), so summary.json leaves them out and lists them in not_measured."
	plan := &o.Plan{Tables: tables,
		Bindings: []o.Binding{{Role: "datapath", Resource: "switches with stardust_role", Detail: desc}},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || !done || measured < len(sizes)
			return s, nil
		}}
	plan.Steps = append(plan.Steps, b.upStep(cfg, &br))
	for _, s := range sizes {
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("frames of %d B", s), Action: "measure", Devices: devs,
			Note: fmt.Sprintf("line rate, %v + %v measured + a drain of up to %v, on the switches' clock", warm, measure, drain),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if br == nil {
					return fmt.Errorf("the fabric is not up")
				}
				br.cfg.FrameBytes = s
				line := float64(br.cfg.HostGbps) * 1e9
				pt, err := br.runTraffic(ctx, s, line, br.permutationTargets, warm, measure, drain)
				if err != nil {
					return err
				}
				t, err := rc.Table("packing_throughput")
				if err != nil {
					return err
				}
				capBits := line * float64(len(br.FAs)) * pt.Window.Seconds()
				frames := float64(pt.HostFrames*int64(s+wireExtra)*8) / capBits
				payload := float64(pt.HostFrames*int64(s-sd.EthernetBytes-sd.CellHeaderBytes)*8) / capBits
				for _, m := range []struct {
					mode string
					f    float64
				}{{benchFrames, frames}, {benchPayload, payload}} {
					if err := t.Write(m.mode, s, nil, m.f, m.f*line/1e9); err != nil {
						return err
					}
				}
				rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("frames of %d B at line rate on the bench: %.4f of line rate delivered (%.4f as data after the headers); %d frames sent, %d released, %d dropped waiting for credit, %d lost in FE queues",
					s, frames, payload, pt.Generated, pt.Delivered, pt.WaitDrops, pt.FabricDrops)})
				mu.Lock()
				defer mu.Unlock()
				for _, m := range []struct {
					mode string
					f    float64
				}{{benchFrames, frames}, {benchPayload, payload}} {
					x := ms[m.mode]
					if m.f < x.MinFraction {
						x.MinFraction, x.MinAtBytes = m.f, s
					}
					// Line rate within the pacing's rounding (0.2%).
					if m.f >= 0.995 {
						x.LineRateSizes++
					}
					sum.Modes[m.mode] = *x
				}
				measured++
				return nil
			}})
	}
	plan.Steps = append(plan.Steps, fig3Step(d3, sizes, n, func(f float64) {
		mu.Lock()
		sum.Fig3Factor = f
		done = true
		mu.Unlock()
	}))
	return plan, nil
}
