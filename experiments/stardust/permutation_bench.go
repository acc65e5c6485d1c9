package stardust

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	o "testbed/orchestrator"
	"testbed/p4/ecmp"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// planBench is stardust-permutation on a Stardust bench: every FA's host
// port sends one flow at its line rate to the host port of another FA and
// receives one (a random derangement of the FAs, §6.3's permutation), in
// sd_packet_bytes frames (a frame is a cell on Tofino). The fabric comes up
// as for stardust-fabric; each destination's host port counters give its
// one flow's throughput. With bench_link_gbps 25 (the default) an FA's four
// links carry exactly its 100 Gb/s host port: no fabric speed-up, every
// link loaded, as §6.3's fat-tree. The packet fabric's row is the model's
// the same switches running p4/ecmp after Stardust's run (packet_bench.go):
// every ToR's generator sends its host port's line rate to the same
// destination as bench_ecmp_flows flows, each hashed onto one uplink, and
// the destinations' flow registers give each pair's throughput
// (bench_packet_fabric=model puts the model's PacketFabric at the bench's
// shape there instead). The summary says which (packet_fabric_from).
func (r *Permutation) planBench(pc *o.PlanContext, b *bench) (*o.Plan, error) {
	p := pc.Params
	frame := int(p.Int("sd_packet_bytes"))
	cfg, err := benchConfigFrom(p, frame)
	if err != nil {
		return nil, o.Inputf("sd_packet_bytes: %v", err)
	}
	if len(b.FAs) < 2 {
		return nil, o.Inputf("%s: a permutation needs two FAs or more; the bench has %d", PermutationName, len(b.FAs))
	}
	cfg.FCIFrames = int(p.Int("fci_threshold"))
	warm, measure, drain := p.Duration("bench_warmup"), p.Duration("bench_measure"), p.Duration("bench_drain")
	desc := b.describe(cfg.LinkGbps, cfg.HostGbps)
	c, err := packetAtBenchShape(b, cfg, frame, sd.DefaultFabric().PropDelay)
	if err != nil {
		return nil, err
	}
	po := permutationPacketOpts(p)
	packetBytes := int(p.Int("packet_bytes"))
	var mu sync.Mutex
	packetDesc := fmt.Sprintf("packet fabric (model, the bench's shape): ECMP per flow, %d B packets, %d B drop-tail buffers, first window %d, RTO %v", packetBytes, po.BufferBytes, po.InitWindow, po.RTO)
	dev, err := comparisonDevice(pc)
	if err != nil {
		return nil, err
	}
	packetFrom, packetBinding := "model", comparisonBindings(desc, "the comparison's ECMP fabric, in the model at the bench's shape", dev)
	if p.String("bench_packet_fabric") == "bench" {
		k := int(p.Int("bench_ecmp_flows"))
		packetDesc = fmt.Sprintf("packet fabric (the bench's switches running %s): %d flow(s) per host port, each hashed to one uplink (ECMP), %d B frames from the generators at line rate, open loop, the traffic manager's drop-tail queues", ecmp.Program, k, packetBytes)
		packetFrom, packetBinding = "bench", packetBindings(desc)
	}
	sum := PermutationSummary{ModelOnly: false, MeasuredOn: "bench", PacketFrom: packetFrom,
		Fabric: fmt.Sprintf("bench: %s; Stardust: %d B frames as cells, credits of %d B at %g speed-up, FCI at %d frames; %s",
			desc, frame, cfg.CreditBytes, cfg.SpeedUp, cfg.FCIFrames, packetDesc),
		Fabrics: map[string]PermutationPoint{}}
	var br *benchRun
	var dst []int
	devs := b.devices()
	tables := PermutationTables()
	if packetFrom == "bench" {
		if n := len(b.FAs) * int(p.Int("bench_ecmp_flows")); n > ecmp.MaxFlows {
			return nil, o.Inputf("bench_ecmp_flows %d: %d flows, more than p4/ecmp's %d flow registers", p.Int("bench_ecmp_flows"), n, ecmp.MaxFlows)
		}
		tables = append(tables, ecmpFlowsTable())
	}
	plan := &o.Plan{Tables: tables,
		Bindings: packetBinding,
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || len(s.Fabrics) < 2
			return s, nil
		}}
	plan.Steps = append(plan.Steps, b.upStep(cfg, &br))
	plan.Steps = append(plan.Steps, &o.Step{Name: "stardust", Action: "measure", Devices: devs,
		Note: fmt.Sprintf("every FA at line rate to another, %v + %v measured + a drain of up to %v, on the switches' clock", warm, measure, drain),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			if br == nil {
				return fmt.Errorf("the fabric is not up")
			}
			dst = derangement(rand.New(rand.NewPCG(rc.Seed, 0x9e)), len(b.FAs), 1)
			w, err := permutationOnBench(ctx, rc, br, dst, frame, warm, measure, drain)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			sum.Fabrics["stardust"] = w
			sum.CellsLost = w.Lost
			return nil
		}})
	if p.String("bench_packet_fabric") == "bench" {
		plan.Steps = append(plan.Steps, r.packetBenchStep(b, cfg, p, packetBytes, &dst, func(w PermutationPoint) {
			mu.Lock()
			defer mu.Unlock()
			sum.Fabrics["packet"] = w
		}))
		return plan, nil
	}
	slot := c.SlotSeconds()
	mwarm := int64(p.Duration("warmup").Seconds() / slot)
	mmeas := max(1, int64(p.Duration("measure").Seconds()/slot))
	plan.Steps = append(plan.Steps, &o.Step{Name: "packet fabric (model)", Action: "simulate", Devices: []string{dev},
		Note: fmt.Sprintf("the model's ECMP fabric at the bench's shape, the same permutation, %d + %d cell times of %.1f ns", mwarm, mmeas, slot*1e9),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			if dst == nil {
				dst = derangement(rand.New(rand.NewPCG(rc.Seed, 0x9e)), len(b.FAs), 1)
			}
			fd, err := fabricOf(rc, dev)
			if err != nil {
				return err
			}
			fs, lost, _, err := simulatePermutation(ctx, fd, rc.Seed, "packet", c, po, packetBytes, dst, mwarm, mmeas)
			if err != nil {
				return err
			}
			w, err := writePermutation(rc, "packet", fs, c.PortBps/1e9, lost, nil)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			sum.Fabrics["packet"] = w
			return nil
		}})
	return plan, nil
}

