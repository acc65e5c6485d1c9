package stardust

import (
	"context"
	"fmt"
	"sync"
	"time"

	"testbed/dut/p4switch"
	o "testbed/orchestrator"
	"testbed/p4/ecmp"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// planBench is stardust-pushpull on a Stardust bench, the pull fabric
// measured on its switches: D is the first FA, with its host port as A and
// a second host port, bench_port_b, added by the run as B; the first input
// device is the second FA, sending a port's worth towards A and one
// towards B, the second input device the third FA, sending a port's worth
// towards A. Each of D's ports hands out its own credits (A's round robin
// over the two VOQs that send to it, B's to its one), so the sources send
// only what A and B drain. With bench_link_gbps 50 (the default here) D's
// four links carry two ports' worth, as §5.2's middle stage. The push
// fabric then runs on the same switches restarted with p4/ecmp, spraying
// every packet (bench_packet_fabric bench), and both scenarios run on
// both fabrics: fig12's classes are traffic manager queues, A's flows in
// queue 0 and B's in queue 1, queue 0 served first (App. F: strict
// priority) wherever the run's frames are queued. With the model's push
// fabric (bench_packet_fabric model) Fig. 7 alone runs.
func (r *PushPull) planBench(pc *o.PlanContext, b *bench, push sd.Fabric, po sd.PacketFabricOpts) (*o.Plan, error) {
	p := pc.Params
	frame := int(p.Int("cell_bytes"))
	cfg, err := benchConfigFrom(p, frame)
	if err != nil {
		return nil, o.Inputf("cell_bytes: %v", err)
	}
	cfg.FCIFrames = int(p.Int("fci_threshold"))
	portB, err := pushPullBenchCheck(p, b, cfg)
	if err != nil {
		return nil, err
	}
	d := b.FAs[0]
	desc := b.describe(cfg.LinkGbps, cfg.HostGbps)
	onBench := p.String("bench_packet_fabric") == "bench"
	dev, err := comparisonDevice(pc)
	if err != nil {
		return nil, err
	}
	pushFrom, bindings := "model", comparisonBindings(desc, "the push fabric (packets sprayed at line rate, drop-tail buffers), in the model at §5.2's shape", dev)
	scenarios := []string{"fig7"}
	if onBench {
		pushFrom, bindings = "bench", packetBindings(desc)
		scenarios = append(scenarios, "fig12")
	}
	pb := &pushPullBench{b: b, d: d, portB: portB, cfg: cfg, p: p, dev: dev, push: push, po: po,
		warm: p.Duration("bench_warmup"), measure: p.Duration("bench_measure"), pushWarm: p.Duration("bench_push_warmup"),
		sum: PushPullSummary{ModelOnly: false, MeasuredOn: "bench", PushFrom: pushFrom, Scenarios: map[string]map[string]PushPullPoint{}, PullOverPush: map[string]float64{}}}
	tables := pushPullTables(onBench)
	if onBench {
		tables = append(tables, ecmpFlowsTable())
	}
	plan := &o.Plan{Tables: tables,
		Bindings: append(bindings, o.Binding{Role: "D", Resource: d.Name, Detail: fmt.Sprintf("A: dev port %d (its host port), B: dev port %d (added by the run)", d.Host, portB)}),
		Summary: func(partial bool) (any, error) {
			pb.mu.Lock()
			defer pb.mu.Unlock()
			s := pb.sum
			s.Partial = partial || pb.steps < 2*len(scenarios)
			return s, nil
		}}
	plan.Steps = append(plan.Steps, b.upStep(cfg, &pb.br))
	plan.Steps = append(plan.Steps, &o.Step{Name: "D's two host ports", Action: "configure", Devices: []string{d.Name},
		Note: fmt.Sprintf("port %d added at %d Gb/s as B; A and B each get their credits", portB, cfg.HostGbps),
		Run:  pb.hostPorts})
	for _, sc := range scenarios {
		plan.Steps = append(plan.Steps, &o.Step{Name: sc + " pull (bench)", Action: "measure", Devices: b.devices(),
			Note: fmt.Sprintf("%v + %v measured on the switches' clock", pb.warm, pb.measure),
			Run:  func(ctx context.Context, rc *o.RunContext) error { return pb.pull(ctx, rc, sc) }})
	}
	if !onBench {
		plan.Steps = append(plan.Steps, &o.Step{Name: "fig7 push (model)", Action: "simulate", Devices: []string{dev}, Run: pb.pushModel})
		return plan, nil
	}
	for _, sc := range scenarios {
		plan.Steps = append(plan.Steps, &o.Step{Name: sc + " push (bench)", Action: "measure", Devices: b.devices(),
			Note: fmt.Sprintf("%s on every switch, packets sprayed per packet; %v + %v measured on the switches' clock", ecmp.Program, pb.pushWarm, pb.measure),
			Run:  func(ctx context.Context, rc *o.RunContext) error { return pb.pushBench(ctx, rc, sc) }})
	}
	return plan, nil
}

// pushPullBenchCheck checks the bench can run §5.2's example with the
// parameters and returns B's dev port on D (the first FA).
func pushPullBenchCheck(p *o.Params, b *bench, cfg benchConfig) (int, error) {
	if len(b.FAs) < 3 {
		return 0, o.Inputf("%s: §5.2's example needs three FAs (D and two input devices); the bench has %d", PushPullName, len(b.FAs))
	}
	if g := p.Float("port_gbps"); g != float64(cfg.HostGbps) {
		return 0, o.Inputf("port_gbps %g: the bench's host ports run at bench_host_gbps %d Gb/s; set them equal so that the push fabric's row is for the same ports", g, cfg.HostGbps)
	}
	d := b.FAs[0]
	portB := int(p.Int("bench_port_b"))
	if portB == d.Host || portB < 0 || portB >= sd.PortCount {
		return 0, o.Inputf("bench_port_b %d: expected a dev port of %s other than its host port %d", portB, d.Name, d.Host)
	}
	for _, x := range d.Ports {
		if x == portB {
			return 0, o.Inputf("bench_port_b %d is one of %s's fabric ports", portB, d.Name)
		}
	}
	return portB, nil
}

// pushPullBench is push-pull's run on a Stardust bench: the pull fabric
// on the bench, the push fabric on the model or the bench restarted as a
// packet fabric.
type pushPullBench struct {
	b                       *bench
	d                       *benchNode
	portB                   int
	cfg                     benchConfig
	p                       *o.Params
	dev                     string
	push                    sd.Fabric
	po                      sd.PacketFabricOpts
	warm, measure, pushWarm time.Duration
	br                      *benchRun  // set by the fabric's up step
	pr                      *packetRun // set by the first push step on the bench
	mu                      sync.Mutex
	sum                     PushPullSummary
	steps                   int
}

func (pb *pushPullBench) done(sc, fabric string, pt PushPullPoint) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	pb.sum.add(sc, fabric, pt)
	pb.steps++
}

