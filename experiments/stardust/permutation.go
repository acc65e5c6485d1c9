package stardust

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"testbed/dut/fabric"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// PermutationName is the recipe's name on the command line.
const PermutationName = "stardust-permutation"

// Permutation is the stardust-permutation recipe (§6.3, Fig. 10a).
type Permutation struct{}

// NewPermutation returns the recipe.
func NewPermutation() *Permutation { return &Permutation{} }

// Meta implements orchestrator.Recipe.
func (*Permutation) Meta() o.Meta {
	return o.Meta{
		Name:        PermutationName,
		Version:     "1.3.0",
		Summary:     "Stardust permutation: per-flow throughput sorted and mean utilisation against ECMP on a packet-switched fabric (Fig. 10a, §6.3); on the model, or Stardust's flows on a Stardust bench",
		Description: permutationDescription,
		Params:      permutationParams(),
		// Fig. 10a: mean utilisation and the slowest flow, Stardust against ECMP.
		Headlines: []string{"fabrics.*.mean_utilisation", "fabrics.*.min_gbps"},
	}
}

const permutationDescription = `Every host port sends one long flow to one host port of another FA and receives one
(a random permutation, as §6.3's), so every port and, with as many fabric links as host
ports of the same rate, the whole fabric is fully loaded. After warmup, each flow's
delivered data over measure is its throughput; Fig. 10a is the flows' throughputs in
increasing order. Two fabrics of the same shape, both in simlab/stardustmodel: Stardust
(sd_packet_bytes packets chopped into cell_bytes cells, credit_bytes credits at
speed_up above the port rate, sprayed over every link; §6.3: 512 B, 512 B cells, 4 KB,
3%) and a packet-switched fabric (ToRs and spines, each flow hashed to one uplink and
one spine downlink, ECMP, packet_bytes packets, windows as TCP Reno's, drop-tail
switch_buffer_kb buffers, a lost packet sent again rto after it was sent; §6.3's other
schemes use 9000 B). Utilisation is a flow's throughput over its port's rate.

The default fabric is fas (16) FAs of ports_per_fa (4) host ports and as many links of
the same rate (gbps, 10 as §6.3's) to fes (4) FEs: no fabric speed-up, as §6.3's
fat-tree. The Stardust bench (8 FAs of one port and 4 links) has a fabric speed-up of 4:
every permutation fits it. Both run on the lab's fabric device (kind fabric: the simulated
lab's fabric1; model_only in the summary). Writes
data/permutation_flows.csv and permutation_points.csv.

With Stardust switches in the inventory (--bench stardust, or switches with
stardust_role) Stardust's flows run on them: the fabric comes up through the switch
driver as for stardust-fabric, every FA's packet generator sends sd_packet_bytes frames
(a frame is a cell on Tofino) at its host port's line rate to the host port of another
FA (a random derangement of the FAs), and each destination's host port counters give
its one flow's throughput over bench_measure. With bench_link_gbps 25 an FA's four
links carry exactly its 100 Gb/s host port: no fabric speed-up. The packet fabric then
runs on the same switches (bench_packet_fabric bench, the default): they are restarted
with p4/ecmp, a plain packet-switched fabric (ToRs and spines, ECMP, no credits), and
every ToR's generator sends packet_bytes frames at its host port's line rate to the same
destination as bench_ecmp_flows flows (5-tuples), each hashed onto one uplink; the
destinations' flow registers give each pair's throughput over bench_measure
(packet_fabric_from: bench). The generators are open loop: the bench has no hosts to
run TCP. With bench_packet_fabric model the packet fabric's row is the model's at the
bench's shape (one host port per FA, one link to each FE; packet_fabric_from: model).`

