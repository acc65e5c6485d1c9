package stardust

import (
	"context"
	"fmt"
	"time"

	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
)

// Recipes that compare Stardust with a packet-switched fabric
// (stardust-incast, stardust-permutation, stardust-pushpull) run both on
// a Stardust bench, the packet fabric as p4/ecmp on the same switches
// (packet_bench.go); with bench_packet_fabric=model the packet fabric's
// half is the model's at the bench's shape instead, and the summary says
// so (packet_fabric_from / push_fabric_from: model). This file is that
// model half.

// packetAtBenchShape is the model's fabric at b's shape: one host port of
// cfg's rate per FA, one link of cfg's rate to each FE, packetBytes
// packets, links of prop.
func packetAtBenchShape(b *bench, cfg benchConfig, packetBytes int, prop time.Duration) (sd.Fabric, error) {
	c := sd.DefaultFabric()
	c.FAs, c.FEs, c.LinksPerFA, c.PortsPerFA, c.Groups, c.Stages = len(b.FAs), len(b.FEs), len(b.FEs), 1, 1, 1
	c.PortBps, c.LinkBps = float64(cfg.HostGbps)*1e9, float64(cfg.LinkGbps)*1e9
	c.CellBytes, c.CreditBytes, c.SpeedUp, c.PacketBytes = cfg.FrameBytes, cfg.CreditBytes, cfg.SpeedUp, packetBytes
	c.PropDelay = prop
	c.Load = 0
	if err := c.Validate(); err != nil {
		return c, o.Inputf("the packet fabric at the bench's shape: %v", err)
	}
	return c, nil
}

// comparisonBindings name the bench, its programs and the fabric device
// dev that runs the packet fabric (packet says which).
func comparisonBindings(desc, packet, dev string) []o.Binding {
	return []o.Binding{{Role: "fabric", Resource: "switches with stardust_role", Detail: desc},
		{Role: "programs", Resource: "switches", Detail: fmt.Sprintf("%s on the FAs, %s on the FEs", sd.ProgramFA, sd.ProgramFE)},
		{Role: "packet fabric", Resource: dev, Detail: packet + " (bench_packet_fabric=model: not the bench's switches)"}}
}

// comparisonDevice is the fabric device that runs a bench recipe's
// comparison when bench_packet_fabric is model ("" when it is bench).
func comparisonDevice(pc *o.PlanContext) (string, error) {
	if pc.Params.String("bench_packet_fabric") == "bench" {
		return "", nil
	}
	dev, err := bindFabric(pc.Lab)
	if err != nil {
		return "", o.Inputf("bench_packet_fabric=model runs the comparison on a fabric device: %v", err)
	}
	return dev, nil
}

// upStep is a bench recipe's first step: the fabric brought up with cfg,
// *br set when it is.
func (b *bench) upStep(cfg benchConfig, br **benchRun) *o.Step {
	return &o.Step{Name: "bring the fabric up", Action: "configure", Devices: b.devices(),
		Note: "programs, ports, ids, spraying, credits, reachability, FCI threshold: each change journalled",
		Run: func(ctx context.Context, rc *o.RunContext) error {
			r, err := b.up(ctx, rc, cfg)
			*br = r
			return err
		}}
}