// hostPorts adds B to D and gives A and B their credits.
func (pb *pushPullBench) hostPorts(ctx context.Context, rc *o.RunContext) error {
	d := pb.d
	if pb.br == nil {
		return fmt.Errorf("the fabric is not up")
	}
	if err := pb.br.port(ctx, d, pb.portB, pb.cfg.HostGbps); err != nil {
		return err
	}
	if err := d.sd.SetHostPorts(ctx, map[int]int{0: d.Host, 1: pb.portB}); err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	if err := d.sd.SetCreditPorts(ctx, []int{0, 1}); err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	d.creditPorts = 2
	return nil
}

// pull measures scenario sc on the pull fabric.
func (pb *pushPullBench) pull(ctx context.Context, rc *o.RunContext, sc string) error {
	br := pb.br
	if br == nil || pb.d.creditPorts != 2 {
		return fmt.Errorf("the fabric is not up")
	}
	if sc == "fig12" {
		// The input devices' queues: the recirculation port's,
		// where frames wait for credit, and the fabric ports'.
		for _, n := range []*benchNode{br.FAs[1], br.FAs[2]} {
			if err := classPriorities(ctx, rc, n, append([]int{recircPort}, n.Ports...)); err != nil {
				return err
			}
		}
	}
	got, offered, lost, err := br.pushPull(ctx, rc, pb.portB, classOfB(sc), pb.warm, pb.measure)
	if err != nil {
		return err
	}
	pt, err := writePushPull(rc, sc, "pull", got, offered, lost, float64(pb.cfg.HostGbps))
	if err != nil {
		return err
	}
	pb.done(sc, "pull", pt)
	return nil
}