func permutationParams() []o.ParamSpec {
	return append([]o.ParamSpec{
		{Name: "fas", Type: o.TypeInt, Default: int64(16), Min: o.Bound(2), Max: o.Bound(256), Description: "FAs (ToRs)"},
		{Name: "ports_per_fa", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(64), Description: "host ports per FA; the FA has as many fabric links"},
		{Name: "fes", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(64), Description: "FEs (spines); must divide ports_per_fa"},
		// §6.3 (App. D): 10 Gb/s everywhere.
		{Name: "gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 10.0, Min: o.Bound(1), Max: o.Bound(1000), Description: "rate of every host port and fabric link (§6.3: 10 Gb/s)"},
		{Name: "sd_packet_bytes", Type: o.TypeInt, Unit: "B", Default: int64(512), Min: o.Bound(64), Max: o.Bound(9216), Description: "Stardust's packets (§6.3: 512 B)"},
		{Name: "cell_bytes", Type: o.TypeInt, Unit: "B", Default: int64(512), Min: o.Bound(32), Max: o.Bound(4096), Description: "cell payload bound (App. D: 512 B)"},
		{Name: "credit_bytes", Type: o.TypeInt, Unit: "B", Default: int64(4096), Min: o.Bound(256), Max: o.Bound(1 << 20), Description: "data one credit releases (§6.3: 4 KB)"},
		{Name: "speed_up", Type: o.TypeFloat, Unit: "1", Default: 0.03, Min: o.Bound(0), Max: o.Bound(1), Description: "credit rate above the port rate (§6.3: 3%)"},
		{Name: "packet_bytes", Type: o.TypeInt, Unit: "B", Default: int64(9000), Min: o.Bound(64), Max: o.Bound(9216), Description: "packet fabric's packets (§6.3: 9000 B)"},
		{Name: "link_m", Type: o.TypeFloat, Unit: "m", Default: 100.0, Min: o.Bound(0), Max: o.Bound(100000), Description: "fibre length of every fabric link, at 5 ns/m"},
		fciReactionParam(),
		// Ours, as stardust-incast's.
		{Name: "switch_buffer_kb", Type: o.TypeFloat, Unit: "KB", Default: 128.0, Min: o.Bound(10), Max: o.Bound(1e6), Description: "packet fabric: drop-tail buffer of every switch output, 1024 B a KB"},
		{Name: "init_window", Type: o.TypeInt, Unit: "packets", Default: int64(10), Min: o.Bound(1), Max: o.Bound(1000), Description: "packet fabric: a sender's first window"},
		{Name: "rto", Type: o.TypeDuration, Default: time.Millisecond, Min: o.Bound(1e-6), Max: o.Bound(1), Description: "packet fabric: retransmission timeout"},
		{Name: "warmup", Type: o.TypeDuration, Default: time.Millisecond, Min: o.Bound(0), Max: o.Bound(1), Description: "simulated time before measuring"},
		{Name: "measure", Type: o.TypeDuration, Default: 10 * time.Millisecond, Min: o.Bound(1e-4), Max: o.Bound(10), Description: "simulated time measured"},
		// The bench's fabric: as stardust-fabric's defaults.
		{Name: "fci_threshold", Type: o.TypeInt, Unit: "frames", Default: int64(32), Min: o.Bound(0), Max: o.Bound(1 << 16), Description: "bench only: FE queue depth that marks FCI; 0 turns FCI off"},
		{Name: "reach_period", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "bench only: reachability cell and aging period (Table 4: 10 us)"},
		{Name: "bench_ecmp_flows", Type: o.TypeInt, Unit: "flows", Default: int64(1), Min: o.Bound(1), Max: o.Bound(64), Description: "bench only: flows (5-tuples) each host port's traffic is carried as on the packet-switched bench, each hashed to one uplink"},
	}, append(packetBenchParams(), benchParams(200*time.Microsecond, 50*time.Microsecond, time.Millisecond)...)...)
}

// PermutationTables are the recipe's tables and figure.
func PermutationTables() []results.Table {
	return []results.Table{
		{Name: "permutation_flows", Title: "Per-flow throughput (Fig. 10a)", Description: "One row per fabric and flow, in increasing order of throughput.",
			Fields: []results.Field{
				{Name: "fabric", Type: "string", Description: "stardust or packet (ECMP)"},
				{Name: "rank", Type: "integer", Description: "1 is the slowest flow"},
				{Name: "src_port", Type: "integer"}, {Name: "dst_port", Type: "integer"},
				{Name: "throughput_gbps", Type: "number", Unit: "Gb/s"},
				{Name: "utilisation", Type: "number", Unit: "1", Description: "over the port rate"},
			},
			Figures: []results.Figure{{Name: "fig10a-permutation", Title: "Per-flow throughput, permutation",
				Caption: "As Stardust Fig. 10(a): every flow's throughput in increasing order, Stardust against ECMP on a packet-switched fabric of the same shape, from the model (on a bench: Stardust's from the switches, the packet fabric's from the same switches running p4/ecmp, or from the model at the bench's shape).",
				Kind:    results.Line, X: "rank", Y: "throughput_gbps", Series: []string{"fabric"},
				XLabel: "Flow (by throughput)", YLabel: "Throughput (Gb/s)"}}},
		{Name: "permutation_points", Title: "Per fabric", Description: "One row per fabric.",
			Fields: []results.Field{
				{Name: "fabric", Type: "string"},
				{Name: "flows", Type: "integer"},
				{Name: "mean_utilisation", Type: "number", Unit: "1"},
				{Name: "min_gbps", Type: "number", Unit: "Gb/s"}, {Name: "median_gbps", Type: "number", Unit: "Gb/s"},
				{Name: "share_at_94pct", Type: "number", Unit: "1", Description: "flows at 0.944 of the port rate or more (§6.3: 9.44 Gb/s of 10)"},
				{Name: "jain", Type: "number", Unit: "1", Description: "Jain's index over the flows' throughputs"},
				{Name: "lost", Type: "integer", Description: "cells lost (stardust) or packets dropped (packet)"},
				{Name: "fci_cells", Type: "integer", Description: "stardust: cells that arrived marked FCI"},
			}},
	}
}

// PermutationPoint is one fabric's result.
type PermutationPoint struct {
	Flows           int     `json:"flows"`
	MeanUtilisation float64 `json:"mean_utilisation"`
	MinGbps         float64 `json:"min_gbps"`
	MedianGbps      float64 `json:"median_gbps"`
	ShareAt94       float64 `json:"share_at_94pct"`
	Jain            float64 `json:"jain"`
	Lost            int64   `json:"lost"`
	FCICells        int64   `json:"fci_cells"`
}

// PermutationSummary is summary.json.
type PermutationSummary struct {
	Partial   bool `json:"partial"`
	ModelOnly bool `json:"model_only"`
	// MeasuredOn is "bench" when Stardust's flows were measured on the
	// switches of a Stardust bench (empty for the model); PacketFrom then
	// says where the packet fabric's row comes from.
	MeasuredOn string                      `json:"measured_on,omitempty"`
	PacketFrom string                      `json:"packet_fabric_from,omitempty"`
	Fabric     string                      `json:"fabric"`
	Fabrics    map[string]PermutationPoint `json:"fabrics"`
	// CellsLost is what Stardust lost.
	CellsLost int64 `json:"cells_lost"`
}

func permutationConfig(p *o.Params) (sd.Fabric, error) {
	c := sd.DefaultFabric()
	c.FAs, c.FEs, c.PortsPerFA = int(p.Int("fas")), int(p.Int("fes")), int(p.Int("ports_per_fa"))
	c.LinksPerFA, c.Groups, c.Stages = c.PortsPerFA, 1, 1
	c.PortBps = p.Float("gbps") * 1e9
	c.LinkBps = c.PortBps
	c.CellBytes, c.CreditBytes = int(p.Int("cell_bytes")), int(p.Int("credit_bytes"))
	c.SpeedUp = p.Float("speed_up")
	c.PacketBytes = int(p.Int("sd_packet_bytes"))
	c.FCIReaction = p.String("fci_reaction")
	c.PropDelay = time.Duration(p.Float("link_m") * 5)
	c.Load = 0
	return c, c.Validate()
}

// derangement maps every port to a port of another FA, each taken once:
// a uniformly random one if one of the first thousand permutations drawn
// is, else every FA's ports to a random other FA's, shuffled (few FAs of
// many ports make the first rare).
func derangement(r *rand.Rand, fas, per int) []int {
	n := fas * per
	for range 1000 {
		d := r.Perm(n)
		ok := true
		for i, j := range d {
			if i/per == j/per {
				ok = false
				break
			}
		}
		if ok {
			return d
		}
	}
	shift := 1 + r.IntN(fas-1)
	d := make([]int, n)
	for f := 0; f < fas; f++ {
		to := (f + shift) % fas
		for j, k := range r.Perm(per) {
			d[f*per+j] = to*per + k
		}
	}
	return d
}

// permFlow is one flow's measured throughput.
type permFlow struct {
	src, dst int
	gbps     float64
}

// writePermutation writes one fabric's flows in increasing order of
// throughput and its row of permutation_points, and returns the row.
// fci is nil where the fabric has no FCI or it cannot be counted.
func writePermutation(rc *o.RunContext, fabric string, fs []permFlow, portGbps float64, lost int64, fci *int64) (PermutationPoint, error) {
	var pt PermutationPoint
	if len(fs) == 0 {
		return pt, fmt.Errorf("%s: no flows", fabric)
	}
	g := make([]float64, len(fs))
	for i, f := range fs {
		g[i] = f.gbps
	}
	slices.SortStableFunc(fs, func(a, b permFlow) int {
		switch {
		case a.gbps < b.gbps:
			return -1
		case a.gbps > b.gbps:
			return 1
		}
		return 0
	})
	t, err := rc.Table("permutation_flows")
	if err != nil {
		return pt, err
	}
	pt = PermutationPoint{Flows: len(fs), MinGbps: fs[0].gbps, MedianGbps: fs[len(fs)/2].gbps, Jain: Jain(g), Lost: lost}
	for k, f := range fs {
		if err := t.Write(fabric, k+1, f.src, f.dst, f.gbps, f.gbps/portGbps); err != nil {
			return pt, err
		}
		pt.MeanUtilisation += f.gbps / portGbps / float64(len(fs))
		if f.gbps >= 0.944*portGbps {
			pt.ShareAt94 += 1 / float64(len(fs))
		}
	}
	pp, err := rc.Table("permutation_points")
	if err != nil {
		return pt, err
	}
	var fciv any
	if fci != nil {
		pt.FCICells = *fci
		fciv = *fci
	}
	if err := pp.Write(fabric, pt.Flows, pt.MeanUtilisation, pt.MinGbps, pt.MedianGbps, pt.ShareAt94, pt.Jain, pt.Lost, fciv); err != nil {
		return pt, err
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%s: mean utilisation %.3f, slowest flow %.2f Gb/s, median %.2f, %.0f%% of flows at 94%% or more, %d lost",
		fabric, pt.MeanUtilisation, pt.MinGbps, pt.MedianGbps, 100*pt.ShareAt94, pt.Lost)})
	return pt, nil
}

