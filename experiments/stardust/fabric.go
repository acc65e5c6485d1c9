// Package stardust holds the Stardust recipes (Zilberman, Bracha,
// Schzukin, "Stardust: Divide and Conquer in the Data Center Network",
// NSDI'19): stardust-fabric (Fig. 9, fabric latency and last-stage FE
// queues against utilisation), stardust-packing (Figs. 8 and 3,
// throughput of a datapath against packet size, packed cells against
// packets and unpacked cells), stardust-incast (Fig. 10c, incast
// against a packet-switched fabric), stardust-failover (§5.9, §5.10,
// App. E: self-healing after a dark link, a dead FE, a corrupting link)
// stardust-permutation (Fig. 10a, per-flow throughput against ECMP) and
// stardust-pushpull (Figs. 7 and 12, a pull fabric against a push one).
//
// All run on the cell-level model, reached through a fabric device (kind
// fabric, dut/fabric; the simulated lab serves it); §6.2's scale
// (256 FAs x 32 links) is beyond any bench. Their summaries say so
// (model_only). stardust-fabric and stardust-packing also run on a
// Stardust bench (bench.go) when the inventory has one: then every figure
// comes from the switches, through the switch driver (measured_on: bench).
package stardust

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// FabricName is the recipe's name on the command line.
const FabricName = "stardust-fabric"

// Fabric is the stardust-fabric recipe.
type Fabric struct{}

// NewFabric returns the recipe.
func NewFabric() *Fabric { return &Fabric{} }

// Meta implements orchestrator.Recipe.
func (*Fabric) Meta() o.Meta {
	return o.Meta{
		Name:        FabricName,
		Version:     "1.5.0",
		Summary:     "Stardust fabric latency and last-stage FE queue distributions against utilisation, with M/D/1 (Fig. 9); on the model, or on a Stardust bench",
		Description: fabricDescription,
		Params:      fabricParams(),
		// Fig. 9: the tail latency per utilisation and how far the queues are from M/D/1.
		Headlines: []string{"points.*.latency_p999_us", "max_latency_us_below_1", "md1_max_excess"},
	}
}

const fabricDescription = `Runs the cell-level Stardust model (simlab/stardustmodel) of a two-tier fabric, FA ->
FE1 -> FE2 -> FE1 -> FA, at each utilisation in utilisations, and reports what Fig. 9 of
the paper shows: the distribution of the fabric traversal latency (leaving the source FA
to reaching the destination FA) and of the last-stage FE output queues, with the
discrete-time M/D/1 prediction (§4.2.1) beside each queue distribution, at the link
utilisation the model measured. Every host port offers Poisson packets to uniformly
chosen ports of the other FAs; VOQs get credits from the destination port's scheduler
(port rate x (1 + speed_up), credit_bytes each), pack each credit's release into cells,
and spray them over the links by a random permutation; FEs mark FCI above fci_threshold
and the schedulers throttle. A utilisation is the offered data over the fabric's data
capacity after cell headers and link overheads (as §6.2 defines it), so 1.2 is an
oversubscribed fabric held by FCI. Reachability cells run every reach_period (th 3).

scale=small (default) is fas (32) FAs of 8 links, 8 first-tier FEs in 2 groups and fas
second-tier FEs; scale=paper is §6.2's 256 FAs x 32 links, 128 + 64 FEs (minutes per
utilisation). The model runs on the lab's fabric device (kind fabric: the simulated lab's
fabric1) and stands for the fabric (model_only in the summary). Writes data/fabric_points.csv, fabric_latency.csv and fabric_queue.csv.

On a Stardust bench (switches with the inventory option stardust_role fa or fe, e.g.
--bench stardust) the same tables come from the switches (measured_on: bench in the
summary): the FAs and FEs run p4/stardust's programs, brought up through the switch
driver (ids, spraying over a random permutation of each FA's links, credits at the host
port's rate x (1 + speed_up) in credits of credit_bytes, reachability cells and aging
every reach_period, the FEs' and the FAs' fabric ports' FCI threshold of fci_threshold
frames: the bench's links carry just the host port's rate, so the FA's own links are
where credits above it queue first), and at each
utilisation every FA's packet generator sends frames of cell_bytes (a frame is a cell on
Tofino) uniformly to the other FAs' host ports at that fraction of its fabric links'
capacity: by default from five applications with uniformly jittered gaps (the generator's
ibg_jitter; a Tofino draws no exponential gaps), or paced (bench_arrivals). Latency comes from the destination FAs' histograms (64 ns buckets, from the
source FA's timestamp), the queue from the FEs' histograms of what each cell found ahead
of it, in frames, beside M/D/1's distribution of the frames waiting (max(Q - 1, 0)); link
busy from the FEs' port counters. The bench_* parameters set the
ports' speeds and the times on the switches' clock, the spraying's evenness
(bench_hot_share: a share of every FA's spraying slots on its link to the first FE, the
case where the queues exceed M/D/1), and the FAs' reassembly timeout
(bench_reasm_timeout): a frame lost on the way holds its source's later frames at the
destination that long, then its number is given up (reassembly_drops); lost counts the
frames sent to the fabric that never reached their FA.`