// pushModel simulates Fig. 7's push fabric on the model.
func (pb *pushPullBench) pushModel(ctx context.Context, rc *o.RunContext) error {
	fd, err := fabricOf(rc, pb.dev)
	if err != nil {
		return err
	}
	pt, err := simulatePushPull(ctx, rc, fd, pb.p, "fig7", "push", pb.push, pb.push, pb.po)
	if err != nil {
		return err
	}
	pb.done("fig7", "push", pt)
	return nil
}

// pushBench measures scenario sc on the bench restarted as a packet
// fabric (the first push step restarts it).
func (pb *pushPullBench) pushBench(ctx context.Context, rc *o.RunContext, sc string) error {
	b, d, cfg := pb.b, pb.d, pb.cfg
	if pb.pr == nil {
		var err error
		if pb.pr, err = b.packetUp(ctx, rc, cfg.LinkGbps, cfg.HostGbps, cfg.Replace, true, map[*benchNode]map[int]int{d: {pushSubnetB(b): pb.portB}}); err != nil {
			return err
		}
	}
	if sc == "fig12" {
		// Every egress queue the run's frames meet: the ToRs'
		// uplinks and D's host ports, the spines' downlinks.
		for _, n := range b.nodes() {
			ports := append([]int{}, n.Ports...)
			if n == d {
				ports = append(ports, d.Host, pb.portB)
			}
			if err := classPriorities(ctx, rc, n, ports); err != nil {
				return err
			}
		}
	}
	pt, err := pushOnBench(ctx, rc, pb.pr, sc, cfg.FrameBytes, pb.pushWarm, pb.measure)
	if err != nil {
		return err
	}
	pb.done(sc, "push", pt)
	return nil
}

// Fig. 12's classes: A's flows in traffic manager queue classHigh, B's in
// classLow, the first served before the second (strict priority: App. F).
const (
	classHigh = 0
	classLow  = 1
	// prioHigh and prioLow are their queues' scheduling priorities (the
	// traffic manager serves a higher one first).
	prioHigh = 1
	prioLow  = 0
)

// classOfB is B's flow's class in scenario sc: fig12 puts it low.
func classOfB(sc string) int {
	if sc == "fig12" {
		return classLow
	}
	return classHigh
}

// classPriorities sets the class queues of n's ports to strict priority,
// journalling each priority found first.
func classPriorities(ctx context.Context, rc *o.RunContext, n *benchNode, ports []int) error {
	for _, port := range ports {
		for qid, prio := range map[int]int{classHigh: prioHigh, classLow: prioLow} {
			key := fmt.Sprintf("tm/priority/%s/%d/%d", n.Name, port, qid)
			if rc.FirstTouch(key) {
				found, err := n.sw.QueuePriority(ctx, port, qid)
				if err != nil {
					return fmt.Errorf("%s: %w", n.Name, err)
				}
				if err := rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoQueuePriority, Desc: fmt.Sprintf("set port %d queue %d on %s back to priority %d", port, qid, n.Name, found),
					Found: found, Args: map[string]int{"port": port, "qid": qid, "priority": found}}); err != nil {
					return err
				}
			}
			if _, err := n.sw.SetQueuePriority(ctx, port, qid, prio); err != nil {
				return fmt.Errorf("%s: port %d queue %d: %w", n.Name, port, qid, err)
			}
		}
	}
	return nil
}

