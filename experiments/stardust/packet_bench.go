package stardust

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"testbed/dut/p4switch"
	o "testbed/orchestrator"
	"testbed/p4/ecmp"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// The packet-switched bench: the Stardust bench's switches running
// p4/ecmp, a plain leaf-spine fabric (ECMP, no credits, no cells), the
// comparison the paper draws Stardust against (§5.2, §5.4, §6.3). The FAs'
// positions are ToRs, the FEs' spines, on the same fibres and ports: a ToR
// sends a flow's packets over one of its uplinks by the ECMP hash of their
// 5-tuple (or, for the push fabric of §5.2, sprays them per packet), a
// spine sends them down its one link to the destination ToR, and every
// egress port has a drop-tail queue per traffic class. The traffic comes from the ToRs'
// packet generators, open loop (no congestion control reacts to a loss:
// the bench has no hosts to run TCP), as flows the generator's frames are
// spread over (gen_flow); p4/ecmp's registers count each flow's frames
// where they enter the fabric and where they leave it for the host.
//
// Policy: a bench recipe runs its Stardust half first and the packet
// fabric after it. A switch found running its Stardust program (the
// recipe's own bring-up) or ecmp is restarted with ecmp without asking;
// another program needs replace_program, as for the Stardust bring-up.
// The program found is put back at the end of the run (undo
// tofino.program), before the Stardust bring-up's own undos run against
// it; the ports this bring-up adds are deleted and its tables cleared
// first.

// appFlows is the packet bench's generator application (one per ToR; the
// flows of a ToR share it through gen_flow's slots).
const appFlows = 4

// packetRun is the bench brought up with p4/ecmp.
type packetRun struct {
	*bench
	rc                 *o.RunContext
	linkGbps, hostGbps int
	// subnets are a ToR's host subnets beyond its own id: subnet id ->
	// host dev port (stardust-pushpull's B).
	subnets map[*benchNode]map[int]int
	// used are the flow numbers the run has given out: each flow gets
	// fresh registers.
	used map[int]bool
	rng  *rand.Rand
}

// flowIDs draws n flow numbers the run has not used, at random: a flow's
// number is its UDP source port's offset, and hosts draw their ephemeral
// ports at random, so the flows' ECMP hashes are as a real workload's
// (consecutive ports would hash to distinct slots: a CRC is linear).
func (pr *packetRun) flowIDs(n int) ([]int, error) {
	var out []int
	for _, id := range pr.rng.Perm(ecmp.MaxFlows) {
		if len(out) == n {
			break
		}
		if !pr.used[id] {
			pr.used[id] = true
			out = append(out, id)
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("%d flows: the run has used %d of the program's %d flow registers", n, len(pr.used)-len(out), ecmp.MaxFlows)
	}
	return out, nil
}

// packetFlow is one generator flow of the packet bench: from ToR src's
// generator to subnet dst (a ToR id, or one of packetRun.subnets), flow
// number id (unique in the run: the registers are indexed by it), in
// traffic class tc (the traffic manager queue it takes at every switch).
type packetFlow struct {
	src *benchNode
	dst int
	id  int
	tc  int
}

// packetBenchParams are the parameters a recipe with a packet-switched
// comparison adds for its bench mode.
func packetBenchParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "bench_packet_fabric", Type: o.TypeString, Default: "bench", Enum: []string{"bench", "model"}, Description: "bench only: the packet-switched comparison on the bench's switches (p4/ecmp, after Stardust's run) or in the model at the bench's shape"},
	}
}

