package stardust

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"testbed/dut/fabric"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// WebFCTName is the recipe's name on the command line.
const WebFCTName = "stardust-fct"

// WebFCT is the stardust-fct recipe (§6.3, Fig. 10b).
type WebFCT struct{}

// NewWebFCT returns the recipe.
func NewWebFCT() *WebFCT { return &WebFCT{} }

// Meta implements orchestrator.Recipe.
func (*WebFCT) Meta() o.Meta {
	return o.Meta{
		Name:        WebFCTName,
		Version:     "1.0.0",
		Summary:     "Stardust FCT against flow size between a pair of hosts while every other host keeps four long flows going, against ECMP on a packet-switched fabric (Fig. 10b, §6.3); a model mode on the lab's fabric device",
		Description: webFCTDescription,
		Params:      webFCTParams(),
		// Fig. 10b: FCT of the workload's flows beside long-running
		// background flows, Stardust against ECMP.
		Headlines: []string{"fabrics.*.max_fct_upto_1mb_ms", "fabrics.*.mean_slowdown", "fabrics.*.p99_slowdown"},
	}
}

const webFCTDescription = `§6.3's FCT experiment: flows between one pair of hosts, their sizes drawn from a
published workload, while every other host sources four long-running flows, each to a
random host port (of another FA, never the measured pair's; a destination drawn twice for
one FA is drawn again, since the fabric has one VOQ per FA and destination), which loads
the destinations unevenly: some are oversubscribed. The measured flows run one after
another, from the first host port of the first FA to the first host port of the last FA,
each starting when the one before has left the destination's egress port; a flow's FCT is
from its offer to its last byte leaving that port. The paper uses Facebook's Web workload
(its [74], Roy et al., SIGCOMM 2015, as implemented by its [41]), which is not published
as a table; the sizes here come from the web-search workload's flow-size CDF (Alizadeh et
al., DCTCP, SIGCOMM 2010, Fig. 4, as tabulated by HPCC's traffic_gen,
WebSearch_distribution.txt: 10 KB at 15%, 80 KB at 53%, 1 MB at 70%, 10 MB at 97%, 30 MB
at 100%), linearly interpolated, and flows above max_flow_mb are drawn again (the CDF's
tail is long and a 30 MB flow alone takes 24 ms at 10 Gb/s).

Both fabrics are the permutation recipe's, in simlab/stardustmodel on the lab's fabric
device (model_only): fas FAs of ports_per_fa host ports and as many links of gbps to fes
FEs (no fabric speed-up, §6.3's fat tree of 10 Gb/s), Stardust with sd_packet_bytes
packets in cell_bytes cells and credit_bytes credits at speed_up, and the packet fabric
with ECMP per flow, packet_bytes packets, windows as TCP Reno's, drop-tail
switch_buffer_kb buffers and a retransmission timeout rto. §6.3 has 432 nodes; the
default here is 64, which the model runs in seconds. data/fct_flows.csv has every flow
(its size, FCT, the ideal at the port rate and their ratio, the slowdown), the figure FCT
against size; the summary per fabric: the largest FCT of the flows up to 1 MB (the paper:
"even flows of 1MB have a FCT of less than a millisecond"), the mean and 99th percentile
slowdown, and what was lost.`

func webFCTParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "flows", Type: o.TypeInt, Default: int64(40), Min: o.Bound(1), Max: o.Bound(100000), Description: "measured flows, one after another"},
		{Name: "max_flow_mb", Type: o.TypeFloat, Unit: "MB", Default: 3.0, Min: o.Bound(0.01), Max: o.Bound(30), Description: "largest flow size drawn (MB of 10^6 B); larger draws are drawn again"},
		{Name: "background", Type: o.TypeInt, Unit: "flows", Default: int64(4), Min: o.Bound(0), Max: o.Bound(64), Description: "long-running flows every other host sources (§6.3: four)"},
		{Name: "fas", Type: o.TypeInt, Default: int64(16), Min: o.Bound(2), Max: o.Bound(256), Description: "FAs (ToRs)"},
		{Name: "ports_per_fa", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(64), Description: "host ports per FA; the FA has as many fabric links"},
		{Name: "fes", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(64), Description: "FEs (spines); must divide ports_per_fa"},
		{Name: "gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 10.0, Min: o.Bound(1), Max: o.Bound(1000), Description: "rate of every host port and fabric link (§6.3: 10 Gb/s)"},
		{Name: "sd_packet_bytes", Type: o.TypeInt, Unit: "B", Default: int64(512), Min: o.Bound(64), Max: o.Bound(9216), Description: "Stardust's packets (§6.3: 512 B)"},
		{Name: "cell_bytes", Type: o.TypeInt, Unit: "B", Default: int64(512), Min: o.Bound(32), Max: o.Bound(4096), Description: "cell payload bound (App. D: 512 B)"},
		{Name: "credit_bytes", Type: o.TypeInt, Unit: "B", Default: int64(4096), Min: o.Bound(256), Max: o.Bound(1 << 20), Description: "data one credit releases (§6.3: 4 KB)"},
		{Name: "speed_up", Type: o.TypeFloat, Unit: "1", Default: 0.03, Min: o.Bound(0), Max: o.Bound(1), Description: "credit rate above the port rate (§6.3: 3%)"},
		fciReactionParam(),
		{Name: "packet_bytes", Type: o.TypeInt, Unit: "B", Default: int64(9000), Min: o.Bound(64), Max: o.Bound(9216), Description: "packet fabric's packets (§6.3: 9000 B)"},
		{Name: "link_m", Type: o.TypeFloat, Unit: "m", Default: 100.0, Min: o.Bound(0), Max: o.Bound(100000), Description: "fibre length of every fabric link, at 5 ns/m"},
		{Name: "switch_buffer_kb", Type: o.TypeFloat, Unit: "KB", Default: 128.0, Min: o.Bound(10), Max: o.Bound(1e6), Description: "packet fabric: drop-tail buffer of every switch output, 1024 B a KB"},
		{Name: "init_window", Type: o.TypeInt, Unit: "packets", Default: int64(10), Min: o.Bound(1), Max: o.Bound(1000), Description: "packet fabric: a sender's first window"},
		{Name: "rto", Type: o.TypeDuration, Default: time.Millisecond, Min: o.Bound(1e-6), Max: o.Bound(1), Description: "packet fabric: retransmission timeout"},
		{Name: "warmup", Type: o.TypeDuration, Default: time.Millisecond, Min: o.Bound(0), Max: o.Bound(1), Description: "simulated time the background runs before the first measured flow"},
		{Name: "max_time", Type: o.TypeDuration, Default: time.Second, Min: o.Bound(1e-3), Max: o.Bound(100), Description: "simulated time a measured flow may take before the run gives up on it"},
	}
}

// WebFCTTables are the recipe's tables.
func WebFCTTables() []results.Table {
	return []results.Table{{Name: "fct_flows", Title: "FCT of every measured flow (Fig. 10b)", Description: "One row per fabric and flow, in the order they ran.",
		Fields: []results.Field{
			{Name: "fabric", Type: "string", Description: "stardust or packet (ECMP)"},
			{Name: "flow", Type: "integer", Description: "the flow's place in the sequence, from 1"},
			{Name: "bytes", Type: "integer", Unit: "B", Description: "the flow's size, drawn from the workload"},
			{Name: "fct_ms", Type: "number", Unit: "ms", Description: "offer to the last byte leaving the destination's port (empty: not done by max_time)"},
			{Name: "ideal_ms", Type: "number", Unit: "ms", Description: "its size at the port rate"},
			{Name: "slowdown", Type: "number", Unit: "1", Description: "fct_ms / ideal_ms"},
		},
		Figures: []results.Figure{{Name: "fig10b-fct", Title: "FCT against flow size, four long flows from every other host",
			Caption: "Flows of the web-search workload between one pair of hosts; every other host keeps four long flows to random destinations.",
			Kind:    results.Scatter, X: "bytes", Y: "fct_ms", Series: []string{"fabric"}, Legend: "{fabric}", LogX: true, LogY: true,
			XLabel: "Flow size (B)", YLabel: "FCT (ms)"}}}}
}