// permutationOnBench runs the permutation dst (FA i sends to FA dst[i])
// on the Stardust bench at line rate and writes each flow's throughput.
func permutationOnBench(ctx context.Context, rc *o.RunContext, br *benchRun, dst []int, frame int, warm, measure, drain time.Duration) (PermutationPoint, error) {
	at := map[*benchNode]int{}
	for i, n := range br.FAs {
		at[n] = i
	}
	targets := func(n *benchNode) []sd.VOQTarget {
		d := br.FAs[dst[at[n]]]
		return []sd.VOQTarget{{FA: d.ID, Port: hostPort, VOQ: voq(d.ID)}}
	}
	line := float64(br.cfg.HostGbps) * 1e9
	pt, err := br.runTraffic(ctx, frame, line, targets, warm, measure, drain)
	if err != nil {
		return PermutationPoint{}, err
	}
	if len(pt.HostFramesBy) != len(br.FAs) || pt.Window <= 0 {
		return PermutationPoint{}, fmt.Errorf("the bench's reads gave %d host ports' counters over %v for %d FAs", len(pt.HostFramesBy), pt.Window, len(br.FAs))
	}
	// Each FA receives exactly one flow: its host port's frames
	// in the window are that flow's, on the wire.
	fs := make([]permFlow, len(dst))
	for i, d := range dst {
		fs[i] = permFlow{i, d, float64(pt.HostFramesBy[d]*int64(frame+wireExtra)*8) / pt.Window.Seconds() / 1e9}
	}
	lost := pt.FabricDrops + max(0, pt.Generated-pt.Delivered-pt.WaitDrops-pt.FabricDrops)
	// No FCI count: the programs count FCI cells in reg_fci only
	// until each cancels a credit (as stardust-fabric's bench mode).
	w, err := writePermutation(rc, "stardust", fs, float64(br.cfg.HostGbps), lost, nil)
	if err != nil {
		return PermutationPoint{}, err
	}
	rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("permutation on the bench: %d frames sent, %d released, %d dropped waiting for credit, %d lost in FE queues; payload after the %d B Ethernet and cell headers is %.3f of each frame on the wire",
		pt.Generated, pt.Delivered, pt.WaitDrops, pt.FabricDrops, sd.EthernetBytes+sd.CellHeaderBytes, float64(frame-sd.EthernetBytes-sd.CellHeaderBytes)/float64(frame+wireExtra))})
	return w, nil
}

