package stardust

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"testbed/dut/fabric"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// IncastName is the recipe's name on the command line.
const IncastName = "stardust-incast"

// Incast is the stardust-incast recipe (§5.4, Fig. 10c).
type Incast struct{}

// NewIncast returns the recipe.
func NewIncast() *Incast { return &Incast{} }

// Meta implements orchestrator.Recipe.
func (*Incast) Meta() o.Meta {
	return o.Meta{
		Name:        IncastName,
		Version:     "1.3.0",
		Summary:     "Stardust incast: first and last FCT, cells lost and drain fairness against a packet-switched fabric (Fig. 10c, §5.4); on the model, or Stardust's replies on a Stardust bench",
		Description: incastDescription,
		Params:      incastParams(),
		// Fig. 10c: last FCT over the ideal and fairness, Stardust against a packet fabric.
		Headlines: []string{"stardust.*.last_over_ideal", "packet.*.last_over_ideal", "min_jain_stardust"},
	}
}

const incastDescription = `N senders, one per FA, each answer a requester on FA 0 with response_kb at once
(§6.3's incast: 450 KB, 9000 B packets) and the recipe measures each reply's flow
completion time, from the request to its last byte leaving the requester's port, on two
fabrics of the same shape. Stardust (the cell-level model, simlab/stardustmodel): the
replies wait in their VOQs and the requester's egress scheduler hands out credits round
robin at its port rate x (1 + speed_up), so the fabric carries only what the port drains
(§5.4). The packet-switched fabric (the model's PacketFabric): the FAs are ToRs and the
FEs spines, each reply hashed to one uplink and one spine downlink (ECMP per flow),
pushed by a window that grows as TCP Reno's and halves on a loss, every switch output a
drop-tail buffer of switch_buffer_kb, a lost packet sent again rto after it was sent.
Reported per N and fabric: first and last FCT, the ideal (all replies at the port rate),
Jain's fairness index over the senders' FCTs (1: they drain evenly), packets dropped or
cells lost in the fabric, and the longest Stardust FE queue.

The fabric is the Stardust bench's shape: fas FAs (8) of links_per_fa links (4) to fes
FEs (4), one host port each; an N above fas-1 grows the fabric to N+1 FAs (the model
alone: the bench has 8). The model runs on the lab's fabric device (kind fabric: the
simulated lab's fabric1) and stands for the fabric (model_only in the summary). Writes data/incast_points.csv, incast_fct.csv and incast_flows.csv.

With Stardust switches in the inventory (--bench stardust, or switches with
stardust_role) Stardust's replies run on them, N at most the bench's FAs less one: the
fabric comes up through the switch driver as for stardust-fabric; the first FA's host
port is the requester, and the next N FAs' packet generators each send a reply of
response_kb of payload in cell_bytes frames (a frame is a cell on Tofino) at their host
port's line rate, all at once; the requester's credits go round robin to their VOQs. A
reply's FCT is from the start to the first read of the requester's in-order counters
(reg_seq_in) that shows all its frames released, read every bench_poll of the switches'
clock. The ideal is then all the replies' frames back to back at the requester's port
rate. The packet fabric then runs on the same switches (bench_packet_fabric bench, the
default): after every N's Stardust run they are restarted with p4/ecmp, a plain
packet-switched fabric (ToRs and spines, ECMP, no credits), and for every N the same
senders' generators send the reply in packet_bytes frames at line rate, open loop (the
bench has no hosts to run TCP): what the requester's ToR cannot send on or hold is
dropped (§5.4), and a reply that lost a frame stays unfinished. A reply's FCT is its
last frame out of the requester's host port, from the ToR's flow registers
(packet_fabric_from: bench). With bench_packet_fabric model the packet fabric's rows are
the model's, TCP Reno-like senders at the bench's shape (one host port per FA, one link
to each FE; packet_fabric_from: model).`