// WebFCTSummary is summary.json.
type WebFCTSummary struct {
	Partial   bool                   `json:"partial"`
	ModelOnly bool                   `json:"model_only"`
	Fabric    string                 `json:"fabric"`
	Workload  string                 `json:"workload"`
	Fabrics   map[string]WebFCTPoint `json:"fabrics"`
}

// WebFCTPoint is one fabric's figures.
type WebFCTPoint struct {
	Flows    int `json:"flows"`
	Finished int `json:"finished"`
	// MaxFCTUpTo1MB is the largest FCT of the flows of at most 10^6 B.
	MaxFCTUpTo1MB float64 `json:"max_fct_upto_1mb_ms"`
	MeanFCT       float64 `json:"mean_fct_ms"`
	MeanSlowdown  float64 `json:"mean_slowdown"`
	P99Slowdown   float64 `json:"p99_slowdown"`
	// Lost is cells lost (Stardust) or packets dropped (packet fabric).
	Lost int64 `json:"lost"`
}

// webSearchCDF is the web-search workload's flow-size CDF (Alizadeh et al.,
// "Data Center TCP", SIGCOMM 2010, Fig. 4), as tabulated by HPCC's
// traffic_gen (alibaba-edu/High-Precision-Congestion-Control,
// traffic_gen/WebSearch_distribution.txt): size in bytes, cumulative
// percent.
var webSearchCDF = [][2]float64{
	{0, 0}, {10e3, 15}, {20e3, 20}, {30e3, 30}, {50e3, 40}, {80e3, 53},
	{200e3, 60}, {1e6, 70}, {2e6, 80}, {5e6, 90}, {10e6, 97}, {30e6, 100},
}

// webSearchSize draws a flow size from the CDF, linearly interpolated
// between its points, at least one byte.
func webSearchSize(r *rand.Rand) int64 {
	u := r.Float64() * 100
	for i := 1; i < len(webSearchCDF); i++ {
		a, b := webSearchCDF[i-1], webSearchCDF[i]
		if u < b[1] {
			return max(1, int64(math.Round(a[0]+(u-a[1])/(b[1]-a[1])*(b[0]-a[0]))))
		}
	}
	return int64(webSearchCDF[len(webSearchCDF)-1][0])
}

// webSizes draws n sizes of at most maxBytes.
func webSizes(seed uint64, n int, maxBytes int64) []int64 {
	r := rand.New(rand.NewPCG(seed, 0x3eb))
	out := make([]int64, 0, n)
	for len(out) < n {
		if s := webSearchSize(r); s <= maxBytes {
			out = append(out, s)
		}
	}
	return out
}

// webBackground draws the long flows: k from every host port other than
// the measured pair's, each to a port of another FA that is neither of
// the pair's, no FA sending twice to one port.
func webBackground(seed uint64, fas, per, k, src, dst int) [][2]int {
	r := rand.New(rand.NewPCG(seed, 0xb6))
	n := fas * per
	used := map[[2]int]bool{}
	var out [][2]int
	for h := range n {
		if h == src || h == dst {
			continue
		}
		fa := h / per
		for range k {
			for range 1000 {
				d := r.IntN(n)
				if d/per == fa || d == src || d == dst || used[[2]int{fa, d}] {
					continue
				}
				used[[2]int{fa, d}] = true
				out = append(out, [2]int{fa, d})
				break
			}
		}
	}
	return out
}

// webRun is one fabric's run.
type webRun struct {
	fd         fabric.Fabric
	c          sd.Fabric
	cells      bool
	pktBytes   int
	background [][2]int
	sizes      []int64
	src, dst   int
	warm, max  int64
}

// webFlowFCT is one measured flow.
type webFlowFCT struct {
	bytes int64
	fct   float64 // ms; NaN not done
}