func fabricParams() []o.ParamSpec {
	return append([]o.ParamSpec{
		{Name: "scale", Type: o.TypeString, Default: "small", Enum: []string{"small", "paper"}, Description: "small: 32 FAs x 8 links, two FE tiers; paper: §6.2's 256 FAs x 32 links, 128 + 64 FEs"},
		// Fig. 9: 50% ... 95% and an oversubscribed 120% with FCI.
		{Name: "fas", Type: o.TypeInt, Default: int64(32), Min: o.Bound(4), Max: o.Bound(256), Description: "scale=small: the FAs, an even number (two groups; as many second-tier FEs)"},
		{Name: "utilisations", Type: o.TypeFloats, Unit: "1", Default: []float64{0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.2}, Min: o.Bound(0.01), Max: o.Bound(2), Description: "offered data over the fabric's data capacity, one run each"},
		{Name: "slots", Type: o.TypeInt, Unit: "cell times", Default: int64(0), Min: o.Bound(0), Max: o.Bound(1e8), Description: "fabric cell times per utilisation (0: 100000 for small, 8000 for paper)"},
		{Name: "warmup", Type: o.TypeInt, Unit: "cell times", Default: int64(2000), Min: o.Bound(0), Max: o.Bound(1e7), Description: "cell times run before measuring"},
		// §6.2 extrapolated: 256 B cells, 50 Gb/s links.
		{Name: "cell_bytes", Type: o.TypeInt, Unit: "B", Default: int64(256), Min: o.Bound(32), Max: o.Bound(4096), Description: "cell payload bound (§3.2, §6.2: 256 B)"},
		{Name: "link_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 50.0, Min: o.Bound(1), Max: o.Bound(1000), Description: "fabric link rate (Table 4: 50 Gb/s)"},
		// §6.3: 4 KB credits, 3% speed-up.
		{Name: "credit_bytes", Type: o.TypeInt, Unit: "B", Default: int64(4096), Min: o.Bound(256), Max: o.Bound(1 << 20), Description: "data one credit releases (§6.3: 4 KB)"},
		{Name: "speed_up", Type: o.TypeFloat, Unit: "1", Default: 0.03, Min: o.Bound(0), Max: o.Bound(1), Description: "credit rate above the port rate (§4.1: ~2%, §6.3: 3%)"},
		// §6.2: 100 m links; §5.6: 100 m is half a microsecond.
		{Name: "link_m", Type: o.TypeFloat, Unit: "m", Default: 100.0, Min: o.Bound(0), Max: o.Bound(100000), Description: "fibre length of every fabric link, at 5 ns/m"},
		fciReactionParam(),
		{Name: "packet_bytes", Type: o.TypeInt, Unit: "B", Default: int64(1500), Min: o.Bound(64), Max: o.Bound(9216), Description: "host packet size"},
		{Name: "fe_queue_cells", Type: o.TypeInt, Unit: "cells", Default: int64(128), Min: o.Bound(4), Max: o.Bound(1 << 20), Description: "FE output queue capacity; a cell arriving to a full one is lost and counted"},
		{Name: "fci_threshold", Type: o.TypeInt, Unit: "cells", Default: int64(32), Min: o.Bound(0), Max: o.Bound(1 << 20), Description: "FE queue depth that marks FCI (§4.2); on the bench (in frames) also the FAs' fabric ports'; 0 turns FCI off"},
		// Table 4: c/f = 10 us, th = 3.
		{Name: "reach_period", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(0), Max: o.Bound(0.01), Description: "reachability cell period on every link (Table 4: 10 us); 0 turns reachability cells off"},
		// The bench's worst fabric latency is under what the FAs' latency
		// histograms span (512 buckets of 64 ns, 32.8 us) at every
		// utilisation: a frame not lost has arrived by then, and a frame
		// numbered after it was sent after it, so a timer of that span
		// rounded up to the microsecond gives up no frame that arrives.
		{Name: "bench_arrivals", Type: o.TypeString, Default: arrivalsJittered, Enum: []string{arrivalsJittered, arrivalsPaced}, Description: "bench only: how each FA's packet generator spaces its frames. jittered: five generator applications, one frame per batch, each gap jittered uniformly (the generator's ibg_jitter), their sum thinned over destinations: random arrivals, as near Poisson as a Tofino generator comes; paced: batches at a fixed period"},
		{Name: "bench_hot_share", Type: o.TypeFloat, Unit: "1", Default: 0.0, Min: o.Bound(0), Max: o.Bound(1), Description: "bench only: the share of every FA's spraying slots on its link to the first FE, the rest spread evenly over its other links (0: a random permutation, each link an equal share). A spray that is not uniform loads that FE's links above the others, and the queues' mixture exceeds M/D/1 at the average busy fraction (§4.2.1 assumes even load balancing)"},
		{Name: "bench_reasm_timeout", Type: o.TypeDuration, Default: 33 * time.Microsecond, Min: o.Bound(0), Max: o.Bound(0.002), Description: "bench only: the FAs' reassembly timer (§4.1): an early frame this long after its source sent it gives up the missing frames before it, and its source's later frames go on; 0 waits for ever. Default: the FAs' latency histogram's span (32.8 us), above the bench's worst fabric latency, rounded up to a microsecond"},
	}, benchParams(500*time.Microsecond, 100*time.Microsecond, 2*time.Millisecond)...)
}

// FabricTables are the recipe's tables and Fig. 9.
func FabricTables() []results.Table {
	return []results.Table{
		{Name: "fabric_points", Title: "Fabric per utilisation", Description: "One row per utilisation: what the last-stage FE links carried and the fabric latency's quantiles.",
			Fields: []results.Field{
				{Name: "utilisation", Type: "number", Unit: "1", Description: "offered data over the fabric's data capacity"},
				{Name: "host_load", Type: "number", Unit: "1", Description: "offered load of every host port, a fraction of its rate"},
				{Name: "link_busy", Type: "number", Unit: "1", Description: "measured busy fraction of the last-stage FE links (headers, overheads and cell tails included): the M/D/1 rho"},
				{Name: "data_utilisation", Type: "number", Unit: "1", Description: "measured delivered data over the fabric's data capacity"},
				{Name: "latency_p50_us", Type: "number", Unit: "us"}, {Name: "latency_p99_us", Type: "number", Unit: "us"},
				{Name: "latency_p999_us", Type: "number", Unit: "us"}, {Name: "latency_max_us", Type: "number", Unit: "us"},
				{Name: "queue_p999_cells", Type: "integer", Unit: "cells", Description: "99.9th percentile of the last-stage queue samples"},
				{Name: "md1_max_excess", Type: "number", Unit: "1", Description: "largest P(Q>=k) of the model above M/D/1's, over k (empty at utilisation 1 or more)"},
				{Name: "md1_tail_ratio", Type: "number", Unit: "1", Description: "largest P(Q>=k) of the model over M/D/1's where M/D/1 gives 1e-3 to 1e-4: above 1, a tail heavier than M/D/1 bounds (§5.7)"},
				{Name: "cells_sent", Type: "integer", Unit: "cells"}, {Name: "fci_cells", Type: "integer", Unit: "cells", Description: "cells that arrived marked FCI"},
				{Name: "cells_lost", Type: "integer", Unit: "cells", Description: "cells that found an FE queue full, or a failed link"},
				{Name: "slots", Type: "integer", Unit: "cell times", Description: "cell times measured (after warmup)"},
				{Name: "wall_seconds", Type: "number", Unit: "s", Description: "wall time of the run (warmup included)"},
			}},
		{Name: "fabric_latency", Title: "Fabric latency distribution (Fig. 9 left)", Description: "One row per utilisation and latency seen: the fraction of cells whose traversal took that long (whole cell times).",
			Fields: []results.Field{
				{Name: "utilisation", Type: "number", Unit: "1"},
				{Name: "latency_us", Type: "number", Unit: "us"},
				{Name: "probability", Type: "number", Unit: "1"},
			},
			Figures: []results.Figure{{
				Name: "fig9-latency", Title: "Probability distribution of fabric latency",
				Caption: "As Stardust Fig. 9 (left): fabric traversal from the source FA to the destination FA, per utilisation, from the cell-level model or, on a bench, from the emulated switches (the summary's measured_on says which).",
				Kind:    results.Line, X: "latency_us", Y: "probability", Series: []string{"utilisation"}, Legend: "utilisation {utilisation}",
				LogY: true, XLabel: "Latency (µs)", YLabel: "Probability"}},
		},
		{Name: "fabric_queue", Title: "Last-stage FE queue size distribution (Fig. 9 right)", Description: "One row per utilisation, source (model or M/D/1 at the model's measured link busy fraction) and queue size: the fraction of (cell time, link) samples with that many cells queued, the one in service included. On a bench (source bench): the fraction of cells that found that many frames waiting ahead of them, the one on the wire not counted, and M/D/1 of the same, max(Q - 1, 0).",
			Fields: []results.Field{
				{Name: "utilisation", Type: "number", Unit: "1"},
				{Name: "source", Type: "string", Description: "model or M/D/1"},
				{Name: "queue_cells", Type: "integer", Unit: "cells"},
				{Name: "probability", Type: "number", Unit: "1"},
			},
			Figures: []results.Figure{{
				Name: "fig9-queue", Title: "Probability distribution of last-stage FE queue size",
				Caption: "As Stardust Fig. 9 (right): the last-stage FE output queues per utilisation (the model's, or the emulated FEs' on a bench), and the M/D/1 prediction (§4.2.1) at the measured link busy fraction.",
				Kind:    results.Line, X: "queue_cells", Y: "probability", Series: []string{"utilisation", "source"}, Legend: "{source}, utilisation {utilisation}",
				LogY: true, XLabel: "Queue size (cells)", YLabel: "Probability"}},
		},
	}
}

// FabricPoint is one utilisation's headline numbers.
type FabricPoint struct {
	Utilisation     float64  `json:"utilisation"`
	LinkBusy        float64  `json:"link_busy"`
	DataUtilisation float64  `json:"data_utilisation"`
	LatencyP50US    float64  `json:"latency_p50_us"`
	LatencyP999US   float64  `json:"latency_p999_us"`
	LatencyMaxUS    float64  `json:"latency_max_us"`
	QueueP999       int      `json:"queue_p999_cells"`
	MD1MaxExcess    *float64 `json:"md1_max_excess,omitempty"`
	MD1TailRatio    *float64 `json:"md1_tail_ratio,omitempty"`
	FCICells        int64    `json:"fci_cells"`
	CellsSent       int64    `json:"cells_sent"`
	CellsLost       int64    `json:"cells_lost"`
	// On the bench, the whole point's accounting (traffic start to the
	// end of the drain): data frames the generators sent, released at the
	// host ports, dropped waiting for credit, lost in FE queues, and
	// counted by the latency histograms on arrival.
	FramesGenerated   int64 `json:"frames_generated,omitempty"`
	FramesDelivered   int64 `json:"frames_delivered,omitempty"`
	FramesWaitDropped int64 `json:"frames_wait_dropped,omitempty"`
	FabricDrops       int64 `json:"fabric_drops,omitempty"`
	CellsArrived      int64 `json:"cells_arrived,omitempty"`
	// ReassemblyDrops is the sequence numbers the destination FAs gave up
	// at their reassembly timeout (frames lost on the way, dropped waiting
	// their turn, or arriving after their number was given up);
	// ReorderDrops the early frames dropped waiting their turn.
	ReassemblyDrops int64 `json:"reassembly_drops"`
	ReorderDrops    int64 `json:"reorder_drops,omitempty"`
	// DrainUS is how long after the window the accounting was read: until
	// every frame was released or counted dropped, or bench_drain.
	DrainUS float64 `json:"drain_us,omitempty"`
}

// FabricSummary is summary.json.
type FabricSummary struct {
	Partial bool `json:"partial"`
	// ModelOnly says the numbers are the model's, not a lab's.
	ModelOnly bool    `json:"model_only"`
	Scale     string  `json:"scale"`
	Fabric    string  `json:"fabric"`
	SlotNS    float64 `json:"slot_ns"`
	Slots     int64   `json:"slots"`
	// MeasuredOn is "bench" when the numbers come from the switches of a
	// Stardust bench (empty for the model).
	MeasuredOn string `json:"measured_on,omitempty"`
	// Points are keyed u<utilisation in percent>: u95.
	Points map[string]FabricPoint `json:"points"`
	// CellsLost is every cell lost in the fabric, all utilisations.
	CellsLost int64 `json:"cells_lost"`
	// MaxLatencyUS is the largest traversal below utilisation 1 (the
	// paper: 13 us at 95%); MD1MaxExcess the worst excess of P(Q>=k) over
	// M/D/1 among them (the body of the distribution, where bursts of
	// sprayed credits make it heavier).
	MaxLatencyUS float64 `json:"max_latency_us_below_1"`
	MD1MaxExcess float64 `json:"md1_max_excess"`
	// MD1TailRatio is the worst tail ratio to M/D/1 below utilisation 1
	// and above it FCI takes over.
	MD1TailRatio float64 `json:"md1_tail_ratio"`
}

// fabricConfig is the model for scale with the recipe's parameters, at
// utilisation u.
func fabricConfig(p *o.Params, u float64) (sd.Fabric, error) {
	c := sd.DefaultFabric()
	switch p.String("scale") {
	case "paper":
		c = sd.PaperFabric()
	default:
		n := int(p.Int("fas"))
		if n%2 != 0 {
			return c, fmt.Errorf("fas %d: expected an even number (two groups of FAs)", n)
		}
		// Each group's n/2 FAs reach its 4 FEs by 2 links each: an FE has
		// n links down, so n second-tier FEs, one link up to each.
		c.FAs, c.FEs, c.LinksPerFA, c.Groups, c.Stages, c.FE2s = n, 8, 8, 2, 2, n
	}
	c.CellBytes = int(p.Int("cell_bytes"))
	c.LinkBps = p.Float("link_gbps") * 1e9
	c.CreditBytes = int(p.Int("credit_bytes"))
	c.SpeedUp = p.Float("speed_up")
	c.PropDelay = time.Duration(p.Float("link_m") * 5) // 5 ns/m in fibre
	c.PacketBytes = int(p.Int("packet_bytes"))
	c.FEQueueCells = int(p.Int("fe_queue_cells"))
	c.FCIThreshold = int(p.Int("fci_threshold"))
	c.FCIReaction = p.String("fci_reaction")
	// The host ports carry what the fabric links do (a fabric speed-up
	// of 1 in raw rate, §3.1): their number is kept, their rate follows
	// link_gbps.
	c.PortBps = c.LinkBps * float64(c.LinksPerFA) / float64(c.PortsPerFA)
	c.ReachTh = 3
	c.ReachPeriodSlots = 0
	if rp := p.Duration("reach_period"); rp > 0 {
		c.ReachPeriodSlots = int(math.Round(rp.Seconds() / c.SlotSeconds()))
	}
	// Offered data over the fabric's data capacity: the links' rate less
	// cell headers and link overhead (§6.2).
	data := float64(c.CellBytes) / float64(c.CellBytes+c.CellHeaderBytes+c.LinkOverheadBytes)
	c.Load = u * data * c.LinkBps * float64(c.LinksPerFA) / (c.PortBps * float64(c.PortsPerFA))
	return c, c.Validate()
}

// fciReactionParam selects the model's FCI law (sd.Fabric.FCIReaction):
// the cut law the model's results were made with, or the Tofino programs'
// proportional one. The bench runs the programs' law whatever it says.
func fciReactionParam() o.ParamSpec {
	return o.ParamSpec{Name: "fci_reaction", Type: o.TypeString, Default: sd.FCICut, Enum: []string{sd.FCICut, sd.FCIProportional},
		Description: "model only: the egress scheduler's FCI law; cut: 10% cut at most once per control round trip, linear recovery over 5000 cell times; proportional: a credit cancelled per credit's worth of marked cells, as the Tofino programs (both ours, §4.2 gives none)"}
}

// describe says which fabric c is, for the binding and the summary.
func describe(c sd.Fabric) string {
	s := fmt.Sprintf("%d FAs x %d links of %g Gb/s, %d ports of %g Gb/s each; ", c.FAs, c.LinksPerFA, c.LinkBps/1e9, c.PortsPerFA, c.PortBps/1e9)
	if c.Stages == 2 {
		s += fmt.Sprintf("%d first-tier FEs in %d groups, %d second-tier FEs", c.FEs, c.Groups, c.FE2s)
	} else {
		s += fmt.Sprintf("%d FEs", c.FEs)
	}
	s += fmt.Sprintf("; %d B cells + %d B header + %d B link overhead, %d B credits, speed-up %g, %v links, FE queues %d cells, FCI at %d",
		c.CellBytes, c.CellHeaderBytes, c.LinkOverheadBytes, c.CreditBytes, c.SpeedUp, c.PropDelay, c.FEQueueCells, c.FCIThreshold)
	if c.FCIReaction == sd.FCIProportional {
		s += ", FCI reaction proportional"
	}
	return s
}

type fabricRun struct {
	dev string // the fabric device (model mode)
	mu  sync.Mutex
	s   FabricSummary
}

// Plan implements Recipe. On the model it runs on the lab's fabric
// device; with Stardust switches in the inventory, on them (planBench).
func (r *Fabric) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	if b, err := findBench(pc.Lab); err != nil {
		return nil, err
	} else if b != nil {
		return r.planBench(pc, b)
	}
	us := p.Floats("utilisations")
	if len(us) == 0 {
		return nil, o.Inputf("utilisations: expected at least one, e.g. 0.5,0.9,1.2")
	}
	c0, err := fabricConfig(p, us[0])
	if err != nil {
		return nil, o.Inputf("%s: the fabric's parameters: %v", FabricName, err)
	}
	slots := p.Int("slots")
	if slots == 0 {
		slots = 100000
		if p.String("scale") == "paper" {
			slots = 8000
		}
	}
	warm := p.Int("warmup")
	dev, err := bindFabric(pc.Lab)
	if err != nil {
		return nil, err
	}
	run := &fabricRun{dev: dev, s: FabricSummary{ModelOnly: true, Scale: p.String("scale"), Fabric: describe(c0),
		SlotNS: c0.SlotSeconds() * 1e9, Slots: slots, Points: map[string]FabricPoint{}}}
	plan := &o.Plan{Tables: FabricTables(),
		Bindings: []o.Binding{modelBinding(dev, "the cell-level fabric alone (model_only): "+describe(c0))},
		Summary: func(partial bool) (any, error) {
			run.mu.Lock()
			defer run.mu.Unlock()
			s := run.s
			s.Partial = partial
			return s, nil
		}}
	for _, u := range us {
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("utilisation %g", u), Action: "simulate",
			Devices: []string{dev}, Settings: []o.Setting{}, Note: fmt.Sprintf("%d + %d cell times of %.1f ns", warm, slots, c0.SlotSeconds()*1e9),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				return run.point(ctx, rc, p, u, warm, slots)
			}})
	}
	return plan, nil
}