func incastParams() []o.ParamSpec {
	return append([]o.ParamSpec{
		// The bench: 8 FAs, the requester on one, up to 7 senders.
		{Name: "senders", Type: o.TypeFloats, Unit: "senders", Default: []float64{1, 2, 4, 7}, Min: o.Bound(1), Max: o.Bound(255), Description: "N, one run each; above fas-1 the fabric grows to N+1 FAs (model only)"},
		{Name: "fas", Type: o.TypeInt, Default: int64(8), Min: o.Bound(2), Max: o.Bound(256), Description: "FAs (the bench's 8); the requester is on FA 0"},
		{Name: "fes", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(64), Description: "FEs (the bench's 4); every FA has a link to each"},
		{Name: "links_per_fa", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(64), Description: "fabric links of an FA, a multiple of fes (the bench: 4)"},
		// §6.3, App. D: every link 10 Gb/s; 450 KB replies of 9000 B packets.
		{Name: "port_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 10.0, Min: o.Bound(1), Max: o.Bound(1000), Description: "host port rate (App. D: 10 Gb/s)"},
		{Name: "link_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 10.0, Min: o.Bound(1), Max: o.Bound(1000), Description: "fabric link rate (App. D: 10 Gb/s)"},
		{Name: "response_kb", Type: o.TypeFloat, Unit: "KB", Default: 450.0, Min: o.Bound(1), Max: o.Bound(1e6), Description: "each sender's reply, 1000 B a KB (§6.3: 450K)"},
		{Name: "packet_bytes", Type: o.TypeInt, Unit: "B", Default: int64(9000), Min: o.Bound(64), Max: o.Bound(9216), Description: "packet size, both fabrics (App. D: 9000 B)"},
		{Name: "cell_bytes", Type: o.TypeInt, Unit: "B", Default: int64(256), Min: o.Bound(32), Max: o.Bound(4096), Description: "Stardust cell payload bound (§3.2: 256 B)"},
		{Name: "credit_bytes", Type: o.TypeInt, Unit: "B", Default: int64(4096), Min: o.Bound(256), Max: o.Bound(1 << 20), Description: "data one credit releases (§6.3: 4 KB)"},
		{Name: "speed_up", Type: o.TypeFloat, Unit: "1", Default: 0.03, Min: o.Bound(0), Max: o.Bound(1), Description: "credit rate above the port rate (§6.3: 3%)"},
		{Name: "link_m", Type: o.TypeFloat, Unit: "m", Default: 100.0, Min: o.Bound(0), Max: o.Bound(100000), Description: "fibre length of every fabric link, at 5 ns/m (§6.2: 100 m)"},
		fciReactionParam(),
		// Ours: a shallow buffer per output of a 10G port's share of a
		// shared-buffer switch, Linux's first window, a datacenter-tuned
		// minimum RTO (Linux's default is 200 ms).
		{Name: "switch_buffer_kb", Type: o.TypeFloat, Unit: "KB", Default: 128.0, Min: o.Bound(10), Max: o.Bound(1e6), Description: "packet fabric: drop-tail buffer of every switch output, 1024 B a KB"},
		{Name: "init_window", Type: o.TypeInt, Unit: "packets", Default: int64(10), Min: o.Bound(1), Max: o.Bound(1000), Description: "packet fabric: a sender's first window"},
		{Name: "rto", Type: o.TypeDuration, Default: time.Millisecond, Min: o.Bound(1e-6), Max: o.Bound(1), Description: "packet fabric: retransmission timeout"},
		{Name: "max_time", Type: o.TypeDuration, Default: time.Second, Min: o.Bound(1e-3), Max: o.Bound(100), Description: "simulated time after which a run stops with the replies still open counted"},
		// The bench's fabric: as stardust-fabric's defaults.
		{Name: "fci_threshold", Type: o.TypeInt, Unit: "frames", Default: int64(32), Min: o.Bound(0), Max: o.Bound(1 << 16), Description: "bench only: FE queue depth that marks FCI; 0 turns FCI off"},
		{Name: "reach_period", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "bench only: reachability cell and aging period (Table 4: 10 us)"},
		{Name: "bench_poll", Type: o.TypeDuration, Default: time.Microsecond, Min: o.Bound(1e-8), Max: o.Bound(1e-3), Description: "bench only: how often, on the switches' clock, the requester's in-order counters are read (an FCT's resolution)"},
	}, append(packetBenchParams(), incastBenchParams()...)...)
}

// incastBenchParams are the bench parameters incast uses: no warm-up or
// measured window (a reply runs until it is released).
func incastBenchParams() []o.ParamSpec {
	var out []o.ParamSpec
	for _, ps := range benchParams(time.Microsecond, 0, 200*time.Microsecond) {
		if ps.Name != "bench_measure" && ps.Name != "bench_warmup" {
			out = append(out, ps)
		}
	}
	return out
}

// IncastTables are the recipe's tables and figures.
func IncastTables() []results.Table {
	return []results.Table{
		{Name: "incast_points", Title: "Incast per number of senders and fabric", Description: "One row per N and fabric.",
			Fields: []results.Field{
				{Name: "fabric", Type: "string", Description: "stardust or packet (ECMP, no credits, shallow buffers)"},
				{Name: "senders", Type: "integer"},
				{Name: "fas", Type: "integer", Description: "FAs in the fabric"},
				{Name: "first_fct_ms", Type: "number", Unit: "ms"}, {Name: "last_fct_ms", Type: "number", Unit: "ms"},
				{Name: "ideal_fct_ms", Type: "number", Unit: "ms", Description: "all replies at the requester's port rate"},
				{Name: "jain", Type: "number", Unit: "1", Description: "Jain's index over the senders' FCTs"},
				{Name: "lost", Type: "integer", Description: "packets dropped (packet) or cells lost (stardust) in the fabric"},
				{Name: "retransmits", Type: "integer", Description: "packets sent again (packet fabric)"},
				{Name: "fe_queue_max_cells", Type: "integer", Unit: "cells", Description: "stardust: the longest last-stage FE output queue seen (the fabric holds little; the excess waits in the senders' VOQs)"},
				{Name: "unfinished", Type: "integer", Description: "replies still open at max_time"},
			}},
		{Name: "incast_fct", Title: "First and last FCT (Fig. 10c)", Description: "One row per fabric, N and which (first, last).",
			Fields: []results.Field{
				{Name: "fabric", Type: "string"}, {Name: "which", Type: "string", Description: "first or last"},
				{Name: "senders", Type: "integer"}, {Name: "fct_ms", Type: "number", Unit: "ms"},
			},
			Figures: []results.Figure{{Name: "fig10c-incast", Title: "Incast: first and last flow completion time",
				Caption: "As Stardust Fig. 10(c): the first and last of N 450 KB replies to finish, Stardust's credits against a packet-switched fabric with ECMP and shallow buffers, from the model (on a bench: Stardust's from the switches, the packet fabric's from the same switches running p4/ecmp, or from the model at the bench's shape).",
				Kind:    results.Line, X: "senders", Y: "fct_ms", Series: []string{"fabric", "which"}, Legend: "{fabric}, {which}",
				XLabel: "Senders", YLabel: "FCT (ms)"}}},
		{Name: "incast_flows", Title: "Every reply's FCT", Description: "One row per fabric, N and sender, ranked by FCT.",
			Fields: []results.Field{
				{Name: "fabric", Type: "string"}, {Name: "senders", Type: "integer"},
				{Name: "rank", Type: "integer", Description: "1 is the first to finish"},
				{Name: "sender_fa", Type: "integer"}, {Name: "fct_ms", Type: "number", Unit: "ms", Description: "empty if unfinished"},
				{Name: "lost", Type: "integer", Description: "its packets dropped (packet fabric)"},
			},
			Figures: []results.Figure{{Name: "incast-drain", Title: "How evenly the senders drain",
				Caption: "Every reply's FCT in order, per fabric and N: Stardust's credits drain the senders together (§5.4), the packet fabric's losses and timeouts spread them.",
				Kind:    results.Line, X: "rank", Y: "fct_ms", Series: []string{"fabric", "senders"}, Legend: "{fabric}, N={senders}",
				XLabel: "Sender (by FCT)", YLabel: "FCT (ms)"}}},
	}
}

// IncastPoint is one N on one fabric.
type IncastPoint struct {
	FAs         int     `json:"fas"`
	FirstFCTMS  float64 `json:"first_fct_ms"`
	LastFCTMS   float64 `json:"last_fct_ms"`
	IdealFCTMS  float64 `json:"ideal_fct_ms"`
	LastOverIdl float64 `json:"last_over_ideal"`
	Jain        float64 `json:"jain"`
	Lost        int64   `json:"lost"`
	Retransmits int64   `json:"retransmits"`
	FEQueueMax  int     `json:"fe_queue_max_cells"`
	Unfinished  int     `json:"unfinished"`
}

// IncastSummary is summary.json.
type IncastSummary struct {
	Partial   bool `json:"partial"`
	ModelOnly bool `json:"model_only"`
	// MeasuredOn is "bench" when Stardust's replies ran on the switches of
	// a Stardust bench (empty for the model); PacketFrom then says where
	// the packet fabric's rows come from.
	MeasuredOn string `json:"measured_on,omitempty"`
	PacketFrom string `json:"packet_fabric_from,omitempty"`
	Fabric     string `json:"fabric"`
	// Stardust and Packet are keyed n<senders>: n7.
	Stardust map[string]IncastPoint `json:"stardust"`
	Packet   map[string]IncastPoint `json:"packet"`
	// CellsLost is every cell Stardust lost, all N; MinJainStardust and
	// MinJainPacket the least even drain of each over N.
	CellsLost       int64   `json:"cells_lost"`
	MinJainStardust float64 `json:"min_jain_stardust"`
	MinJainPacket   float64 `json:"min_jain_packet"`
	PacketDrops     int64   `json:"packet_drops"`
	Unfinished      int     `json:"unfinished"`
}

// add records N's points on both fabrics.
func (s *IncastSummary) add(n int, sd, pk IncastPoint) {
	key := "n" + strconv.Itoa(n)
	s.Stardust[key], s.Packet[key] = sd, pk
	s.CellsLost += sd.Lost
	s.PacketDrops += pk.Lost
	s.Unfinished += sd.Unfinished + pk.Unfinished
	if n > 1 {
		s.MinJainStardust = min(s.MinJainStardust, sd.Jain)
		s.MinJainPacket = min(s.MinJainPacket, pk.Jain)
	}
}

// Jain is Jain's fairness index of xs: (sum x)^2 / (n sum x^2), 1 when
// all are equal, 1/n when one holds everything.
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

// incastConfig is the fabric for n senders.
func incastConfig(p *o.Params, n int) (sd.Fabric, error) {
	c := sd.DefaultFabric()
	c.FAs, c.FEs, c.LinksPerFA = max(int(p.Int("fas")), n+1), int(p.Int("fes")), int(p.Int("links_per_fa"))
	c.Groups, c.Stages, c.PortsPerFA = 1, 1, 1
	c.PortBps, c.LinkBps = p.Float("port_gbps")*1e9, p.Float("link_gbps")*1e9
	c.CellBytes, c.CreditBytes = int(p.Int("cell_bytes")), int(p.Int("credit_bytes"))
	c.SpeedUp = p.Float("speed_up")
	c.PropDelay = time.Duration(p.Float("link_m") * 5)
	c.PacketBytes = int(p.Int("packet_bytes"))
	c.Load = 0 // the replies alone
	c.FCIReaction = p.String("fci_reaction")
	return c, c.Validate()
}

func describeIncast(c sd.Fabric, po sd.PacketFabricOpts) string {
	return fmt.Sprintf("%d FAs x %d links of %g Gb/s to %d FEs, one %g Gb/s host port each; Stardust: %d B cells, %d B credits, speed-up %g; packet fabric: ECMP per flow, %d B drop-tail buffers, first window %d, RTO %v; %v links",
		c.FAs, c.LinksPerFA, c.LinkBps/1e9, c.FEs, c.PortBps/1e9, c.CellBytes, c.CreditBytes, c.SpeedUp, po.BufferBytes, po.InitWindow, po.RTO, c.PropDelay)
}

func incastSenders(p *o.Params) ([]int, error) {
	var ns []int
	for _, f := range p.Floats("senders") {
		if f != math.Trunc(f) {
			return nil, o.Inputf("senders: %g is not a whole number", f)
		}
		if !slices.Contains(ns, int(f)) {
			ns = append(ns, int(f))
		}
	}
	if len(ns) == 0 {
		return nil, o.Inputf("senders: expected at least one N, e.g. 1,2,4,7")
	}
	slices.Sort(ns)
	return ns, nil
}

// Plan implements Recipe. On the model it runs on the lab's fabric device;
// with Stardust switches in the inventory, on them (planBench).
func (r *Incast) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	ns, err := incastSenders(p)
	if err != nil {
		return nil, err
	}
	c0, err := incastConfig(p, ns[0])
	if err != nil {
		return nil, o.Inputf("%s: the fabric's parameters: %v", IncastName, err)
	}
	if c0.LinksPerFA%c0.FEs != 0 {
		return nil, o.Inputf("links_per_fa %d: expected a multiple of fes %d", c0.LinksPerFA, c0.FEs)
	}
	if b, err := findBench(pc.Lab); err != nil {
		return nil, err
	} else if b != nil {
		return r.planBench(pc, b, ns)
	}
	po := sd.PacketFabricOpts{BufferBytes: int(p.Float("switch_buffer_kb") * 1024), InitWindow: int(p.Int("init_window")), RTO: p.Duration("rto")}
	var mu sync.Mutex
	sum := IncastSummary{ModelOnly: true, Fabric: describeIncast(c0, po), Stardust: map[string]IncastPoint{}, Packet: map[string]IncastPoint{},
		MinJainStardust: 1, MinJainPacket: 1}
	done := 0
	dev, err := bindFabric(pc.Lab)
	if err != nil {
		return nil, err
	}
	plan := &o.Plan{Tables: IncastTables(),
		Bindings: []o.Binding{modelBinding(dev, "the cell-level fabric and the packet-switched one alone (model_only): "+describeIncast(c0, po))},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || done < len(ns)
			return s, nil
		}}
	for _, n := range ns {
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("%d senders", n), Action: "simulate", Devices: []string{dev},
			Note: fmt.Sprintf("%d x %g KB to FA 0 on Stardust and on the packet fabric", n, p.Float("response_kb")),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				fd, err := fabricOf(rc, dev)
				if err != nil {
					return err
				}
				sd, pk, err := incastPoint(ctx, rc, fd, p, po, n)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				sum.add(n, sd, pk)
				done++
				return nil
			}})
	}
	return plan, nil
}