// simulatePermutation runs one fabric of device fd ("stardust" or
// "packet") with a flow from every port i to port dst[i] for warm + meas
// cell times, and returns the flows' throughputs over meas, what was lost
// (cells or packets) and the cells that arrived marked FCI (Stardust).
func simulatePermutation(ctx context.Context, fd fabric.Fabric, seed uint64, kind string, c sd.Fabric, po sd.PacketFabricOpts, packetBytes int, dst []int, warm, meas int64) ([]permFlow, int64, *int64, error) {
	slot := c.SlotSeconds()
	// Long flows: more than the port carries in the whole run.
	bytes := int64(2 * c.PortBps / 8 * float64(warm+meas) * slot)
	cells := kind == "stardust"
	var err error
	if cells {
		err = fd.OpenCells(ctx, c, fabric.Seed{seed, 0x5d})
	} else {
		err = fd.OpenPackets(ctx, c, po, fabric.Seed{seed, 0xec})
	}
	if err != nil {
		return nil, 0, nil, err
	}
	for src, d := range dst {
		fl := fabric.Flow{Src: src / c.PortsPerFA, Port: d, Bytes: bytes, PacketBytes: packetBytes}
		if cells {
			fl.PacketBytes = c.PacketBytes
		}
		if _, err := fd.AddFlow(ctx, fl); err != nil {
			return nil, 0, nil, err
		}
	}
	// lost and fci read the fabric's counters: cells lost and cells
	// marked FCI, or packets dropped.
	counters := func() (lost, fci int64, err error) {
		if !cells {
			ps, err := fd.PacketStats(ctx)
			return ps.Drops, 0, err
		}
		s, err := fd.Stats(ctx)
		return s.CellsLost + s.CellsLostFailed + s.CellsNoRoute, s.FCICells, err
	}
	if err := runSlots(ctx, fd, warm); err != nil {
		return nil, 0, nil, err
	}
	start, err := fd.Flows(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	lost0, fci0, err := counters()
	if err != nil {
		return nil, 0, nil, err
	}
	if err := runSlots(ctx, fd, meas); err != nil {
		return nil, 0, nil, err
	}
	end, err := fd.Flows(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	if len(start) != len(dst) || len(end) != len(dst) {
		return nil, 0, nil, fmt.Errorf("the fabric has %d and then %d flows, not the %d offered", len(start), len(end), len(dst))
	}
	lost, fci, err := counters()
	if err != nil {
		return nil, 0, nil, err
	}
	fs := make([]permFlow, len(dst))
	for i, d := range dst {
		fs[i] = permFlow{i, d, float64(end[i].Delivered-start[i].Delivered) * 8 / (float64(meas) * slot) / 1e9}
	}
	var fc *int64
	if cells {
		v := fci - fci0
		fc = &v
	}
	return fs, lost - lost0, fc, nil
}

// Plan implements Recipe. On the model it runs on the lab's fabric device; with
// Stardust switches in the inventory Stardust's half runs on them
// (planBench).
func (r *Permutation) Plan(pc *o.PlanContext) (*o.Plan, error) {
	if b, err := findBench(pc.Lab); err != nil {
		return nil, err
	} else if b != nil {
		return r.planBench(pc, b)
	}
	p := pc.Params
	c, err := permutationConfig(p)
	if err != nil {
		return nil, o.Inputf("%s: the fabric's parameters: %v", PermutationName, err)
	}
	po := permutationPacketOpts(p)
	desc := fmt.Sprintf("%d FAs x %d host ports and %d links of %g Gb/s to %d FEs; Stardust: %d B packets, %d B cells, %d B credits, speed-up %g; packet fabric: ECMP per flow, %d B packets, %d B drop-tail buffers, first window %d, RTO %v; %v links",
		c.FAs, c.PortsPerFA, c.LinksPerFA, c.PortBps/1e9, c.FEs, c.PacketBytes, c.CellBytes, c.CreditBytes, c.SpeedUp, p.Int("packet_bytes"), po.BufferBytes, po.InitWindow, po.RTO, c.PropDelay)
	dev, err := bindFabric(pc.Lab)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	sum := PermutationSummary{ModelOnly: true, Fabric: desc, Fabrics: map[string]PermutationPoint{}}
	plan := &o.Plan{Tables: PermutationTables(),
		Bindings: []o.Binding{modelBinding(dev, "the cell-level fabric and the packet-switched one alone (model_only): "+desc)},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || len(s.Fabrics) < 2
			return s, nil
		}}
	slot := c.SlotSeconds()
	warm := int64(p.Duration("warmup").Seconds() / slot)
	meas := max(1, int64(p.Duration("measure").Seconds()/slot))
	for _, fabric := range []string{"stardust", "packet"} {
		plan.Steps = append(plan.Steps, &o.Step{Name: fabric, Action: "simulate", Devices: []string{dev}, Note: fmt.Sprintf("%d + %d cell times of %.1f ns", warm, meas, slot*1e9),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				fd, err := fabricOf(rc, dev)
				if err != nil {
					return err
				}
				dst := derangement(rand.New(rand.NewPCG(rc.Seed, 0x9e)), c.FAs, c.PortsPerFA)
				fs, lost, fci, err := simulatePermutation(ctx, fd, rc.Seed, fabric, c, po, int(p.Int("packet_bytes")), dst, warm, meas)
				if err != nil {
					return err
				}
				pt, err := writePermutation(rc, fabric, fs, c.PortBps/1e9, lost, fci)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				sum.Fabrics[fabric] = pt
				if fabric == "stardust" {
					sum.CellsLost = pt.Lost
				}
				return nil
			}})
	}
	return plan, nil
}

func permutationPacketOpts(p *o.Params) sd.PacketFabricOpts {
	return sd.PacketFabricOpts{BufferBytes: int(p.Float("switch_buffer_kb") * 1024), InitWindow: int(p.Int("init_window")), RTO: p.Duration("rto")}
}