// pushPull runs Fig. 7 on the bench: the second FA sends two ports' worth
// (half to A, half to B), the third one port's worth to A, and D's host
// ports' counters give what A and B received over the window. It returns
// Gb/s received and sent per port and the frames the FEs' queues lost.
func (br *benchRun) pushPull(ctx context.Context, rc *o.RunContext, portB, classB int, warm, measure time.Duration) (got, offered [2]float64, lost [2]int64, err error) {
	d, s1, s2 := br.FAs[0], br.FAs[1], br.FAs[2]
	// One VOQ per destination port at the sources: A's is voq(D), B's the
	// one after the FAs' range.
	voqA, voqB := voq(d.ID), sd.MaxFAs+d.ID
	a := sd.VOQTarget{FA: d.ID, Port: 0, VOQ: voqA, TC: classHigh}
	bt := sd.VOQTarget{FA: d.ID, Port: 1, VOQ: voqB, TC: classB}
	if err = s1.sd.SetGenFlow(ctx, appData, []sd.VOQTarget{a, bt}); err != nil {
		return got, offered, lost, fmt.Errorf("%s: %w", s1.Name, err)
	}
	if err = s2.sd.SetGenFlow(ctx, appData, []sd.VOQTarget{a}); err != nil {
		return got, offered, lost, fmt.Errorf("%s: %w", s2.Name, err)
	}
	if err = d.sd.SetCreditSources(ctx, 0, []sd.CreditSource{{FA: s1.ID, VOQ: voqA}, {FA: s2.ID, VOQ: voqA}}); err != nil {
		return got, offered, lost, fmt.Errorf("%s: %w", d.Name, err)
	}
	if err = d.sd.SetCreditSources(ctx, 1, []sd.CreditSource{{FA: s1.ID, VOQ: voqB}}); err != nil {
		return got, offered, lost, fmt.Errorf("%s: %w", d.Name, err)
	}
	if err = br.startInfra(ctx, warm+measure+br.cfg.ReachPeriod); err != nil {
		return got, offered, lost, err
	}
	host := float64(br.cfg.HostGbps) * 1e9
	read := func() (int64, int64, int64, error) {
		ca, err := d.sw.PortFramesOf(ctx, d.Host, p4switch.FrameQuery{Fields: p4switch.FramesTxOK})
		if err != nil {
			return 0, 0, 0, fmt.Errorf("%s: %w", d.Name, err)
		}
		cb, err := d.sw.PortFramesOf(ctx, portB, p4switch.FrameQuery{Fields: p4switch.FramesTxOK})
		if err != nil {
			return 0, 0, 0, fmt.Errorf("%s: %w", d.Name, err)
		}
		var drops int64
		for _, fe := range br.FEs {
			q, err := fe.sd.QueueDrops(ctx, fe.Ports, 0)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("%s: %w", fe.Name, err)
			}
			for _, x := range q {
				drops += x
			}
		}
		return ca.TxOK, cb.TxOK, drops, nil
	}
	clock := d.sw
	t0, err := clock.Clock(ctx)
	if err != nil {
		return got, offered, lost, err
	}
	_, _, drops0, err := read()
	if err != nil {
		return got, offered, lost, err
	}
	for _, x := range []struct {
		n   *benchNode
		bps float64
	}{{s1, 2 * host}, {s2, host}} {
		period, k, _ := pace(br.cfg.FrameBytes, x.bps)
		batches, err := batchesFor(warm+measure, period)
		if err != nil {
			return got, offered, lost, err
		}
		g := sd.Generator{AppID: appData, Port: genPort, EgressPort: x.n.Host, FrameBytes: br.cfg.FrameBytes, Period: period, PerBatch: k, Batches: batches,
			Cell: sd.Cell{Kind: sd.KindData, SrcFA: uint16(x.n.ID)}}
		if err := br.startGen(ctx, x.n, g); err != nil {
			return got, offered, lost, err
		}
	}
	tA, err := clock.WaitClock(ctx, t0+warm)
	if err != nil {
		return got, offered, lost, err
	}
	a0, b0, _, err := read()
	if err != nil {
		return got, offered, lost, err
	}
	tB, err := clock.WaitClock(ctx, tA+measure)
	if err != nil {
		return got, offered, lost, err
	}
	a1, b1, drops1, err := read()
	if err != nil {
		return got, offered, lost, err
	}
	if err := br.stopAll(ctx, appData, appCredit, appReach, appAge); err != nil {
		return got, offered, lost, err
	}
	wire := float64((br.cfg.FrameBytes + wireExtra) * 8)
	win := (tB - tA).Seconds()
	got = [2]float64{float64(a1-a0) * wire / win / 1e9, float64(b1-b0) * wire / win / 1e9}
	offered = [2]float64{2 * host / 1e9, host / 1e9}
	// The fabric's losses, all flows (as the model's pull row).
	lost[0] = drops1 - drops0
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("fig7 on the bench: A received %.2f Gb/s, B %.2f Gb/s over %v; %d frames lost in FE queues", got[0], got[1], tB-tA, lost[0])})
	return got, offered, lost, nil
}

