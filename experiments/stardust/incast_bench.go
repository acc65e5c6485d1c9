package stardust

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	o "testbed/orchestrator"
	"testbed/p4/ecmp"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// planBench is stardust-incast on a Stardust bench: the requester is the
// first FA's host port; for each N the next N FAs' packet generators each
// send a reply of response_kb in cell_bytes frames (a frame is a cell on
// Tofino) at their host port's line rate, all at once on the switches'
// clock, and the requester's host port hands out credits round robin over
// their VOQs (its credit_to slots, p4/stardust/README.md). A reply is
// complete when the requester has released its last frame in order: the
// recipe polls the requester's in-order counters (reg_seq_in, through
// the Stardust control plane's SequenceIn) every bench_poll of the switches' clock, so an
// FCT is known to within one poll. The packet fabric's rows come from the
// same switches running p4/ecmp (benchSteps), or with
// bench_packet_fabric=model from the model's PacketFabric at the bench's
// shape.
func (r *Incast) planBench(pc *o.PlanContext, b *bench, ns []int) (*o.Plan, error) {
	p := pc.Params
	frame := int(p.Int("cell_bytes"))
	cfg, err := benchConfigFrom(p, frame)
	if err != nil {
		return nil, o.Inputf("cell_bytes: %v", err)
	}
	if ns[len(ns)-1] > len(b.FAs)-1 {
		return nil, o.Inputf("senders: %d senders on a bench of %d FAs (one is the requester): at most %d; more run on the model alone (without the bench)", ns[len(ns)-1], len(b.FAs), len(b.FAs)-1)
	}
	cfg.FCIFrames = int(p.Int("fci_threshold"))
	poll := p.Duration("bench_poll")
	respBytes := int64(math.Round(p.Float("response_kb") * 1000))
	payload := frame - sd.EthernetBytes - sd.CellHeaderBytes
	period, perBatch, _ := pace(frame, float64(cfg.HostGbps)*1e9)
	// A reply is whole batches of the generator: at least response_kb of
	// payload after the Ethernet and cell headers.
	batches := int((respBytes + int64(payload*perBatch) - 1) / int64(payload*perBatch))
	frames := int64(batches * perBatch)
	wire := float64(frames*int64(frame+wireExtra)) * 8
	desc := b.describe(cfg.LinkGbps, cfg.HostGbps)

	c, err := packetAtBenchShape(b, cfg, int(p.Int("packet_bytes")), time.Duration(p.Float("link_m")*5))
	if err != nil {
		return nil, err
	}
	po := sd.PacketFabricOpts{BufferBytes: int(p.Float("switch_buffer_kb") * 1024), InitWindow: int(p.Int("init_window")), RTO: p.Duration("rto")}
	limit := int64(p.Duration("max_time").Seconds() / c.SlotSeconds())

	var mu sync.Mutex
	onBench := p.String("bench_packet_fabric") == "bench"
	packetDesc := fmt.Sprintf("packet fabric (model, the bench's shape): ECMP per flow, %d B packets, %d B drop-tail buffers, first window %d, RTO %v", c.PacketBytes, po.BufferBytes, po.InitWindow, po.RTO)
	dev, err := comparisonDevice(pc)
	if err != nil {
		return nil, err
	}
	packetFrom, bindings := "model", comparisonBindings(desc, "the comparison's ECMP fabric, in the model at the bench's shape", dev)
	pkFrames := (respBytes + int64(c.PacketBytes-ecmp.HeadersBytes) - 1) / int64(c.PacketBytes-ecmp.HeadersBytes)
	if onBench {
		packetDesc = fmt.Sprintf("packet fabric (the bench's switches running %s): replies of %d frames of %d B (%d B of UDP payload each) from the generators at line rate, hashed to one uplink each (ECMP), open loop: a dropped frame is not sent again, and a reply that lost one is unfinished", ecmp.Program, pkFrames, c.PacketBytes, c.PacketBytes-ecmp.HeadersBytes)
		packetFrom, bindings = "bench", packetBindings(desc)
	}
	sum := IncastSummary{ModelOnly: false, MeasuredOn: "bench", PacketFrom: packetFrom,
		Fabric: fmt.Sprintf("bench: %s; Stardust: replies of %d frames of %d B (%d B of payload each, %d B a reply), credits of %d B at %g speed-up, FCI at %d frames, FCT to within %v; %s",
			desc, frames, frame, payload, frames*int64(payload), cfg.CreditBytes, cfg.SpeedUp, cfg.FCIFrames, poll, packetDesc),
		Stardust: map[string]IncastPoint{}, Packet: map[string]IncastPoint{}, MinJainStardust: 1, MinJainPacket: 1}
	done := 0
	var br *benchRun
	devs := b.devices()
	tables := IncastTables()
	if onBench {
		tables = append(tables, ecmpFlowsTable())
	}
	plan := &o.Plan{Tables: tables,
		Bindings: bindings,
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || done < len(ns)
			return s, nil
		}}
	plan.Steps = append(plan.Steps, b.upStep(cfg, &br))
	if onBench {
		r.benchSteps(plan, b, cfg, ns, &br, incastReplies{frames, period, perBatch, batches, wire, poll, pkFrames, c.PacketBytes}, func(n int, st, pk IncastPoint) {
			mu.Lock()
			defer mu.Unlock()
			sum.add(n, st, pk)
			done++
		})
		return plan, nil
	}
	for _, n := range ns {
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("%d senders", n), Action: "measure", Devices: append(slices.Clone(devs), dev),
			Note: fmt.Sprintf("%d replies of %d frames to %s on the bench; the packet fabric in the model", n, frames, b.FAs[0].Name),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if br == nil {
					return fmt.Errorf("the fabric is not up")
				}
				ideal := wire * float64(n) / (float64(cfg.HostGbps) * 1e9) * 1e3
				st, err := br.incast(ctx, rc, n, frames, period, perBatch, batches, poll, ideal)
				if err != nil {
					return err
				}
				seed := rc.Seed ^ uint64(n)*0x9e3779b97f4a7c15
				fd, err := fabricOf(rc, dev)
				if err != nil {
					return err
				}
				pk, err := packetIncast(ctx, rc, fd, c, po, n, respBytes, limit, seed)
				if err != nil {
					return err
				}
				if err := writeIncastPoint(rc, "stardust", n, len(b.FAs), st); err != nil {
					return err
				}
				if err := writeIncastPoint(rc, "packet", n, len(b.FAs), pk); err != nil {
					return err
				}
				rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%d senders on the bench: Stardust first %.4f last %.4f ms (ideal %.4f), Jain %.4f, %d frames lost; packet fabric (model) first %.4f last %.4f ms, Jain %.4f, %d drops",
					n, st.FirstFCTMS, st.LastFCTMS, ideal, st.Jain, st.Lost, pk.FirstFCTMS, pk.LastFCTMS, pk.Jain, pk.Lost)})
				mu.Lock()
				defer mu.Unlock()
				sum.add(n, st, pk)
				done++
				return nil
			}})
	}
	return plan, nil
}