// ecmpFlowsTable is the packet bench's flows: which 5-tuple each was
// (its UDP source port; the addresses follow from the ToRs, ecmp.HostAddr
// and ecmp.SourceAddr) and what it sent and delivered.
func ecmpFlowsTable() results.Table {
	return results.Table{Name: "ecmp_flows", Title: "Packet-switched bench: every flow", Description: "One row per step and flow of the packet-switched bench (p4/ecmp).",
		Fields: []results.Field{
			{Name: "step", Type: "string"},
			{Name: "src", Type: "string", Description: "the source ToR"},
			{Name: "dst_subnet", Type: "integer", Description: "the destination's subnet, 10.0.<dst_subnet>.0/24"},
			{Name: "flow", Type: "integer", Description: "its registers' index"},
			{Name: "udp_src_port", Type: "integer"},
			{Name: "sent", Type: "integer", Unit: "frames", Description: "into the fabric, the whole run"},
			{Name: "received", Type: "integer", Unit: "frames", Description: "out of the destination's host port, the whole run"},
			{Name: "window_received", Type: "integer", Unit: "frames", Description: "out of the destination's host port within the measured window"},
			{Name: "fct_us", Type: "number", Unit: "us", Description: "its last frame out of the destination's host port, after the generators started"},
		}}
}

// writeFlows writes the flows' rows of ecmp_flows.
func (pt packetPoint) writeFlows(rc *o.RunContext, step string, gens []packetGen) error {
	t, err := rc.Table("ecmp_flows")
	if err != nil {
		return err
	}
	for _, g := range gens {
		for _, f := range g.flows {
			var fct any
			if pt.Rcvd[f.id] > 0 {
				fct = pt.FCT[f.id].Seconds() * 1e6
			}
			if err := t.Write(step, f.src.Name, f.dst, f.id, ecmp.FlowPortBase+f.id, pt.Sent[f.id], pt.Rcvd[f.id], pt.WindowRcvd[f.id], fct); err != nil {
				return err
			}
		}
	}
	return nil
}

// packetBindings name the bench, its programs and the packet-switched
// comparison on the same switches.
func packetBindings(desc string) []o.Binding {
	return []o.Binding{{Role: "fabric", Resource: "switches with stardust_role", Detail: desc},
		{Role: "programs", Resource: "switches", Detail: fmt.Sprintf("%s on the FAs, %s on the FEs; then %s on every switch for the packet fabric", sd.ProgramFA, sd.ProgramFE, ecmp.Program)}}
}

// packetUp brings the bench up as a packet-switched fabric: p4/ecmp on
// every switch, the host and fabric ports at their speeds, and the routes:
// a ToR delivers its subnets to their host ports and sends every other
// ToR's over its uplinks (by the flow hash, or per packet when spray), a
// spine sends each ToR's subnets down its link to it.
func (b *bench) packetUp(ctx context.Context, rc *o.RunContext, linkGbps, hostGbps int, replace, spray bool, subnets map[*benchNode]map[int]int) (*packetRun, error) {
	pr := &packetRun{bench: b, rc: rc, linkGbps: linkGbps, hostGbps: hostGbps, subnets: subnets, used: map[int]bool{}, rng: rand.New(rand.NewPCG(rc.Seed, 0xec3f))}
	for _, n := range b.nodes() {
		if n.sw == nil {
			if err := n.open(rc); err != nil {
				return nil, err
			}
		}
	}
	if err := each(b.nodes(), func(n *benchNode) error { return pr.program(ctx, n, replace) }); err != nil {
		return nil, err
	}
	extra := map[*benchNode][]int{}
	for n, sub := range subnets {
		for _, p := range sub {
			extra[n] = append(extra[n], p)
		}
	}
	if err := (&benchRun{bench: b, rc: rc}).portsUp(ctx, hostGbps, linkGbps, extra); err != nil {
		return nil, err
	}
	if err := each(b.nodes(), func(n *benchNode) error { return pr.routes(ctx, n, spray) }); err != nil {
		return nil, err
	}
	how := "ECMP by the flow hash"
	if spray {
		how = "sprayed per packet"
	}
	rc.Event(results.Event{Type: "setting", Message: fmt.Sprintf("packet-switched fabric up (%s on every switch): %s; ToR uplinks %s", ecmp.Program, b.describe(linkGbps, hostGbps), how)})
	return pr, nil
}