// ukey is a utilisation's key in the summary, in percent without a dot
// (a dot would split the metric path): u95, u120.
func ukey(u float64) string { return "u" + strconv.FormatFloat(math.Round(u*1000)/10, 'f', -1, 64) }

func (run *fabricRun) point(ctx context.Context, rc *o.RunContext, p *o.Params, u float64, warm, slots int64) error {
	c, err := fabricConfig(p, u)
	if err != nil {
		return err
	}
	start := time.Now()
	seed := rc.Seed ^ math.Float64bits(u)
	f, err := openCells(ctx, rc, run.dev, c, seed, 0x5d)
	if err != nil {
		return err
	}
	if err := runSlots(ctx, f, warm); err != nil {
		return err
	}
	base, err := f.Stats(ctx)
	if err != nil {
		return err
	}
	if err := runSlots(ctx, f, slots); err != nil {
		return err
	}
	end, err := f.Stats(ctx)
	if err != nil {
		return err
	}
	s := diffStats(end, base)
	wall := time.Since(start).Seconds()

	data := float64(c.CellBytes) / float64(c.CellBytes+c.CellHeaderBytes+c.LinkOverheadBytes)
	capBytes := data * c.LinkBps / 8 * float64(c.LinksPerFA*c.FAs) * float64(slots) * c.SlotSeconds()
	pt := FabricPoint{Utilisation: u, LinkBusy: s.Utilisation(), DataUtilisation: float64(s.BytesArrived) / capBytes,
		LatencyP50US: s.LatencyQuantile(0.5) * 1e6, LatencyP999US: s.LatencyQuantile(0.999) * 1e6, LatencyMaxUS: s.LatencyQuantile(1) * 1e6,
		QueueP999: queueQuantile(s.QueueHist, 0.999), FCICells: s.FCICells, CellsSent: s.CellsSent, CellsLost: s.CellsLost + s.CellsLostFailed + s.CellsNoRoute}

	lt, err := rc.Table("fabric_latency")
	if err != nil {
		return err
	}
	var nl int64
	for _, v := range s.LatencyHist {
		nl += v
	}
	for k, v := range s.LatencyHist {
		if v > 0 {
			if err := lt.Write(u, float64(k)*c.SlotSeconds()*1e6, float64(v)/float64(nl)); err != nil {
				return err
			}
		}
	}
	qt, err := rc.Table("fabric_queue")
	if err != nil {
		return err
	}
	var nq int64
	for _, v := range s.QueueHist {
		nq += v
	}
	for k, v := range s.QueueHist {
		if v > 0 {
			if err := qt.Write(u, "model", k, float64(v)/float64(nq)); err != nil {
				return err
			}
		}
	}
	var excess, tailRatio any
	// M/D/1 stands for an undersubscribed fabric (§4.2.1); above 1 the
	// arrivals are what FCI lets through, not Poisson.
	if rho := pt.LinkBusy; u < 1 && rho > 0 && rho < 0.999 {
		md := MD1(rho, len(s.QueueHist)-1, 1e-9)
		worst := math.Inf(-1)
		tailMD, tailM := 1.0, 1.0
		for k := range md {
			if err := qt.Write(u, "M/D/1", k, md[k]); err != nil {
				return err
			}
			// P(Q>=k) for both, compared where M/D/1 is defined.
			worst = max(worst, tailM-tailMD)
			tailMD -= md[k]
			tailM -= float64(s.QueueHist[k]) / float64(nq)
		}
		pt.MD1MaxExcess = &worst
		excess = worst
		tailMD, tailM = 1.0, 1.0
		ratio := 0.0
		for k := range md {
			// The tail M/D/1 bounds (§5.7): where it gives 1e-3 to 1e-4
			// (further out a short run has too few samples).
			if tailMD <= 1e-3 && tailMD >= 1e-4 {
				ratio = max(ratio, tailM/tailMD)
			}
			tailMD -= md[k]
			tailM -= float64(s.QueueHist[k]) / float64(nq)
		}
		pt.MD1TailRatio = &ratio
		tailRatio = ratio
	}
	pr, err := rc.Table("fabric_points")
	if err != nil {
		return err
	}
	if err := pr.Write(u, c.Load, pt.LinkBusy, pt.DataUtilisation, pt.LatencyP50US, s.LatencyQuantile(0.99)*1e6, pt.LatencyP999US, pt.LatencyMaxUS,
		pt.QueueP999, excess, tailRatio, pt.CellsSent, pt.FCICells, pt.CellsLost, slots, wall); err != nil {
		return err
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("utilisation %g: links busy %.3f, latency p50 %.2f us p99.9 %.2f us max %.2f us, queue p99.9 %d cells, %d FCI cells, %d cells lost (%.1f s)",
		u, pt.LinkBusy, pt.LatencyP50US, pt.LatencyP999US, pt.LatencyMaxUS, pt.QueueP999, pt.FCICells, pt.CellsLost, wall)})

	run.record(u, pt)
	return nil
}