// incast runs one N on the bench: FAs 1..n each send frames (batches of
// perBatch every period) to FA 0's host port, whose credits go round robin
// to their VOQs, and each reply's FCT is the first poll of FA 0's
// in-order counters that shows all of its frames released.
func (br *benchRun) incast(ctx context.Context, rc *o.RunContext, n int, frames int64, period time.Duration, perBatch, batches int, poll time.Duration, ideal float64) (IncastPoint, error) {
	req := br.FAs[0]
	senders := br.FAs[1 : 1+n]
	target := []sd.VOQTarget{{FA: req.ID, Port: hostPort, VOQ: voq(req.ID)}}
	var srcs []sd.CreditSource
	ids := make([]int, n)
	maxID := 0
	for i, s := range senders {
		if err := s.sd.SetGenFlow(ctx, appData, target); err != nil {
			return IncastPoint{}, fmt.Errorf("%s: %w", s.Name, err)
		}
		srcs = append(srcs, sd.CreditSource{FA: s.ID, VOQ: voq(req.ID)})
		ids[i] = s.ID
		maxID = max(maxID, s.ID)
	}
	if err := req.sd.SetCreditSources(ctx, hostPort, srcs); err != nil {
		return IncastPoint{}, fmt.Errorf("%s: %w", req.Name, err)
	}
	// The infrastructure runs for twice the ideal and the drain allowance
	// (bench_drain); a reply not released by then is unfinished.
	horizon := time.Duration(2*ideal*1e6)*time.Nanosecond + br.rc.Params.Duration("bench_drain")
	if err := br.startInfra(ctx, horizon+br.cfg.ReachPeriod); err != nil {
		return IncastPoint{}, err
	}
	clock := req.sw
	base, err := req.sd.SequenceIn(ctx, maxID+1)
	if err != nil {
		return IncastPoint{}, fmt.Errorf("%s: %w", req.Name, err)
	}
	r0, err := br.read(ctx, 0)
	if err != nil {
		return IncastPoint{}, err
	}
	t0, err := clock.Clock(ctx)
	if err != nil {
		return IncastPoint{}, err
	}
	for _, s := range senders {
		g := sd.Generator{AppID: appData, Port: genPort, EgressPort: s.Host, FrameBytes: br.cfg.FrameBytes, Period: period, PerBatch: perBatch, Batches: batches,
			Cell: sd.Cell{Kind: sd.KindData, SrcFA: uint16(s.ID)}}
		if err := br.startGen(ctx, s, g); err != nil {
			return IncastPoint{}, err
		}
	}
	fcts := make([]incastFCT, n)
	left := n
	t := t0
	for left > 0 && t < t0+horizon {
		if t, err = clock.WaitClock(ctx, t+poll); err != nil {
			return IncastPoint{}, err
		}
		now, err := req.sd.SequenceIn(ctx, maxID+1)
		if err != nil {
			return IncastPoint{}, fmt.Errorf("%s: %w", req.Name, err)
		}
		for i, id := range ids {
			// 32-bit counters: the difference modulo 2^32.
			if !fcts[i].ok && int64(now[id]-base[id]) >= frames {
				fcts[i] = incastFCT{(t - t0).Seconds() * 1e3, true}
				left--
			}
		}
	}
	if err := br.stopAll(ctx, appData, appCredit, appReach, appAge); err != nil {
		return IncastPoint{}, err
	}
	r1, err := br.read(ctx, t)
	if err != nil {
		return IncastPoint{}, err
	}
	var sent int64
	for _, s := range senders {
		st, err := s.sw.PktgenStatus(ctx, appData)
		if err != nil {
			return IncastPoint{}, fmt.Errorf("%s: %w", s.Name, err)
		}
		sent += st.Packets
	}
	pt, err := writeIncastFlows(rc, "stardust", n, len(br.FAs), ideal, fcts, func(int) int64 { return 0 })
	if err != nil {
		return pt, err
	}
	released := r1.HostFrames - r0.HostFrames
	waited := r1.WaitDrops - r0.WaitDrops
	// Lost in the fabric: FE queue drops, and frames neither released nor
	// dropped waiting for credit once every reply is released (while one
	// is open, its frames in flight are not lost).
	pt.Lost = r1.FabricDrops - r0.FabricDrops
	if pt.Unfinished == 0 {
		pt.Lost += max(0, sent-released-waited-pt.Lost)
	}
	// The FEs' histogram counts buffer cells ahead of each cell in buckets
	// of 1<<QHistShift; in frames of this size (a 256 B frame is one
	// bucket).
	perFrame := (br.cfg.FrameBytes + sd.TMCellBytes - 1) / sd.TMCellBytes
	q := sub(r1.Queue, r0.Queue)
	for k, v := range q {
		if v > 0 {
			pt.FEQueueMax = k << sd.QHistShift / perFrame
		}
	}
	if waited > 0 {
		rc.Event(results.Event{Type: "warning", Message: fmt.Sprintf("%d senders: %d frames dropped waiting for credit at the senders' recirculation queues", n, waited)})
	}
	return pt, nil
}