// program starts p4/ecmp on n, journalling the restart of the program
// found.
func (pr *packetRun) program(ctx context.Context, n *benchNode, replace bool) error {
	got, err := n.sw.Program(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	if got == ecmp.Program {
		if err := n.sw.Ready(ctx); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	} else {
		if got != "" && got != n.program() && !replace {
			return fmt.Errorf("%s runs the P4 program %q, neither %s nor %s: set replace_program=true to restart its switch daemon with %s", n.Name, got, n.program(), ecmp.Program, ecmp.Program)
		}
		b, err := n.sw.BuildProgram(ctx, ecmp.Program, ecmp.MainFile(ecmp.Program), ecmp.Sources())
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if got != "" && pr.rc.FirstTouch("packet/program/"+n.Name) {
			if err := pr.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoProgram, Desc: fmt.Sprintf("restart bf_switchd on %s with %s, the program found", n.Name, got),
				Found: got, Args: map[string]string{"program": got}}); err != nil {
				return err
			}
		}
		pr.rc.Event(results.Event{Type: "setting", Device: n.Name, Message: fmt.Sprintf("built %s (sources %s) and starting bf_switchd with it (was: %q)", ecmp.Program, b.SourceSHA256[:12], got),
			Fields: map[string]any{"program": ecmp.Program, "previous_program": got, "source_sha256": b.SourceSHA256}})
		if err := n.sw.LoadProgram(ctx, ecmp.Program); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	// The tables this bring-up fills are cleared at the end (the program
	// was just started, or was found running ecmp: what another run left
	// in it is not this run's to keep).
	if pr.rc.FirstTouch("packet/tables/" + n.Name) {
		for _, t := range []string{ecmp.TableGenFlow, ecmp.TableRoute, ecmp.TableECMPSlot} {
			if err := pr.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoTableClear, Desc: fmt.Sprintf("clear %s on %s", t, n.Name),
				Args: map[string]any{"table": t}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// subnetsOf are ToR n's subnets: its own id to its host port, and its
// extra ones.
func (pr *packetRun) subnetsOf(n *benchNode) map[int]int {
	out := map[int]int{n.ID: n.Host}
	for id, p := range pr.subnets[n] {
		out[id] = p
	}
	return out
}

// routes writes n's id and routes.
func (pr *packetRun) routes(ctx context.Context, n *benchNode, spray bool) error {
	wrap := func(err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil
	}
	if n.FE {
		for i, fa := range n.Peers {
			for _, d := range pr.FAs {
				if d.ID != fa {
					continue
				}
				for id := range pr.subnetsOf(d) {
					if err := n.ec.RouteECMP(ctx, id, []int{n.Ports[i]}, false); err != nil {
						return wrap(err)
					}
				}
			}
		}
		return nil
	}
	if err := n.ec.SetToRID(ctx, n.ID); err != nil {
		return wrap(err)
	}
	for _, d := range pr.FAs {
		for id, port := range pr.subnetsOf(d) {
			var err error
			if d == n {
				err = n.ec.RouteToHost(ctx, id, port)
			} else {
				err = n.ec.RouteECMP(ctx, id, n.Ports, spray)
			}
			if err != nil {
				return wrap(err)
			}
		}
	}
	return nil
}

// packetReading is one read of the packet bench's counters.
type packetReading struct {
	At time.Duration
	// Sent and Rcvd are each flow's frames by its id (sent at the source
	// ToR's ingress, received out of the destination's host port), First
	// and Last the destination's timestamps of its first and last frame.
	Sent, Rcvd  map[int]int64
	First, Last map[int]uint32
	// Uplink, Downlink and HostDrops are the frames the ToRs' uplink
	// queues, the spines' downlink queues and the ToRs' host port queues
	// dropped.
	Uplink, Downlink, HostDrops int64
}

// read reads every flow's registers and every queue's drops.
func (pr *packetRun) read(ctx context.Context, at time.Duration, flows []packetFlow) (packetReading, error) {
	r := packetReading{At: at, Sent: map[int]int64{}, Rcvd: map[int]int64{}, First: map[int]uint32{}, Last: map[int]uint32{}}
	bySrc, byDst := map[*benchNode][]int{}, map[*benchNode][]int{}
	// Drops are counted per queue: the queues of every class the flows
	// take.
	classes := map[int]bool{}
	for _, f := range flows {
		classes[f.tc] = true
	}
	drops := func(n *benchNode, ports []int) (int64, error) {
		var sum int64
		for tc := range classes {
			q, err := n.sd.QueueDrops(ctx, ports, tc)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", n.Name, err)
			}
			sum += sum64(q)
		}
		return sum, nil
	}
	for _, f := range flows {
		bySrc[f.src] = append(bySrc[f.src], f.id)
		d := pr.owner(f.dst)
		byDst[d] = append(byDst[d], f.id)
	}
	for _, n := range pr.FAs {
		for k, ids := range [][]int{bySrc[n], byDst[n]} {
			if len(ids) == 0 {
				continue
			}
			c, err := n.ec.FlowCounts(ctx, ids)
			if err != nil {
				return r, fmt.Errorf("%s: %w", n.Name, err)
			}
			for i, id := range ids {
				if k == 0 {
					r.Sent[id] = c[i].Sent
				} else {
					r.Rcvd[id], r.First[id], r.Last[id] = c[i].Rcvd, c[i].First, c[i].Last
				}
			}
		}
		q, err := drops(n, n.Ports)
		if err != nil {
			return r, err
		}
		r.Uplink += q
		hosts := []int{}
		for _, p := range pr.subnetsOf(n) {
			hosts = append(hosts, p)
		}
		if q, err = drops(n, hosts); err != nil {
			return r, err
		}
		r.HostDrops += q
	}
	for _, n := range pr.FEs {
		q, err := drops(n, n.Ports)
		if err != nil {
			return r, err
		}
		r.Downlink += q
	}
	return r, nil
}

func sum64(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// owner is the ToR subnet id belongs to.
func (pr *packetRun) owner(id int) *benchNode {
	for _, n := range pr.FAs {
		if _, ok := pr.subnetsOf(n)[id]; ok {
			return n
		}
	}
	return nil
}

// packetPoint is what one run of flows did: each flow's frames sent and
// received over the window and overall, and the drops by where.
type packetPoint struct {
	Window time.Duration
	// WindowRcvd and WindowSent are frames by flow id within the window;
	// Sent and Rcvd from the start to the end of the drain.
	WindowRcvd, WindowSent map[int]int64
	Sent, Rcvd             map[int]int64
	// FCT is each flow's last frame out of its destination's host port
	// after the generators started (0 for a flow nothing reached).
	FCT map[int]time.Duration
	// Drops over the whole run, by where.
	Uplink, Downlink, HostDrops int64
	Generated                   int64
}

// packetGen is one ToR's generator: its flows share its frames round
// robin over gen_flow's slots, at bps (wire bits), for batches batches.
type packetGen struct {
	src   *benchNode
	flows []packetFlow
	bps   float64
	// frames, when above 0, bounds what the generator sends (whole
	// batches, at least frames frames): a reply.
	frames int64
}

// run runs gens' flows of frameBytes frames (FCS not counted), writing
// their rows of ecmp_flows for step: warm, then measure's window,
// then until every frame is delivered or counted dropped (at most drain
// more).
func (pr *packetRun) run(ctx context.Context, step string, frameBytes int, gens []packetGen, warm, measure, drain time.Duration) (packetPoint, error) {
	pt := packetPoint{}
	var flows []packetFlow
	for _, g := range gens {
		ecf := make([]ecmp.ECMPFlow, len(g.flows))
		for i, f := range g.flows {
			ecf[i] = ecmp.ECMPFlow{Dst: f.dst, Flow: f.id, TC: f.tc}
		}
		if err := g.src.ec.SetFlows(ctx, appFlows, ecf); err != nil {
			return pt, fmt.Errorf("%s: %w", g.src.Name, err)
		}
		flows = append(flows, g.flows...)
	}
	clock := pr.FAs[0].sw
	t0, err := clock.Clock(ctx)
	if err != nil {
		return pt, err
	}
	r0, err := pr.read(ctx, t0, flows)
	if err != nil {
		return pt, err
	}
	var total int64 // frames the generators send
	for _, g := range gens {
		period, k, _ := pace(frameBytes, g.bps)
		batches, err := batchesFor(warm+measure, period)
		if err != nil {
			return pt, err
		}
		if g.frames > 0 {
			batches = int((g.frames + int64(k) - 1) / int64(k))
		}
		total += int64(batches * k)
		if pr.rc.FirstTouch(fmt.Sprintf("pktgen/%s/%d", g.src.Name, appFlows)) {
			if err := pr.rc.Journal(g.src.Name, o.Undo{Kind: o.UndoTofinoPktgen, Desc: fmt.Sprintf("stop packet generator application %d on %s", appFlows, g.src.Name),
				Args: map[string]int{"app_id": appFlows}}); err != nil {
				return pt, err
			}
		}
		fg := ecmp.FlowGenerator{AppID: appFlows, Port: genPort, EgressPort: g.src.Host, FrameBytes: frameBytes, Period: period, PerBatch: k, Batches: batches,
			SrcMAC: sd.GeneratorSourceMAC(appFlows), SrcAddr: ecmp.SourceAddr(g.src.ID, appFlows)}
		if err := g.src.ec.StartFlowGenerator(ctx, fg); err != nil {
			return pt, fmt.Errorf("%s: %w", g.src.Name, err)
		}
	}
	tA, err := clock.WaitClock(ctx, t0+warm)
	if err != nil {
		return pt, err
	}
	rA, err := pr.read(ctx, tA, flows)
	if err != nil {
		return pt, err
	}
	tB, err := clock.WaitClock(ctx, tA+measure)
	if err != nil {
		return pt, err
	}
	rB, err := pr.read(ctx, tB, flows)
	if err != nil {
		return pt, err
	}
	// Then until every generator has sent its batches and every frame sent
	// is received or counted dropped, a step at a time, for at most drain.
	every := max(drain/20, 5*time.Microsecond)
	rC, t := rB, tB
	for t < tB+drain {
		var sent, rcvd int64
		for _, f := range flows {
			sent += rC.Sent[f.id] - r0.Sent[f.id]
			rcvd += rC.Rcvd[f.id] - r0.Rcvd[f.id]
		}
		drops := rC.Uplink + rC.Downlink + rC.HostDrops - r0.Uplink - r0.Downlink - r0.HostDrops
		if sent >= total && rcvd+drops >= sent {
			break
		}
		if t, err = clock.WaitClock(ctx, min(t+every, tB+drain)); err != nil {
			return pt, err
		}
		if rC, err = pr.read(ctx, t, flows); err != nil {
			return pt, err
		}
	}
	if err := each(pr.FAs, func(n *benchNode) error {
		if err := n.sw.StopPktgen(ctx, appFlows); err != nil && !p4switch.IsNotFound(err) {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil
	}); err != nil {
		return pt, err
	}
	for _, g := range gens {
		st, err := g.src.sw.PktgenStatus(ctx, appFlows)
		if err != nil {
			return pt, fmt.Errorf("%s: %w", g.src.Name, err)
		}
		pt.Generated += st.Packets
	}
	pt.Window = rB.At - rA.At
	pt.WindowRcvd, pt.WindowSent = map[int]int64{}, map[int]int64{}
	pt.Sent, pt.Rcvd, pt.FCT = map[int]int64{}, map[int]int64{}, map[int]time.Duration{}
	start := uint32(time.Duration(t0).Nanoseconds())
	for _, f := range flows {
		pt.WindowRcvd[f.id] = rB.Rcvd[f.id] - rA.Rcvd[f.id]
		pt.WindowSent[f.id] = rB.Sent[f.id] - rA.Sent[f.id]
		pt.Sent[f.id] = rC.Sent[f.id] - r0.Sent[f.id]
		pt.Rcvd[f.id] = rC.Rcvd[f.id] - r0.Rcvd[f.id]
		if pt.Rcvd[f.id] > 0 {
			// The registers hold the low 32 bits of the ns clock: the
			// difference modulo 2^32 (runs are far shorter than 4.29 s).
			pt.FCT[f.id] = time.Duration(rC.Last[f.id] - start)
		}
	}
	pt.Uplink, pt.Downlink, pt.HostDrops = rC.Uplink-r0.Uplink, rC.Downlink-r0.Downlink, rC.HostDrops-r0.HostDrops
	return pt, pt.writeFlows(pr.rc, step, gens)
}
