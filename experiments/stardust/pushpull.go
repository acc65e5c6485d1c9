package stardust

import (
	"context"
	"fmt"
	"sync"
	"time"

	"testbed/dut/fabric"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// PushPullName is the recipe's name on the command line.
const PushPullName = "stardust-pushpull"

// PushPull is the stardust-pushpull recipe (§5.2, Fig. 7; App. F, Fig. 12).
type PushPull struct{}

// NewPushPull returns the recipe.
func NewPushPull() *PushPull { return &PushPull{} }

// Meta implements orchestrator.Recipe.
func (*PushPull) Meta() o.Meta {
	return o.Meta{
		Name:        PushPullName,
		Version:     "1.3.0",
		Summary:     "Stardust push against pull: §5.2's two ports behind a congested middle stage, without and with traffic classes (Figs. 7 and 12); on the model, or both fabrics on a Stardust bench",
		Description: pushPullDescription,
		Params:      pushPullParams(),
		// Figs. 7 and 12: B's share under push and pull, and pull over push.
		Headlines: []string{"scenarios.*.*.b_share", "pull_over_push.*"},
	}
}

const pushPullDescription = `§5.2's example: a destination device D with two host ports, A and B, of port_gbps each;
a first input device sends port_gbps towards A and port_gbps towards B, a second
port_gbps towards A. Between them a middle stage of two FEs (switches), one link of
port_gbps' data from each to every device, so D's way in carries two ports' worth.
Scenario fig7: all one class; fig12 (App. F): the flows to A high, the flow to B low.

Two fabrics, both in simlab/stardustmodel. Pull (Stardust): A's and B's egress
schedulers each hand out a port's worth of credits, by strict priority then round robin,
and the sources send only what they were granted, sprayed over both links. Push (a
packet fabric of the same shape): every flow sent at the port rate with no congestion
control (a burst shorter than it reacts in), each packet on a random link (load balancing
as good as it gets), every switch output a drop-tail buffer of switch_buffer_kb per class,
served by strict priority. Reported per scenario and fabric: what A and B receive over
measure after warmup, B's share of what was sent to it, and what the fabric lost.
The Stardust fabric's links run fast enough that a link carries fabric_speedup x
port_gbps of data after cell headers; the packet fabric's run at port_gbps. What D
receives is counted at D (the pull fabric's cells, the push fabric's packets past the
middle stage), at most a port's rate each. Both run on the lab's fabric device (kind fabric: the
simulated lab's fabric1; model_only in the summary). Writes data/pushpull_ports.csv.

With Stardust switches in the inventory (--bench stardust, or switches with
stardust_role) the pull fabric runs on them: D is the first FA, its host port A and
a second host port, bench_port_b, that the run adds as B (and deletes after); the second
FA's packet generator sends cell_bytes frames (a frame is a cell on Tofino) at two ports'
worth, half towards A and half towards B, the third FA's at one port's worth towards A.
A's credits go round robin to the two VOQs that send to it, B's to its one, and D's
host ports' counters give what A and B received over bench_measure. With
bench_link_gbps 50 (the default here) D's four links carry two ports' worth, §5.2's
middle stage. The push fabric then runs on the same switches (bench_packet_fabric bench,
the default): they are restarted with p4/ecmp, a plain packet-switched fabric whose ToRs
spray every packet over their uplinks, D's ports A and B two subnets of its ToR; the same
generators send the same frames open loop, and A's and B's flows' frames out of D's host
ports over bench_measure are what they received (push_fabric_from: bench). With
bench_packet_fabric model the push row is the model's (push_fabric_from: model) and only
Fig. 7 runs. Fig. 12 runs on both fabrics of the bench: B's flow takes traffic class 1,
A's class 0, and the run sets the traffic manager queues of those classes to strict
priority, class 0 first, wherever the run's frames wait (the input devices'
recirculation and fabric ports for pull; every ToR uplink, spine downlink and D's host
ports for push), journalling each priority it found (undo tofino.queue-priority).`

func pushPullParams() []o.ParamSpec {
	return append([]o.ParamSpec{
		// §5.2: 100GE ports.
		{Name: "port_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 100.0, Min: o.Bound(1), Max: o.Bound(1000), Description: "rate of A, B and every source (§5.2: 100GE)"},
		{Name: "packet_bytes", Type: o.TypeInt, Unit: "B", Default: int64(1500), Min: o.Bound(64), Max: o.Bound(9216), Description: "packet size, both fabrics"},
		{Name: "cell_bytes", Type: o.TypeInt, Unit: "B", Default: int64(256), Min: o.Bound(32), Max: o.Bound(4096), Description: "Stardust cell payload bound (§3.2: 256 B)"},
		{Name: "credit_bytes", Type: o.TypeInt, Unit: "B", Default: int64(4096), Min: o.Bound(256), Max: o.Bound(1 << 20), Description: "data one credit releases (§6.3: 4 KB)"},
		{Name: "speed_up", Type: o.TypeFloat, Unit: "1", Default: 0.03, Min: o.Bound(0), Max: o.Bound(1), Description: "credit rate above the port rate (§6.3: 3%)"},
		// §5.5: a Stardust fabric has a speed-up; 5% is ours. At 1 the
		// links into D carry exactly two ports' worth and FCI holds them
		// below it (the README says how far).
		{Name: "fabric_speedup", Type: o.TypeFloat, Unit: "1", Default: 1.05, Min: o.Bound(1), Max: o.Bound(4), Description: "a pull link carries this many ports' worth of data after cell headers (§5.5's fabric speed-up)"},
		{Name: "link_m", Type: o.TypeFloat, Unit: "m", Default: 100.0, Min: o.Bound(0), Max: o.Bound(100000), Description: "fibre length of every fabric link, at 5 ns/m"},
		fciReactionParam(),
		// Ours, as stardust-incast's.
		{Name: "switch_buffer_kb", Type: o.TypeFloat, Unit: "KB", Default: 128.0, Min: o.Bound(10), Max: o.Bound(1e6), Description: "push fabric: drop-tail buffer of every switch output per class, 1024 B a KB"},
		{Name: "warmup", Type: o.TypeDuration, Default: 50 * time.Microsecond, Min: o.Bound(0), Max: o.Bound(1), Description: "simulated time before measuring"},
		{Name: "measure", Type: o.TypeDuration, Default: 500 * time.Microsecond, Min: o.Bound(1e-6), Max: o.Bound(1), Description: "simulated time measured"},
		// The bench's fabric: as stardust-fabric's defaults.
		{Name: "fci_threshold", Type: o.TypeInt, Unit: "frames", Default: int64(32), Min: o.Bound(0), Max: o.Bound(1 << 16), Description: "bench only: FE and FA fabric port queue depth that marks FCI; 0 turns FCI off"},
		{Name: "reach_period", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "bench only: reachability cell and aging period (Table 4: 10 us)"},
		{Name: "bench_port_b", Type: o.TypeInt, Default: int64(184), Min: o.Bound(0), Max: o.Bound(sd.PortCount - 1), Description: "bench only: the dev port of D (the first FA) the run adds as B, beside its host port A"},
		{Name: "bench_push_warmup", Type: o.TypeDuration, Default: time.Millisecond, Min: o.Bound(0), Max: o.Bound(1), Description: "bench only: the push fabric's traffic before measuring: its queues fill before they drop (1 MiB at the middle stage's 25 Gb/s excess takes 335 us on the simulated bench)"},
	}, append(packetBenchParams(), pushPullBenchParams()...)...)
}

// pushPullBenchParams are the bench parameters, the fabric links at 50
// Gb/s: D's four links then carry two ports' worth, as §5.2's middle stage.
func pushPullBenchParams() []o.ParamSpec {
	ps := benchParams(200*time.Microsecond, 50*time.Microsecond, 0)
	out := ps[:0]
	for _, x := range ps {
		switch x.Name {
		case "bench_drain":
			continue
		case "bench_link_gbps":
			x.Default = int64(50)
			x.Description = "bench only: the fabric ports' speed (50: D's four links carry two 100 Gb/s ports' worth, §5.2's middle stage)"
		}
		out = append(out, x)
	}
	return out
}

// PushPullTables are the recipe's table and figures; a bench run (fig7
// only) drops Fig. 12's.
func PushPullTables() []results.Table { return pushPullTables(true) }

func pushPullTables(fig12 bool) []results.Table {
	fig := func(sc, title, caption string) results.Figure {
		return results.Figure{Name: sc + "-pushpull", Title: title, Caption: caption, Kind: results.Bar,
			X: "port", Y: "delivered_gbps", Series: []string{"fabric"}, Where: []results.Cond{{Column: "scenario", Value: sc}},
			XLabel: "Destination port", YLabel: "Received (Gb/s)"}
	}
	t := []results.Table{
		{Name: "pushpull_ports", Title: "What A and B receive", Description: "One row per scenario, fabric and destination port.",
			Fields: []results.Field{
				{Name: "scenario", Type: "string", Description: "fig7 (one class) or fig12 (A high, B low)"},
				{Name: "fabric", Type: "string", Description: "pull (Stardust) or push (packet fabric)"},
				{Name: "port", Type: "string", Description: "A or B"},
				{Name: "offered_gbps", Type: "number", Unit: "Gb/s", Description: "sent towards the port"},
				{Name: "delivered_gbps", Type: "number", Unit: "Gb/s", Description: "received by the port's device"},
				{Name: "share", Type: "number", Unit: "1", Description: "delivered over the port's rate"},
				{Name: "lost", Type: "integer", Description: "packets dropped (push) or cells lost (pull) of the port's flows"},
			},
			Figures: []results.Figure{
				fig("fig7", "Push against pull, one class (Fig. 7)", "§5.2: A is sent two ports' worth, B one; the push fabric's middle stage drops B's traffic with A's, the pull fabric's credits admit only what A and B drain."),
			}},
	}
	if fig12 {
		t[0].Figures = append(t[0].Figures, fig("fig12", "Push against pull, traffic classes (Fig. 12)", "App. F: A's traffic high, B's low; the push fabric's middle stage serves the high class first and drops B's, the pull fabric's schedulers credit A and B apart."))
	}
	return t
}

// PushPullPoint is one scenario on one fabric, Gb/s.
type PushPullPoint struct {
	AGbps     float64 `json:"a_gbps"`
	BGbps     float64 `json:"b_gbps"`
	TotalGbps float64 `json:"total_gbps"`
	// BShare is B's received over what it was sent (§5.2: 66% pushed).
	BShare float64 `json:"b_share"`
	Lost   int64   `json:"lost"`
}

// PushPullSummary is summary.json, keyed scenario then fabric.
type PushPullSummary struct {
	Partial   bool `json:"partial"`
	ModelOnly bool `json:"model_only"`
	// MeasuredOn is "bench" when the pull fabric ran on the switches of a
	// Stardust bench (empty for the model); PushFrom then says where the
	// push fabric's rows come from.
	MeasuredOn string                              `json:"measured_on,omitempty"`
	PushFrom   string                              `json:"push_fabric_from,omitempty"`
	Scenarios  map[string]map[string]PushPullPoint `json:"scenarios"`
	// PullOverPush is the total pull delivers over push's, per scenario
	// (App. F: twice with classes).
	PullOverPush map[string]float64 `json:"pull_over_push"`
}

// add records a scenario's point on one fabric and, with both, pull over
// push.
func (s *PushPullSummary) add(sc, fabric string, pt PushPullPoint) {
	if s.Scenarios[sc] == nil {
		s.Scenarios[sc] = map[string]PushPullPoint{}
	}
	s.Scenarios[sc][fabric] = pt
	if pu, ok := s.Scenarios[sc]["pull"]; ok {
		if ps, ok := s.Scenarios[sc]["push"]; ok && ps.TotalGbps > 0 {
			s.PullOverPush[sc] = pu.TotalGbps / ps.TotalGbps
		}
	}
}

// pushPullModel is the model's pull fabric (c) and push fabric (push, po)
// of §5.2's shape: three devices of two ports, two FEs, one link from each
// to every device.
func pushPullModel(p *o.Params) (c, push sd.Fabric, po sd.PacketFabricOpts, err error) {
	c = sd.DefaultFabric()
	c.FAs, c.FEs, c.LinksPerFA, c.PortsPerFA, c.Groups, c.Stages = 3, 2, 2, 2, 1, 1
	c.PortBps = p.Float("port_gbps") * 1e9
	c.CellBytes, c.CreditBytes, c.SpeedUp = int(p.Int("cell_bytes")), int(p.Int("credit_bytes")), p.Float("speed_up")
	c.PacketBytes = int(p.Int("packet_bytes"))
	c.PropDelay = time.Duration(p.Float("link_m") * 5)
	c.Load, c.Priorities = 0, 2
	c.FCIReaction = p.String("fci_reaction")
	// A pull link carries a port's data after cell headers; a push link
	// a port's rate.
	c.LinkBps = p.Float("fabric_speedup") * c.PortBps * float64(c.CellBytes+c.CellHeaderBytes+c.LinkOverheadBytes) / float64(c.CellBytes)
	if err := c.Validate(); err != nil {
		return c, push, po, o.Inputf("%s: the fabric's parameters: %v", PushPullName, err)
	}
	push = c
	push.LinkBps, push.Priorities = c.PortBps, 1
	po = sd.PacketFabricOpts{BufferBytes: int(p.Float("switch_buffer_kb") * 1024), InitWindow: 1, RTO: time.Second, OpenLoop: true, Spray: true, Classes: 2}
	return c, push, po, nil
}

// pushPullFlow is one of §5.2's flows: from device src to D's port (0 A,
// 1 B) in class prio.
type pushPullFlow struct{ src, port, prio int }

// pushPullFlows are a scenario's flows: D is device 0 (A port 0, B port
// 1), the first input device 1 sends to A and B, the second 2 to A; fig12
// puts B's flow in the low class.
func pushPullFlows(sc string) []pushPullFlow {
	bPrio := 0
	if sc == "fig12" {
		bPrio = 1
	}
	return []pushPullFlow{{1, 0, 0}, {1, 1, bPrio}, {2, 0, 0}}
}

// writePushPull writes a scenario's rows for one fabric from what A and B
// received and were sent (Gb/s) and lost, at most a port's rate each (a
// port drains at its rate: what it receives beyond that waits, pulled, or
// is dropped at its egress, pushed).
func writePushPull(rc *o.RunContext, sc, fabric string, got, offered [2]float64, lost [2]int64, port float64) (PushPullPoint, error) {
	t, err := rc.Table("pushpull_ports")
	if err != nil {
		return PushPullPoint{}, err
	}
	pt := PushPullPoint{AGbps: min(got[0], port), BGbps: min(got[1], port)}
	pt.TotalGbps = pt.AGbps + pt.BGbps
	pt.BShare = pt.BGbps / offered[1]
	pt.Lost = lost[0] + lost[1]
	for k, name := range []string{"A", "B"} {
		if err := t.Write(sc, fabric, name, offered[k], min(got[k], port), min(got[k], port)/port, lost[k]); err != nil {
			return pt, err
		}
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%s %s: A %.1f Gb/s, B %.1f Gb/s (%.0f%% of what it was sent), %d lost",
		sc, fabric, pt.AGbps, pt.BGbps, 100*pt.BShare, pt.Lost)})
	return pt, nil
}

