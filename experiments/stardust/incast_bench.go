package stardust

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"testbed/dut/tofino"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
	sm "testbed/simlab/stardustmodel"
)

// planBench is stardust-incast on a Stardust bench: the requester is the
// first FA's host port; for each N the next N FAs' packet generators each
// send a reply of response_kb in cell_bytes frames (a frame is a cell on
// Tofino) at their host port's line rate, all at once on the switches'
// clock, and the requester's host port hands out credits round robin over
// their VOQs (its credit_to slots, p4/stardust/README.md). A reply is
// complete when the requester has released its last frame in order: the
// recipe polls the requester's in-order counters (reg_seq_in, through
// tofino.SequenceIn) every bench_poll of the switches' clock, so an
// FCT is known to within one poll. The packet fabric's rows are the
// model's PacketFabric at the bench's shape (no packet-switched program
// runs on the bench's switches).
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
	po := sm.PacketOpts{BufferBytes: int(p.Float("switch_buffer_kb") * 1024), InitWindow: int(p.Int("init_window")), RTO: p.Duration("rto")}
	limit := int64(p.Duration("max_time").Seconds() / c.SlotSeconds())

	var mu sync.Mutex
	sum := IncastSummary{ModelOnly: false, MeasuredOn: "bench", PacketFrom: "model",
		Fabric: fmt.Sprintf("bench: %s; Stardust: replies of %d frames of %d B (%d B of payload each, %d B a reply), credits of %d B at %g speed-up, FCI at %d frames, FCT to within %v; packet fabric (model, the bench's shape): ECMP per flow, %d B packets, %d B drop-tail buffers, first window %d, RTO %v",
			desc, frames, frame, payload, frames*int64(payload), cfg.CreditBytes, cfg.SpeedUp, cfg.FCIFrames, poll, c.PacketBytes, po.BufferBytes, po.InitWindow, po.RTO),
		Stardust: map[string]IncastPoint{}, Packet: map[string]IncastPoint{}, MinJainStardust: 1, MinJainPacket: 1}
	done := 0
	var br *benchRun
	devs := b.devices()
	plan := &o.Plan{Recipe: r.Name(), Version: r.Version(), Tables: IncastTables(),
		Bindings: comparisonBindings(desc, "the comparison's ECMP fabric, in the model at the bench's shape"),
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || done < len(ns)
			return s, nil
		}}
	plan.Steps = append(plan.Steps, b.upStep(cfg, &br))
	for _, n := range ns {
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("%d senders", n), Action: "measure", Devices: devs,
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
				pk, err := packetIncast(ctx, rc, c, po, n, respBytes, limit, seed)
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
	target := []tofino.VOQTarget{{FA: req.ID, Port: hostPort, VOQ: voq(req.ID)}}
	var srcs []tofino.CreditSource
	ids := make([]int, n)
	maxID := 0
	for i, s := range senders {
		if err := s.sw.SetGenFlow(ctx, appData, target); err != nil {
			return IncastPoint{}, fmt.Errorf("%s: %w", s.Name, err)
		}
		srcs = append(srcs, tofino.CreditSource{FA: s.ID, VOQ: voq(req.ID)})
		ids[i] = s.ID
		maxID = max(maxID, s.ID)
	}
	if err := req.sw.SetCreditSources(ctx, hostPort, srcs); err != nil {
		return IncastPoint{}, fmt.Errorf("%s: %w", req.Name, err)
	}
	// The infrastructure runs for twice the ideal and the drain allowance
	// (bench_drain); a reply not released by then is unfinished.
	horizon := time.Duration(2*ideal*1e6)*time.Nanosecond + br.rc.Params.Duration("bench_drain")
	if err := br.startInfra(ctx, horizon+br.cfg.ReachPeriod); err != nil {
		return IncastPoint{}, err
	}
	clock := req.sw
	base, err := req.sw.SequenceIn(ctx, maxID+1)
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
		g := tofino.Generator{AppID: appData, Port: genPort, EgressPort: s.Host, FrameBytes: br.cfg.FrameBytes, Period: period, PerBatch: perBatch, Batches: batches,
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
		now, err := req.sw.SequenceIn(ctx, maxID+1)
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