// diffStats is what a run measured after base: counters and histograms
// less base's.
func diffStats(s, base sd.FabricStats) sd.FabricStats {
	d := s
	d.Slots -= base.Slots
	d.CellsSent -= base.CellsSent
	d.CellsArrived -= base.CellsArrived
	d.CellsLost -= base.CellsLost
	d.CellsLostFailed -= base.CellsLostFailed
	d.CellsNoRoute -= base.CellsNoRoute
	d.FCICells -= base.FCICells
	d.BytesArrived -= base.BytesArrived
	d.FELinkBusy -= base.FELinkBusy
	d.QueueHist = sub(s.QueueHist, base.QueueHist)
	d.LatencyHist = sub(s.LatencyHist, base.LatencyHist)
	return d
}

func sub(a, b []int64) []int64 {
	out := append([]int64(nil), a...)
	for i := range b {
		if i < len(out) {
			out[i] -= b[i]
		}
	}
	return out
}

func queueQuantile(h []int64, q float64) int {
	var n int64
	for _, v := range h {
		n += v
	}
	want := int64(q * float64(n))
	var seen int64
	for k, v := range h {
		seen += v
		if seen > want {
			return k
		}
	}
	return len(h) - 1
}

// benchConfigFrom reads the bench parameters both recipes share.
func benchConfigFrom(p *o.Params, frameBytes int) (benchConfig, error) {
	cfg := benchConfig{LinkGbps: int(p.Int("bench_link_gbps")), HostGbps: int(p.Int("bench_host_gbps")), FrameBytes: frameBytes,
		CreditBytes: int(p.Int("credit_bytes")), SpeedUp: p.Float("speed_up"), ReachPeriod: p.Duration("reach_period"), Replace: p.Bool("replace_program")}
	if frameBytes < 64 || frameBytes > 9216 {
		return cfg, o.Inputf("frames of %d B on the bench: expected 64..9216 (a frame is a cell and holds the %d B Ethernet and cell headers)", frameBytes, sd.EthernetBytes+sd.CellHeaderBytes)
	}
	if cfg.ReachPeriod <= 0 {
		return cfg, o.Inputf("reach_period: the bench needs reachability cells (a period above 0)")
	}
	return cfg, nil
}