// simulatePushPull runs scenario sc on device fd's pull fabric c (cells)
// or push fabric push (packets) and writes its rows.
func simulatePushPull(ctx context.Context, rc *o.RunContext, fd fabric.Fabric, p *o.Params, sc, kind string, c, push sd.Fabric, po sd.PacketFabricOpts) (PushPullPoint, error) {
	flows := pushPullFlows(sc)
	cfg := c
	if kind == "push" {
		cfg = push
	}
	slot := cfg.SlotSeconds()
	warm := int64(p.Duration("warmup").Seconds() / slot)
	meas := max(1, int64(p.Duration("measure").Seconds()/slot))
	bytes := int64(2 * cfg.PortBps / 8 * float64(warm+meas) * slot)
	var err error
	if kind == "pull" {
		err = fd.OpenCells(ctx, cfg, fabric.Seed{rc.Seed, 0x5d})
	} else {
		err = fd.OpenPackets(ctx, cfg, po, fabric.Seed{rc.Seed, 0xec})
	}
	if err != nil {
		return PushPullPoint{}, err
	}
	for _, f := range flows {
		if _, err := fd.AddFlow(ctx, fabric.Flow{Src: f.src, Port: f.port, Prio: f.prio, Bytes: bytes, PacketBytes: cfg.PacketBytes}); err != nil {
			return PushPullPoint{}, err
		}
	}
	// state reads what each flow delivered and lost: a packet flow's
	// drops, or for every flow of the pull fabric the cells it lost.
	state := func() (delivered, lost []int64, err error) {
		fs, err := fd.Flows(ctx)
		if err != nil {
			return nil, nil, err
		}
		if len(fs) != len(flows) {
			return nil, nil, fmt.Errorf("the fabric has %d flows, not the %d offered", len(fs), len(flows))
		}
		var cells int64
		if kind == "pull" {
			st, err := fd.Stats(ctx)
			if err != nil {
				return nil, nil, err
			}
			cells = st.CellsLost + st.CellsLostFailed + st.CellsNoRoute
		}
		for _, f := range fs {
			delivered, lost = append(delivered, f.Delivered), append(lost, f.Drops+cells)
		}
		return delivered, lost, nil
	}
	if err := runSlots(ctx, fd, warm); err != nil {
		return PushPullPoint{}, err
	}
	d0, l0, err := state()
	if err != nil {
		return PushPullPoint{}, err
	}
	if err := runSlots(ctx, fd, meas); err != nil {
		return PushPullPoint{}, err
	}
	d1, l1, err := state()
	if err != nil {
		return PushPullPoint{}, err
	}
	gbps := func(b int64) float64 { return float64(b) * 8 / (float64(meas) * slot) / 1e9 }
	var got, offered [2]float64
	var lost [2]int64
	for i, f := range flows {
		got[f.port] += gbps(d1[i] - d0[i])
		offered[f.port] += cfg.PortBps / 1e9
		if kind == "push" {
			lost[f.port] += l1[i] - l0[i]
		}
	}
	if kind == "pull" {
		lost[0] = l1[0] - l0[0] // the fabric's, all flows
	}
	return writePushPull(rc, sc, kind, got, offered, lost, cfg.PortBps/1e9)
}