// packetBenchStep is the permutation on the packet-switched bench: the
// switches restarted with p4/ecmp, every ToR's generator sending its host
// port's line rate to the ToR *dst gives it (the Stardust step's
// derangement, or a fresh one from the same seed), as bench_ecmp_flows
// flows of equal share; a pair's throughput is what its flows delivered
// out of the destination's host port over bench_measure.
func (r *Permutation) packetBenchStep(b *bench, cfg benchConfig, p *o.Params, packetBytes int, dstp *[]int, done func(PermutationPoint)) *o.Step {
	warm, measure, drain := p.Duration("bench_warmup"), p.Duration("bench_measure"), p.Duration("bench_drain")
	k := int(p.Int("bench_ecmp_flows"))
	return &o.Step{Name: "packet fabric (bench)", Action: "measure", Devices: b.devices(),
		Note: fmt.Sprintf("%s on every switch; every ToR at line rate to another as %d flow(s), %v + %v measured + a drain of up to %v, on the switches' clock", ecmp.Program, k, warm, measure, drain),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			if *dstp == nil {
				*dstp = derangement(rand.New(rand.NewPCG(rc.Seed, 0x9e)), len(b.FAs), 1)
			}
			dst := *dstp
			pr, err := b.packetUp(ctx, rc, cfg.LinkGbps, cfg.HostGbps, cfg.Replace, false, nil)
			if err != nil {
				return err
			}
			line := float64(cfg.HostGbps) * 1e9
			ids, err := pr.flowIDs(len(b.FAs) * k)
			if err != nil {
				return err
			}
			gens := make([]packetGen, len(b.FAs))
			for i, n := range b.FAs {
				gens[i] = packetGen{src: n, bps: line}
				for j := 0; j < k; j++ {
					gens[i].flows = append(gens[i].flows, packetFlow{src: n, dst: b.FAs[dst[i]].ID, id: ids[i*k+j]})
				}
			}
			pt, err := pr.run(ctx, "permutation", packetBytes, gens, warm, measure, drain)
			if err != nil {
				return err
			}
			if pt.Window <= 0 {
				return fmt.Errorf("the packet bench's window is %v", pt.Window)
			}
			fs := make([]permFlow, len(dst))
			for i, d := range dst {
				var frames int64
				for _, f := range gens[i].flows {
					frames += pt.WindowRcvd[f.id]
				}
				fs[i] = permFlow{i, d, float64(frames*int64(packetBytes+wireExtra)*8) / pt.Window.Seconds() / 1e9}
			}
			lost := pt.Uplink + pt.Downlink + pt.HostDrops
			w, err := writePermutation(rc, "packet", fs, float64(cfg.HostGbps), lost, nil)
			if err != nil {
				return err
			}
			rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("permutation on the packet-switched bench: %d frames generated; dropped at the ToRs' uplink queues %d, at the spines' downlink queues %d, at the host ports %d",
				pt.Generated, pt.Uplink, pt.Downlink, pt.HostDrops)})
			done(w)
			return nil
		}}
}