// incastReplies are the replies on each fabric: Stardust's frames (a
// generator's batches of perBatch every period, wire bits a reply) and
// completion poll, and the packet fabric's frames.
type incastReplies struct {
	frames            int64
	period            time.Duration
	perBatch, batches int
	wire              float64
	poll              time.Duration
	pkFrames          int64
	pkBytes           int
}

// benchSteps are the bench's steps when the packet fabric runs on the
// bench too: Stardust's replies for every N, then the switches restarted
// with p4/ecmp and the same replies for every N (a program change per N
// would bring each fabric up again every time). add gets both fabrics'
// points of an N once the packet fabric's is measured.
func (r *Incast) benchSteps(p *o.Plan, b *bench, cfg benchConfig, ns []int, br **benchRun, x incastReplies, add func(n int, st, pk IncastPoint)) {
	devs := b.devices()
	st := map[int]IncastPoint{}
	var stMu sync.Mutex
	for _, n := range ns {
		p.Steps = append(p.Steps, &o.Step{Name: fmt.Sprintf("%d senders (stardust)", n), Action: "measure", Devices: devs,
			Note: fmt.Sprintf("%d replies of %d frames to %s on the bench", n, x.frames, b.FAs[0].Name),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if *br == nil {
					return fmt.Errorf("the fabric is not up")
				}
				ideal := x.wire * float64(n) / (float64(cfg.HostGbps) * 1e9) * 1e3
				pt, err := (*br).incast(ctx, rc, n, x.frames, x.period, x.perBatch, x.batches, x.poll, ideal)
				if err != nil {
					return err
				}
				if err := writeIncastPoint(rc, "stardust", n, len(b.FAs), pt); err != nil {
					return err
				}
				rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%d senders on the bench: Stardust first %.4f last %.4f ms (ideal %.4f), Jain %.4f, %d frames lost",
					n, pt.FirstFCTMS, pt.LastFCTMS, ideal, pt.Jain, pt.Lost)})
				stMu.Lock()
				defer stMu.Unlock()
				st[n] = pt
				return nil
			}})
	}
	var pr *packetRun
	p.Steps = append(p.Steps, &o.Step{Name: "packet fabric up (bench)", Action: "configure", Devices: devs,
		Note: fmt.Sprintf("%s on every switch: ports, ids, routes (ECMP by the flow hash)", ecmp.Program),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			var err error
			pr, err = b.packetUp(ctx, rc, cfg.LinkGbps, cfg.HostGbps, cfg.Replace, false, nil)
			return err
		}})
	for _, n := range ns {
		p.Steps = append(p.Steps, &o.Step{Name: fmt.Sprintf("%d senders (packet)", n), Action: "measure", Devices: devs,
			Note: fmt.Sprintf("%d replies of %d frames of %d B to %s on the packet-switched bench", n, x.pkFrames, x.pkBytes, b.FAs[0].Name),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if pr == nil {
					return fmt.Errorf("the packet fabric is not up")
				}
				ideal := float64(int64(n)*x.pkFrames*int64(x.pkBytes+wireExtra)*8) / (float64(cfg.HostGbps) * 1e9) * 1e3
				pk, err := pr.incast(ctx, rc, n, x.pkFrames, x.pkBytes, ideal)
				if err != nil {
					return err
				}
				if err := writeIncastPoint(rc, "packet", n, len(b.FAs), pk); err != nil {
					return err
				}
				rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%d senders on the packet-switched bench: first %.4f last %.4f ms (ideal %.4f), %d replies unfinished, %d frames dropped",
					n, pk.FirstFCTMS, pk.LastFCTMS, ideal, pk.Unfinished, pk.Lost)})
				stMu.Lock()
				s := st[n]
				stMu.Unlock()
				add(n, s, pk)
				return nil
			}})
	}
}