// planBench is stardust-fabric on a Stardust bench: the fabric brought up
// through the driver, then at each utilisation every FA's generator sends
// frames of cell_bytes uniformly to the other FAs' host ports, and the
// FAs' latency histograms, the FEs' queue histograms and the ports'
// counters give Fig. 9.
func (r *Fabric) planBench(pc *o.PlanContext, b *bench) (*o.Plan, error) {
	p := pc.Params
	us := p.Floats("utilisations")
	if len(us) == 0 {
		return nil, o.Inputf("utilisations: expected at least one, e.g. 0.5,0.9,1.2")
	}
	frame := int(p.Int("cell_bytes"))
	cfg, err := benchConfigFrom(p, frame)
	if err != nil {
		return nil, err
	}
	cfg.FCIFrames = int(p.Int("fci_threshold"))
	cfg.ReasmTimeout = p.Duration("bench_reasm_timeout")
	cfg.Arrivals = p.String("bench_arrivals")
	cfg.HotShare = p.Float("bench_hot_share")
	if cfg.HotShare > 0 && len(b.FEs) < 2 {
		return nil, o.Inputf("bench_hot_share %g: the bench's FAs have %d fabric link, no other to take the rest", cfg.HotShare, len(b.FEs))
	}
	warm, measure, drain := p.Duration("bench_warmup"), p.Duration("bench_measure"), p.Duration("bench_drain")
	desc := b.describe(cfg.LinkGbps, cfg.HostGbps)
	run := &fabricRun{s: FabricSummary{ModelOnly: false, MeasuredOn: "bench", Scale: fmt.Sprintf("bench: %d FAs x %d FEs", len(b.FAs), len(b.FEs)),
		Fabric: fmt.Sprintf("%s; %d B frames as cells, credits of %d B at %g speed-up, FCI at %d frames, reachability every %v, reassembly timeout %v, %s arrivals", desc, frame, cfg.CreditBytes, cfg.SpeedUp, cfg.FCIFrames, cfg.ReachPeriod, cfg.ReasmTimeout, cfg.Arrivals),
		SlotNS: float64((frame+wireExtra)*8) / float64(cfg.LinkGbps), Points: map[string]FabricPoint{}}}
	if cfg.HotShare > 0 {
		run.s.Fabric += fmt.Sprintf(", %g of every FA's spraying on its link to the first FE", cfg.HotShare)
	}
	var br *benchRun
	devs := b.devices()
	plan := &o.Plan{Tables: FabricTables(),
		Bindings: []o.Binding{{Role: "fabric", Resource: "switches with stardust_role", Detail: desc},
			{Role: "programs", Resource: "switches", Detail: fmt.Sprintf("%s on the FAs, %s on the FEs", sd.ProgramFA, sd.ProgramFE)}},
		Summary: func(partial bool) (any, error) {
			run.mu.Lock()
			defer run.mu.Unlock()
			s := run.s
			s.Partial = partial
			return s, nil
		}}
	plan.Steps = append(plan.Steps, b.upStep(cfg, &br))
	for _, u := range us {
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("utilisation %g", u), Action: "measure", Devices: devs,
			Note: fmt.Sprintf("%v + %v measured + a drain of up to %v, on the switches' clock", warm, measure, drain),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if br == nil {
					return fmt.Errorf("the fabric is not up")
				}
				return run.benchPoint(ctx, rc, br, u, warm, measure, drain)
			}})
	}
	return plan, nil
}