// run offers the background, warms up, then offers the measured flows one
// after another, each when the last has finished, and returns their FCTs.
func (w *webRun) run(ctx context.Context) ([]webFlowFCT, error) {
	slot := w.c.SlotSeconds()
	// Long flows: the fabric offers a flow's packets at once, so they are
	// sized, not endless: half the port rate over the warm-up and twice the
	// measured flows' ideal time, and 5 ms more (a source FA's uplinks are
	// shared by its hosts' long flows, so none gets near the port rate).
	var total int64
	for _, b := range w.sizes {
		total += b
	}
	span := float64(w.warm)*slot + 2*float64(total)*8/w.c.PortBps + 5e-3
	long := int64(w.c.PortBps / 8 / 2 * span)
	for _, b := range w.background {
		fl := fabric.Flow{Src: b[0], Port: b[1], Bytes: long, PacketBytes: w.pktBytes}
		if _, err := w.fd.AddFlow(ctx, fl); err != nil {
			return nil, err
		}
	}
	if err := runSlots(ctx, w.fd, w.warm); err != nil {
		return nil, err
	}
	now, err := w.fd.Run(ctx, 1)
	if err != nil {
		return nil, err
	}
	out := make([]webFlowFCT, len(w.sizes))
	for i, b := range w.sizes {
		id, err := w.fd.AddFlow(ctx, fabric.Flow{Src: w.src / w.c.PortsPerFA, Port: w.dst, Bytes: b, PacketBytes: w.pktBytes})
		if err != nil {
			return nil, err
		}
		ideal := float64(b) * 8 / w.c.PortBps / slot
		step := max(100, int64(ideal/4))
		start := now
		out[i] = webFlowFCT{bytes: b, fct: math.NaN()}
		for now-start < w.max {
			if now, err = w.fd.Run(ctx, step); err != nil {
				return nil, err
			}
			fs, err := w.fd.Flows(ctx)
			if err != nil {
				return nil, err
			}
			if id >= len(fs) {
				return nil, fmt.Errorf("flow %d: the fabric lists %d flows", id, len(fs))
			}
			if fs[id].Done {
				out[i].fct = (fs[id].DoneSlot - float64(start)) * slot * 1e3
				break
			}
		}
		if math.IsNaN(out[i].fct) {
			return out, nil // the flow holds its VOQ: no later flow can start
		}
	}
	return out, nil
}

// lost reads what the fabric lost.
func (w *webRun) lost(ctx context.Context) (int64, error) {
	if !w.cells {
		ps, err := w.fd.PacketStats(ctx)
		return ps.Drops, err
	}
	s, err := w.fd.Stats(ctx)
	return s.CellsLost + s.CellsLostFailed + s.CellsNoRoute, err
}

// writeWebFCT writes a fabric's rows and returns its point.
func writeWebFCT(rc *o.RunContext, name string, fs []webFlowFCT, portBps float64, lost int64) (WebFCTPoint, error) {
	t, err := rc.Table("fct_flows")
	if err != nil {
		return WebFCTPoint{}, err
	}
	pt := WebFCTPoint{Flows: len(fs), Lost: lost}
	var slow []float64
	var sumFCT float64
	for i, f := range fs {
		ideal := float64(f.bytes) * 8 / portBps * 1e3
		if math.IsNaN(f.fct) {
			if err := t.Write(name, i+1, f.bytes, nil, ideal, nil); err != nil {
				return pt, err
			}
			continue
		}
		pt.Finished++
		sumFCT += f.fct
		slow = append(slow, f.fct/ideal)
		if f.bytes <= 1e6 {
			pt.MaxFCTUpTo1MB = max(pt.MaxFCTUpTo1MB, f.fct)
		}
		if err := t.Write(name, i+1, f.bytes, f.fct, ideal, f.fct/ideal); err != nil {
			return pt, err
		}
	}
	if pt.Finished > 0 {
		pt.MeanFCT = sumFCT / float64(pt.Finished)
		var s float64
		for _, x := range slow {
			s += x
		}
		pt.MeanSlowdown = s / float64(len(slow))
		sort.Float64s(slow)
		pt.P99Slowdown = slow[min(len(slow)-1, int(math.Ceil(0.99*float64(len(slow))))-1)]
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%s: %d of %d flows done, largest FCT up to 1 MB %.3f ms, mean FCT %.3f ms, slowdown mean %.2f, p99 %.2f, %d lost",
		name, pt.Finished, pt.Flows, pt.MaxFCTUpTo1MB, pt.MeanFCT, pt.MeanSlowdown, pt.P99Slowdown, lost)})
	return pt, nil
}