// incastPoint runs n replies on both fabrics and writes their rows.
func incastPoint(ctx context.Context, rc *o.RunContext, fd fabric.Fabric, p *o.Params, po sd.PacketFabricOpts, n int) (sd, pk IncastPoint, err error) {
	c, err := incastConfig(p, n)
	if err != nil {
		return sd, pk, err
	}
	bytes := int64(math.Round(p.Float("response_kb") * 1000))
	slot := c.SlotSeconds()
	limit := int64(p.Duration("max_time").Seconds() / slot)
	ideal := float64(bytes*int64(n)) * 8 / c.PortBps * 1e3
	seed := rc.Seed ^ uint64(n)*0x9e3779b97f4a7c15

	if err := fd.OpenCells(ctx, c, fabric.Seed{seed, 0x5d}); err != nil {
		return sd, pk, err
	}
	for i := 0; i < n; i++ {
		if _, err := fd.AddFlow(ctx, fabric.Flow{Src: 1 + i, Port: 0, Bytes: bytes, PacketBytes: c.PacketBytes}); err != nil {
			return sd, pk, err
		}
	}
	flows, err := runToTheEnd(ctx, fd, limit, 1)
	if err != nil {
		return sd, pk, err
	}
	if sd, err = writeIncastFlows(rc, "stardust", n, c.FAs, ideal, incastFCTs(flows, slot), func(int) int64 { return 0 }); err != nil {
		return sd, pk, err
	}
	st, err := fd.Stats(ctx)
	if err != nil {
		return sd, pk, err
	}
	sd.Lost = st.CellsLost + st.CellsLostFailed + st.CellsNoRoute
	for k, v := range st.QueueHist {
		if v > 0 {
			sd.FEQueueMax = k
		}
	}
	if pk, err = packetIncast(ctx, rc, fd, c, po, n, bytes, limit, seed); err != nil {
		return sd, pk, err
	}
	if err := writeIncastPoint(rc, "stardust", n, c.FAs, sd); err != nil {
		return sd, pk, err
	}
	if err := writeIncastPoint(rc, "packet", n, c.FAs, pk); err != nil {
		return sd, pk, err
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%d senders: Stardust first %.3f last %.3f ms (ideal %.3f), Jain %.4f, %d cells lost; packet fabric first %.3f last %.3f ms, Jain %.4f, %d drops",
		n, sd.FirstFCTMS, sd.LastFCTMS, ideal, sd.Jain, sd.Lost, pk.FirstFCTMS, pk.LastFCTMS, pk.Jain, pk.Lost)})
	return sd, pk, nil
}