// latencyQuantile is the q quantile of a latency histogram of n cells,
// in buckets; q >= 1 is the highest bucket that holds a cell.
func latencyQuantile(lat []int64, n int64, q float64) float64 {
	if n == 0 {
		return 0
	}
	if q >= 1 {
		k := len(lat) - 1
		for k > 0 && lat[k] == 0 {
			k--
		}
		return float64(k)
	}
	return float64(queueQuantile(lat, q))
}

// frameQueue is a queue histogram in frames of frameBytes, and its count:
// a bucket is QueueBucketCells buffer cells and a frame ceil(s/80) of
// them.
func frameQueue(queue []int64, frameBytes int) ([]int64, int64) {
	perFrame := (frameBytes + sd.TMCellBytes - 1) / sd.TMCellBytes
	var qh []int64
	for b, v := range queue {
		k := b * sd.QueueBucketCells / perFrame
		for len(qh) <= k {
			qh = append(qh, 0)
		}
		qh[k] += v
	}
	var nq int64
	for _, v := range qh {
		nq += v
	}
	return qh, nq
}

// md1Against writes M/D/1's queue distribution at busy fraction rho
// beside the bench's measured one (qh of nq frames) and returns the
// largest excess of the measured tail over M/D/1's and their largest
// ratio where M/D/1's tail is in [1e-4, 1e-3].
//
// The bench counts the frames a cell finds waiting ahead of it, not the
// one on the wire (the traffic manager's queue depth on enqueue); MD1 is
// the number in the system a cell finds (the M/G/1 embedded chain: what
// departures leave, and so, for Poisson arrivals, what arrivals find). The
// M/D/1 rows are therefore of the waiting number, max(Q - 1, 0): P(0) =
// P(Q = 0) + P(Q = 1) and P(k) = P(Q = k + 1).
func md1Against(qt *results.TableWriter, u float64, qh []int64, nq int64, rho float64) (float64, float64, error) {
	md := md1Waiting(MD1(rho, len(qh), 1e-9))
	worst, ratio := math.Inf(-1), 0.0
	tailMD, tailM := 1.0, 1.0
	for k := range md {
		if err := qt.Write(u, "M/D/1", k, md[k]); err != nil {
			return 0, 0, err
		}
		worst = max(worst, tailM-tailMD)
		if tailMD <= 1e-3 && tailMD >= 1e-4 {
			ratio = max(ratio, tailM/tailMD)
		}
		tailMD -= md[k]
		if k < len(qh) {
			tailM -= float64(qh[k]) / float64(nq)
		}
	}
	return worst, ratio, nil
}