// pushDrain bounds the push fabric's wait, after its generators stop,
// for its queues to empty (a 1 MiB queue drains in 168 us at 50 Gb/s).
const pushDrain = 2 * time.Millisecond

// pushOnBench runs scenario sc on the packet-switched bench pr (the
// switches restarted with p4/ecmp spraying every packet over a ToR's
// uplinks: the model's push fabric sprays too, load balancing as good as
// a packet fabric gets, §5.2), D's host port A its own subnet and port B
// a second one; the second FA sends two ports' worth, half to A and half
// to B, the third a port's worth to A, open loop, B's flow in class
// classOfB(sc), in frames of frame bytes. What A and B received is their flows' frames out of D's
// host ports over the window (a port drains at its rate: what reaches it
// beyond that is dropped at its queue), and each flow's loss is what it
// sent less what arrived, once the queues have drained.
func pushOnBench(ctx context.Context, rc *o.RunContext, pr *packetRun, sc string, frame int, warm, measure time.Duration) (PushPullPoint, error) {
	d, s1, s2 := pr.FAs[0], pr.FAs[1], pr.FAs[2]
	subB := pushSubnetB(pr.bench)
	host := float64(pr.hostGbps) * 1e9
	ids, err := pr.flowIDs(3)
	if err != nil {
		return PushPullPoint{}, err
	}
	a1, b1, a2 := ids[0], ids[1], ids[2]
	gens := []packetGen{{src: s1, flows: []packetFlow{{s1, d.ID, a1, classHigh}, {s1, subB, b1, classOfB(sc)}}, bps: 2 * host}, {src: s2, flows: []packetFlow{{s2, d.ID, a2, classHigh}}, bps: host}}
	pt, err := pr.run(ctx, sc+" push", frame, gens, warm, measure, pushDrain)
	if err != nil {
		return PushPullPoint{}, err
	}
	wire := float64((frame + wireExtra) * 8)
	gbps := func(frames int64) float64 { return float64(frames) * wire / pt.Window.Seconds() / 1e9 }
	got := [2]float64{gbps(pt.WindowRcvd[a1] + pt.WindowRcvd[a2]), gbps(pt.WindowRcvd[b1])}
	offered := [2]float64{gbps(pt.WindowSent[a1] + pt.WindowSent[a2]), gbps(pt.WindowSent[b1])}
	lost := [2]int64{pt.Sent[a1] + pt.Sent[a2] - pt.Rcvd[a1] - pt.Rcvd[a2], pt.Sent[b1] - pt.Rcvd[b1]}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%s on the packet-switched bench: dropped at the ToRs' uplink queues %d, at the spines' downlink queues %d, at D's host ports %d",
		sc, pt.Uplink, pt.Downlink, pt.HostDrops)})
	return writePushPull(rc, sc, "push", got, offered, lost, float64(pr.hostGbps))
}

// pushSubnetB is the subnet (ToR id) the packet-switched bench gives D's
// port B: one above every FA's id.
func pushSubnetB(b *bench) int {
	id := 0
	for _, n := range b.FAs {
		id = max(id, n.ID+1)
	}
	return id
}