// packetIncast runs n replies of bytes each to FA 0 on the packet fabric
// c of device fd, for at most limit cell times, and writes their flows'
// rows.
func packetIncast(ctx context.Context, rc *o.RunContext, fd fabric.Fabric, c sd.Fabric, po sd.PacketFabricOpts, n int, bytes, limit int64, seed uint64) (IncastPoint, error) {
	if err := fd.OpenPackets(ctx, c, po, fabric.Seed{seed, 0xec}); err != nil {
		return IncastPoint{}, err
	}
	for i := 0; i < n; i++ {
		if _, err := fd.AddFlow(ctx, fabric.Flow{Src: 1 + i, Port: 0, Bytes: bytes, PacketBytes: c.PacketBytes}); err != nil {
			return IncastPoint{}, err
		}
	}
	flows, err := runToTheEnd(ctx, fd, limit, 100)
	if err != nil {
		return IncastPoint{}, err
	}
	ps, err := fd.PacketStats(ctx)
	if err != nil {
		return IncastPoint{}, err
	}
	ideal := float64(bytes*int64(n)) * 8 / c.PortBps * 1e3
	pk, err := writeIncastFlows(rc, "packet", n, c.FAs, ideal, incastFCTs(flows, c.SlotSeconds()), func(i int) int64 { return flows[i].Drops })
	pk.Lost, pk.Retransmits = ps.Drops, ps.Retransmits
	return pk, err
}

