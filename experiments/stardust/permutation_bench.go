package stardust

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"testbed/dut/tofino"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
	sm "testbed/simlab/stardustmodel"
)

// planBench is stardust-permutation on a Stardust bench: every FA's host
// port sends one flow at its line rate to the host port of another FA and
// receives one (a random derangement of the FAs, §6.3's permutation), in
// sd_packet_bytes frames (a frame is a cell on Tofino). The fabric comes up
// as for stardust-fabric; each destination's host port counters give its
// one flow's throughput. With bench_link_gbps 25 (the default) an FA's four
// links carry exactly its 100 Gb/s host port: no fabric speed-up, every
// link loaded, as §6.3's fat-tree. The packet fabric's row is the model's
// PacketFabric at the bench's shape (there is no packet-switched program on
// the bench's switches), and the summary says so.
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
	c, err := packetAtBenchShape(b, cfg, frame, sm.Default().PropDelay)
	if err != nil {
		return nil, err
	}
	po := permutationPacketOpts(p)
	packetBytes := int(p.Int("packet_bytes"))
	var mu sync.Mutex
	sum := PermutationSummary{ModelOnly: false, MeasuredOn: "bench", PacketFrom: "model",
		Fabric: fmt.Sprintf("bench: %s; Stardust: %d B frames as cells, credits of %d B at %g speed-up, FCI at %d frames; packet fabric (model, the bench's shape): ECMP per flow, %d B packets, %d B drop-tail buffers, first window %d, RTO %v",
			desc, frame, cfg.CreditBytes, cfg.SpeedUp, cfg.FCIFrames, packetBytes, po.BufferBytes, po.InitWindow, po.RTO),
		Fabrics: map[string]PermutationPoint{}}
	var br *benchRun
	var dst []int
	devs := b.devices()
	plan := &o.Plan{Recipe: r.Name(), Version: r.Version(), Tables: PermutationTables(),
		Bindings: comparisonBindings(desc, "the comparison's ECMP fabric, in the model at the bench's shape"),
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
			at := map[*benchNode]int{}
			for i, n := range br.FAs {
				at[n] = i
			}
			targets := func(n *benchNode) []tofino.VOQTarget {
				d := br.FAs[dst[at[n]]]
				return []tofino.VOQTarget{{FA: d.ID, Port: hostPort, VOQ: voq(d.ID)}}
			}
			line := float64(br.cfg.HostGbps) * 1e9
			pt, err := br.runTraffic(ctx, frame, line, targets, warm, measure, drain)
			if err != nil {
				return err
			}
			if len(pt.HostFramesBy) != len(br.FAs) || pt.Window <= 0 {
				return fmt.Errorf("the bench's reads gave %d host ports' counters over %v for %d FAs", len(pt.HostFramesBy), pt.Window, len(br.FAs))
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
				return err
			}
			rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("permutation on the bench: %d frames sent, %d released, %d dropped waiting for credit, %d lost in FE queues; payload after the %d B Ethernet and cell headers is %.3f of each frame on the wire",
				pt.Generated, pt.Delivered, pt.WaitDrops, pt.FabricDrops, sd.EthernetBytes+sd.CellHeaderBytes, float64(frame-sd.EthernetBytes-sd.CellHeaderBytes)/float64(frame+wireExtra))})
			mu.Lock()
			defer mu.Unlock()
			sum.Fabrics["stardust"] = w
			sum.CellsLost = w.Lost
			return nil
		}})
	slot := c.SlotSeconds()
	mwarm := int64(p.Duration("warmup").Seconds() / slot)
	mmeas := max(1, int64(p.Duration("measure").Seconds()/slot))
	plan.Steps = append(plan.Steps, &o.Step{Name: "packet fabric (model)", Action: "simulate",
		Note: fmt.Sprintf("the model's ECMP fabric at the bench's shape, the same permutation, %d + %d cell times of %.1f ns", mwarm, mmeas, slot*1e9),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			if dst == nil {
				dst = derangement(rand.New(rand.NewPCG(rc.Seed, 0x9e)), len(b.FAs), 1)
			}
			fs, lost, _, err := simulatePermutation(ctx, rc.Seed, "packet", c, po, packetBytes, dst, mwarm, mmeas)
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