// Plan implements Recipe. On the model it runs on the lab's fabric device; with
// Stardust switches in the inventory the pull fabric runs on them
// (planBench).
func (r *PushPull) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	c, push, po, err := pushPullModel(p)
	if err != nil {
		return nil, err
	}
	if b, err := findBench(pc.Lab); err != nil {
		return nil, err
	} else if b != nil {
		return r.planBench(pc, b, push, po)
	}
	dev, err := bindFabric(pc.Lab)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	sum := PushPullSummary{ModelOnly: true, Scenarios: map[string]map[string]PushPullPoint{}, PullOverPush: map[string]float64{}}
	steps := 0
	plan := &o.Plan{Tables: PushPullTables(),
		Bindings: []o.Binding{modelBinding(dev, fmt.Sprintf("the cell-level fabric and the packet-switched one alone (model_only): 3 devices of 2 x %g Gb/s ports, 2 links each to 2 FEs", c.PortBps/1e9))},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || steps < 4
			return s, nil
		}}
	for _, sc := range []string{"fig7", "fig12"} {
		for _, fabric := range []string{"pull", "push"} {
			plan.Steps = append(plan.Steps, &o.Step{Name: sc + " " + fabric, Action: "simulate", Devices: []string{dev},
				Run: func(ctx context.Context, rc *o.RunContext) error {
					fd, err := fabricOf(rc, dev)
					if err != nil {
						return err
					}
					pt, err := simulatePushPull(ctx, rc, fd, p, sc, fabric, c, push, po)
					if err != nil {
						return err
					}
					mu.Lock()
					defer mu.Unlock()
					sum.add(sc, fabric, pt)
					steps++
					return nil
				}})
		}
	}
	return plan, nil
}