// md1Waiting is the distribution of max(Q - 1, 0) for Q distributed as md.
func md1Waiting(md []float64) []float64 {
	if len(md) < 2 {
		return md
	}
	return append([]float64{md[0] + md[1]}, md[2:]...)
}

// record puts utilisation u's point into the summary; the worst latency
// and M/D/1 comparison are over the undersubscribed points.
func (run *fabricRun) record(u float64, pt FabricPoint) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.s.Points[ukey(u)] = pt
	run.s.CellsLost += pt.CellsLost
	if u < 1 {
		run.s.MaxLatencyUS = max(run.s.MaxLatencyUS, pt.LatencyMaxUS)
		if pt.MD1MaxExcess != nil {
			run.s.MD1MaxExcess = max(run.s.MD1MaxExcess, *pt.MD1MaxExcess)
			run.s.MD1TailRatio = max(run.s.MD1TailRatio, *pt.MD1TailRatio)
		}
	}
}

// benchPoint measures one utilisation on the bench.
func (run *fabricRun) benchPoint(ctx context.Context, rc *o.RunContext, br *benchRun, u float64, warm, measure, drain time.Duration) error {
	start := time.Now()
	// A utilisation is offered frames (their wire bits) over the fabric
	// links' capacity, per FA.
	pt0, err := br.runTraffic(ctx, br.cfg.FrameBytes, u*br.fabricCapacity(), br.uniformTargets, warm, measure, drain)
	if err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	bucket := sd.LatencyBucket.Seconds() * 1e6
	var nl int64
	for _, v := range pt0.Lat {
		nl += v
	}
	lq := func(q float64) float64 { return latencyQuantile(pt0.Lat, nl, q) * bucket }
	qh, nq := frameQueue(pt0.Queue, br.cfg.FrameBytes)
	wire := float64((br.cfg.FrameBytes + wireExtra) * 8)
	pt := FabricPoint{Utilisation: u, LinkBusy: br.lastStageBusy(pt0),
		DataUtilisation: float64(pt0.HostFrames) * wire / (br.fabricCapacity() * float64(len(br.FAs)) * pt0.Window.Seconds()),
		LatencyP50US:    lq(0.5), LatencyP999US: lq(0.999), LatencyMaxUS: lq(1), QueueP999: queueQuantile(qh, 0.999),
		// Lost: sent to the fabric (not dropped waiting for credit) and
		// never arrived at the destination FA.
		CellsSent: pt0.Generated, CellsLost: max(0, pt0.Generated-pt0.WaitDrops-pt0.Arrived),
		FramesGenerated: pt0.Generated, FramesDelivered: pt0.Delivered, FramesWaitDropped: pt0.WaitDrops, FabricDrops: pt0.FabricDrops, CellsArrived: pt0.Arrived,
		ReassemblyDrops: pt0.ReasmDrops, ReorderDrops: pt0.ReorderDrops, DrainUS: pt0.Drained.Seconds() * 1e6}
	lt, err := rc.Table("fabric_latency")
	if err != nil {
		return err
	}
	for k, v := range pt0.Lat {
		if v > 0 {
			if err := lt.Write(u, float64(k)*bucket, float64(v)/float64(nl)); err != nil {
				return err
			}
		}
	}
	qt, err := rc.Table("fabric_queue")
	if err != nil {
		return err
	}
	for k, v := range qh {
		if v > 0 {
			if err := qt.Write(u, "bench", k, float64(v)/float64(nq)); err != nil {
				return err
			}
		}
	}
	var excess, tailRatio any
	// M/D/1 (§4.2.1) at the measured busy fraction, for an undersubscribed
	// fabric; the bench's histogram is what arriving cells found, which
	// for Poisson arrivals is the time average (PASTA).
	if rho := pt.LinkBusy; u < 1 && rho > 0 && rho < 0.999 && nq > 0 {
		worst, ratio, err := md1Against(qt, u, qh, nq, rho)
		if err != nil {
			return err
		}
		pt.MD1MaxExcess, pt.MD1TailRatio = &worst, &ratio
		excess, tailRatio = worst, ratio
	}
	pr, err := rc.Table("fabric_points")
	if err != nil {
		return err
	}
	if err := pr.Write(u, pt0.OfferedBps/(float64(br.cfg.HostGbps)*1e9), pt.LinkBusy, pt.DataUtilisation, pt.LatencyP50US, lq(0.99), pt.LatencyP999US, pt.LatencyMaxUS,
		pt.QueueP999, excess, tailRatio, pt.CellsSent, nil, pt.CellsLost, nil, wall); err != nil {
		return err
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("utilisation %g on the bench: last-stage links busy %.3f, data %.3f, latency p50 %.2f us p99.9 %.2f us max %.2f us, queue p99.9 %d frames; %d frames sent, %d released, %d dropped waiting for credit, %d lost in FE queues, %d counted on arrival, %d given up at the reassembly timeout (%d dropped waiting their turn) (%.1f s)",
		u, pt.LinkBusy, pt.DataUtilisation, pt.LatencyP50US, pt.LatencyP999US, pt.LatencyMaxUS, pt.QueueP999, pt0.Generated, pt0.Delivered, pt0.WaitDrops, pt0.FabricDrops, pt0.Arrived, pt0.ReasmDrops, pt0.ReorderDrops, wall)})
	run.record(u, pt)
	return nil
}