// runToTheEnd steps fd step slots at a time until every flow is done or
// the fabric reaches slot limit, in runs short enough that an interrupted
// run stops soon, and returns the flows' states.
func runToTheEnd(ctx context.Context, fd fabric.Fabric, limit, step int64) ([]fabric.FlowState, error) {
	for now := int64(0); ; {
		// A run ends on a multiple of step, as one run to limit would.
		until := min(limit, now+step*max(1, 5000/step))
		n, done, err := fd.RunUntilDone(ctx, until, step)
		if err != nil {
			return nil, err
		}
		if done || n >= limit {
			break
		}
		now = n
	}
	return fd.Flows(ctx)
}

// incastFCT is one reply's FCT, ms, if it finished.
type incastFCT struct {
	fct float64
	ok  bool
}

// incastFCTs reads the replies' completion times from their flows'
// states (in cell times of slot seconds).
func incastFCTs(flows []fabric.FlowState, slot float64) []incastFCT {
	out := make([]incastFCT, len(flows))
	for i, f := range flows {
		out[i] = incastFCT{f.DoneSlot * slot * 1e3, f.Done}
	}
	return out
}

// writeIncastFlows writes the rows of incast_flows for one fabric and N
// (the reply of sender FA 1+i is fcts[i]) and returns the point without
// its losses and queue, which the caller knows.
func writeIncastFlows(rc *o.RunContext, fabric string, n, fas int, ideal float64, fcts []incastFCT, lost func(int) int64) (IncastPoint, error) {
	pt := IncastPoint{FAs: fas, IdealFCTMS: ideal}
	ft, err := rc.Table("incast_flows")
	if err != nil {
		return pt, err
	}
	type fl struct {
		fa int
		incastFCT
	}
	var fs []fl
	var done []float64
	for i, f := range fcts {
		fs = append(fs, fl{1 + i, f})
		if f.ok {
			done = append(done, f.fct)
		} else {
			pt.Unfinished++
		}
	}
	slices.SortStableFunc(fs, func(a, b fl) int {
		switch {
		case a.ok != b.ok:
			if a.ok {
				return -1
			}
			return 1
		case a.fct < b.fct:
			return -1
		case a.fct > b.fct:
			return 1
		}
		return 0
	})
	for k, f := range fs {
		var v any
		if f.ok {
			v = f.fct
		}
		if err := ft.Write(fabric, n, k+1, f.fa, v, lost(f.fa-1)); err != nil {
			return pt, err
		}
	}
	if len(done) > 0 {
		pt.FirstFCTMS, pt.LastFCTMS = slices.Min(done), slices.Max(done)
		pt.LastOverIdl = pt.LastFCTMS / ideal
		pt.Jain = Jain(done)
	}
	return pt, nil
}

// writeIncastPoint writes a fabric's rows of incast_points and incast_fct
// for one N.
func writeIncastPoint(rc *o.RunContext, fabric string, n, fas int, x IncastPoint) error {
	pt, err := rc.Table("incast_points")
	if err != nil {
		return err
	}
	ct, err := rc.Table("incast_fct")
	if err != nil {
		return err
	}
	var feq any
	if fabric == "stardust" {
		feq = x.FEQueueMax
	}
	if err := pt.Write(fabric, n, fas, x.FirstFCTMS, x.LastFCTMS, x.IdealFCTMS, x.Jain, x.Lost, x.Retransmits, feq, x.Unfinished); err != nil {
		return err
	}
	if x.Unfinished < n {
		if err := ct.Write(fabric, "first", n, x.FirstFCTMS); err != nil {
			return err
		}
		if err := ct.Write(fabric, "last", n, x.LastFCTMS); err != nil {
			return err
		}
	}
	return nil
}