// incast runs one N on the packet-switched bench: ToRs 1..n each send a
// reply of frames frames (flow first+i) at their host port's line rate
// to ToR 0's host port, all at once, open loop. A reply's FCT is its last
// frame out of the requester's host port (reg_flow_last_ns), when all of
// its frames got there; a reply that lost frames is unfinished, and its
// losses are counted by sender.
func (pr *packetRun) incast(ctx context.Context, rc *o.RunContext, n int, frames int64, frameBytes int, ideal float64) (IncastPoint, error) {
	req := pr.FAs[0]
	ids, err := pr.flowIDs(n)
	if err != nil {
		return IncastPoint{}, err
	}
	gens := make([]packetGen, n)
	for i, s := range pr.FAs[1 : 1+n] {
		gens[i] = packetGen{src: s, flows: []packetFlow{{src: s, dst: req.ID, id: ids[i]}}, bps: float64(pr.hostGbps) * 1e9, frames: frames}
	}
	drain := time.Duration(2*ideal*1e6)*time.Nanosecond + rc.Params.Duration("bench_drain")
	pt, err := pr.run(ctx, fmt.Sprintf("%d senders", n), frameBytes, gens, 0, 0, drain)
	if err != nil {
		return IncastPoint{}, err
	}
	fcts := make([]incastFCT, n)
	lost := make([]int64, n)
	for i := range fcts {
		id := ids[i]
		lost[i] = pt.Sent[id] - pt.Rcvd[id]
		if pt.Sent[id] >= frames && pt.Rcvd[id] == pt.Sent[id] {
			fcts[i] = incastFCT{pt.FCT[id].Seconds() * 1e3, true}
		}
	}
	x, err := writeIncastFlows(rc, "packet", n, len(pr.FAs), ideal, fcts, func(i int) int64 { return lost[i] })
	if err != nil {
		return x, err
	}
	x.Lost = pt.Uplink + pt.Downlink + pt.HostDrops
	if pt.HostDrops > 0 {
		rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%d senders on the packet-switched bench: %d frames dropped at the requester's host port queue, %d at the ToRs' uplinks, %d at the spines' downlinks (§5.4: what the egress ToR cannot hold is dropped)",
			n, pt.HostDrops, pt.Uplink, pt.Downlink)})
	}
	return x, nil
}