// Plan implements Recipe: a model mode on the lab's fabric device.
func (r *WebFCT) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	c, err := permutationConfig(p)
	if err != nil {
		return nil, o.Inputf("%s: the fabric's parameters: %v", WebFCTName, err)
	}
	po := permutationPacketOpts(p)
	dev, err := bindFabric(pc.Lab)
	if err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("%d FAs x %d host ports and %d links of %g Gb/s to %d FEs; Stardust: %d B packets, %d B cells, %d B credits, speed-up %g; packet fabric: ECMP per flow, %d B packets, %d B drop-tail buffers, first window %d, RTO %v; %v links",
		c.FAs, c.PortsPerFA, c.LinksPerFA, c.PortBps/1e9, c.FEs, c.PacketBytes, c.CellBytes, c.CreditBytes, c.SpeedUp, p.Int("packet_bytes"), po.BufferBytes, po.InitWindow, po.RTO, c.PropDelay)
	n := int(p.Int("flows"))
	workload := fmt.Sprintf("%d flows from port 0 to port %d, web-search sizes (DCTCP, SIGCOMM 2010) up to %g MB; %d long flows from every other host port", n, (c.FAs-1)*c.PortsPerFA, p.Float("max_flow_mb"), p.Int("background"))
	var mu sync.Mutex
	sum := WebFCTSummary{ModelOnly: true, Fabric: desc, Workload: workload, Fabrics: map[string]WebFCTPoint{}}
	plan := &o.Plan{Tables: WebFCTTables(),
		Bindings: []o.Binding{modelBinding(dev, "the cell-level fabric and the packet-switched one alone (model_only): "+desc)},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || len(s.Fabrics) < 2
			return s, nil
		}}
	slot := c.SlotSeconds()
	for _, name := range []string{"stardust", "packet"} {
		plan.Steps = append(plan.Steps, &o.Step{Name: name, Action: "simulate", Devices: []string{dev}, Note: workload,
			Run: func(ctx context.Context, rc *o.RunContext) error {
				fd, err := fabricOf(rc, dev)
				if err != nil {
					return err
				}
				w := &webRun{fd: fd, c: c, cells: name == "stardust", pktBytes: int(p.Int("packet_bytes")), src: 0, dst: (c.FAs - 1) * c.PortsPerFA,
					warm: int64(p.Duration("warmup").Seconds() / slot), max: int64(p.Duration("max_time").Seconds() / slot),
					sizes: webSizes(rc.Seed, n, int64(p.Float("max_flow_mb")*1e6))}
				w.background = webBackground(rc.Seed, c.FAs, c.PortsPerFA, int(p.Int("background")), w.src, w.dst)
				if w.cells {
					w.pktBytes = c.PacketBytes
					err = fd.OpenCells(ctx, c, fabric.Seed{rc.Seed, 0x5d})
				} else {
					err = fd.OpenPackets(ctx, c, po, fabric.Seed{rc.Seed, 0xec})
				}
				if err != nil {
					return fmt.Errorf("%s: open the %s fabric: %w", dev, name, err)
				}
				fs, err := w.run(ctx)
				if err != nil {
					return err
				}
				lost, err := w.lost(ctx)
				if err != nil {
					return err
				}
				pt, err := writeWebFCT(rc, name, fs, c.PortBps, lost)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				sum.Fabrics[name] = pt
				if pt.Finished < pt.Flows {
					return fmt.Errorf("%s: flow %d of %d did not finish within %v", name, pt.Finished+1, pt.Flows, p.Duration("max_time"))
				}
				return nil
			}})
	}
	return plan, nil
}
