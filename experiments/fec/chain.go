package fec

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"testbed/inventory"
	o "testbed/orchestrator"
)

// The chain (path=chain): Fig. 7's envelope over hops needs every link to
// run from its own clock. On one switch's snake every port runs from the
// switch's reference clock, so after the first link a probe meets every
// later codeword at the offset the first one left it at and the envelope
// stops growing. Along a chain of switches each link is clocked by its
// sending switch (IEEE 802.3's +-100 ppm apart), the codeword phases of
// neighbouring links drift against each other, and each probe meets each
// codeword at another offset.
//
// A probe enters the first switch from its packet generator, leaves by
// the port whose fibre goes to the second switch, enters that one, and so
// on; the last switch drops it. Every switch runs the timestamp program,
// whose snake table forwards from the port the previous fibre ends at to
// the port the next one starts at. Per probe the recipe reads each
// switch's MAC ingress timestamp of the probe (reg_rx_ts at the port it
// came in at: the generator's port on the first) and the MAC transmit
// timestamp of its egress port.
//
// Hop k runs, as on the snake, from the probe leaving switch k (its MAC
// transmit stamp) to it leaving switch k+1: link k's PHYs, FEC and fibre,
// and switch k+1's forwarding, which for a cut-through switch includes
// waiting for the frame's tail when link k's codewords split it (the
// egress must not run out of frame). The last switch sends the probe out
// of its exit port (chain_exit: a port with a loopback module, or to any
// device that keeps it up) and drops it when it comes back; with no exit
// port the last hop ends at the last switch's MAC (its ingress stamp).
// The wire of hop k is from switch k's transmit stamp to switch k+1's
// ingress stamp. The latency over k hops, whose range over probes is
// Fig. 7's envelope, is from the probe leaving the first switch to its
// header at switch k+1's MAC (its ingress stamp): where the frame has
// arrived, as the PHY model's path measures it (phy.Trip.HeaderLatencyNs),
// before switch k+1 waits for its tail. The hops' sum ends where switch
// k+1 sends it on: its range is narrower, as that wait moves the early
// headers of frames split across codewords to the next codeword. Stamps of different
// switches are compared, so the switches' timestamp counters must run at
// one rate (syntonized, as PTP or SyncE gives a lab): the envelope and
// the per-hop ranges do not change with a constant offset between the
// counters, the per-hop medians do. The simulated switches of a lab
// stamp with their dataplane's clock, one time base, while each one's
// PHYs run at its own ppm.

// chainSwitch is one switch of the chain with its ports.
type chainSwitch struct {
	dev string
	in  int // where probes enter: the generator's port on the first switch
	out int // the port towards the next switch, the exit port on the last; -1: none
	// fibre is the inventory link from this switch to the next.
	fibre string
	sn    *snake
}

// chainPlan finds the fibres joining each consecutive pair of switches
// and the ports they end at, and checks the modes fit their transceivers.
func chainPlan(inv *inventory.Inventory, names []string, exit string, modes []PHY) ([]*chainSwitch, error) {
	if len(names) < 2 {
		return nil, o.Inputf("chain: %d switches given; a hop needs two", len(names))
	}
	var out []*chainSwitch
	for i, n := range names {
		d, ok := inv.Device(n)
		if !ok || d.Kind != "switch" {
			return nil, o.Inputf("chain: %q is not a switch of %s", n, inv.Path)
		}
		if slices.Contains(names[:i], n) {
			return nil, o.Inputf("chain: %s listed twice", n)
		}
		out = append(out, &chainSwitch{dev: n, in: pktgenPort, out: -1})
	}
	devPort := func(l *inventory.Link, ep inventory.Endpoint) (int, error) {
		d, _ := inv.Device(ep.Device)
		v := d.Ports[ep.Port]
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 511 || n == pktgenPort {
			return 0, o.Inputf("chain: %s: link %s: port %s of %s is %q, expected a dev port number (0..511, not the packet generator's %d)", l.Pos, l.Name, ep.Port, ep.Device, v, pktgenPort)
		}
		return n, nil
	}
	for i := 0; i+1 < len(out); i++ {
		a, b := out[i], out[i+1]
		var fibre *inventory.Link
		var from, to inventory.Endpoint
	find:
		for _, l := range inv.Links {
			switch {
			case l.A.Device == a.dev && l.B.Device == b.dev:
				fibre, from, to = l, l.A, l.B
			case l.B.Device == a.dev && l.A.Device == b.dev:
				fibre, from, to = l, l.B, l.A
			default:
				continue
			}
			break find
		}
		if fibre == nil {
			return nil, o.Inputf("chain: no link of %s joins %s to %s, the next switch in the chain", inv.Path, a.dev, b.dev)
		}
		t, ok := inventory.LookupTransceiver(fibre.Transceiver)
		if !ok {
			return nil, o.Inputf("chain: %s: link %s: unknown transceiver %q", fibre.Pos, fibre.Name, fibre.Transceiver)
		}
		for _, m := range modes {
			if float64(m.Gbps)*1e9 != t.RateBps {
				return nil, o.Inputf("chain_links: %d:%s does not fit link %s (%s, %s to %s), whose %s runs at %g Gb/s", m.Gbps, m.FEC, fibre.Name, fibre.Pos, a.dev, b.dev, t.Name, t.RateBps/1e9)
			}
		}
		var err error
		if a.out, err = devPort(fibre, from); err != nil {
			return nil, err
		}
		if b.in, err = devPort(fibre, to); err != nil {
			return nil, err
		}
		if a.out == a.in {
			return nil, o.Inputf("chain: %s: link %s leaves %s at port %d, where the previous one arrives: the chain needs two ports on %s", fibre.Pos, fibre.Name, a.dev, a.out, a.dev)
		}
		a.fibre = fibre.Name
	}
	if last := out[len(out)-1]; exit != "" {
		d, _ := inv.Device(last.dev)
		v, ok := d.Ports[exit]
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n > 511 || n == pktgenPort || n == last.in {
			return nil, o.Inputf("chain_exit: %s: %s's port %q is %q: expected a dev port number of %s other than %d, where probes arrive (ports: %v)", d.Pos, last.dev, exit, v, last.dev, last.in, d.Ports)
		}
		last.out = n
	}
	return out, nil
}

// planChain is the recipe's plan for path=chain.
func planChain(pc *o.PlanContext, sizes []int, switchModes []string, probes int, spread float64) (*o.Plan, error) {
	p := pc.Params
	links, err := parseModesOf("chain_links", p.Strings("chain_links"))
	if err != nil {
		return nil, err
	}
	chain, err := chainPlan(pc.Lab, p.Strings("chain"), p.String("chain_exit"), links)
	if err != nil {
		return nil, err
	}
	spacing := time.Duration(p.Int("chain_spacing_ns"))
	slices.SortStableFunc(links, func(a, b PHY) int { return boolInt(a.FEC != "none") - boolInt(b.FEC != "none") })
	small := slices.Min(sizes)
	var cases []caseKey
	hasOff := slices.ContainsFunc(links, func(l PHY) bool { return l.FEC == "none" })
	for _, l := range links {
		for _, m := range switchModes {
			k := caseKey{link: fmt.Sprintf("%dG %s", l.Gbps, l.FEC), gbps: l.Gbps, fec: l.FEC, frameBytes: small, mode: m, path: "chain"}
			if hasOff {
				k.offCounterp = fmt.Sprintf("%dG none", l.Gbps)
			}
			if !slices.Contains(cases, k) {
				cases = append(cases, k)
			}
		}
	}
	st := &latencyState{samples: map[caseKey]*sample{}, summary: LatencySummary{Cases: map[string]Case{}}}
	tables := LatencyTables()
	latencyFigures(tables, small, true)
	plan := &o.Plan{Tables: tables,
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			s := st.summary
			s.Partial = partial
			return s, nil
		}}
	var devs []string
	for i, c := range chain {
		devs = append(devs, c.dev)
		detail := fmt.Sprintf("hop %d: probes in at port %d, out at port %d over %s", i+1, c.in, c.out, c.fibre)
		switch {
		case i == 0:
			detail = fmt.Sprintf("hop 1: probes from the packet generator (port %d), out at port %d over %s", pktgenPort, c.out, c.fibre)
		case i == len(chain)-1 && c.out < 0:
			detail = fmt.Sprintf("the chain's end: probes in at port %d, dropped", c.in)
		case i == len(chain)-1:
			detail = fmt.Sprintf("the chain's end: probes in at port %d, out at port %d (its loopback module), dropped when back", c.in, c.out)
		}
		plan.Bindings = append(plan.Bindings, o.Binding{Role: fmt.Sprintf("chain[%d]", i), Resource: c.dev, Detail: detail})
	}
	plan.Steps = append(plan.Steps, &o.Step{Name: "chain: timestamp program on " + strings.Join(devs, ", "), Action: "prepare-switch", Devices: devs,
		Settings: []o.Setting{{Device: devs[0], Name: "program", Value: "timestamp"}},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			for _, c := range chain {
				var outs []int
				if c.out >= 0 {
					outs = []int{c.out}
				}
				sn, err := openSnakeFrom(ctx, rc, c.dev, c.in, outs, p.Bool("replace_program"))
				if err != nil {
					return err
				}
				c.sn = sn
			}
			return nil
		}})
	for _, k := range cases {
		plan.Steps = append(plan.Steps, &o.Step{Name: "chain probes: " + k.String(), Action: "probe", Devices: devs,
			Settings: []o.Setting{{Device: devs[0], Name: "chain ports", Value: k.link}, {Device: devs[0], Name: "forwarding", Value: k.mode},
				{Device: devs[0], Name: "probes", Value: fmt.Sprintf("%d of %d B, one every %v + up to %.0f ns", probes, k.frameBytes, spacing, spread)}},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if chain[len(chain)-1].sn == nil {
					return o.Skip("the timestamp program was not started on every switch of the chain")
				}
				return runChainCase(ctx, rc, chain, st, k, probes, spacing, spread, p.Duration("port_up_timeout"))
			}})
	}
	return plan, nil
}

// runChainCase sets every chain port to the case's mode, sends the probes
// from the first switch and reads each switch's stamps.
func runChainCase(ctx context.Context, rc *o.RunContext, chain []*chainSwitch, st *latencyState, k caseKey, probes int, spacing time.Duration, spread float64, upTimeout time.Duration) error {
	for _, c := range chain {
		for _, port := range []int{c.in, c.out} {
			if port < 0 || port == pktgenPort {
				continue
			}
			if err := c.sn.setMode(ctx, port, k.gbps, k.fec); err != nil {
				return err
			}
		}
		if c.out >= 0 {
			if err := c.sn.setCutThrough(ctx, c.out, k.mode == "cut-through"); err != nil {
				return err
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, upTimeout)
	defer cancel()
	for _, c := range chain {
		for _, port := range []int{c.in, c.out} {
			if port < 0 || port == pktgenPort {
				continue
			}
			if err := c.sn.sw.WaitPortUp(wctx, port); err != nil {
				return fmt.Errorf("%s: %w", c.dev, err)
			}
		}
		if err := c.sn.drain(ctx); err != nil {
			return err
		}
	}
	frames, err := rc.Table("fec_latency_frames")
	if err != nil {
		return err
	}
	first := chain[0].sn
	hops := len(chain) - 1
	smp := &sample{hop: make([][]float64, hops), wire: make([][]float64, hops), cum: make([][]float64, hops)}
	start, err := first.sw.Clock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", first.dev, err)
	}
	rx := make([]uint32, len(chain))
	tx := make([]uint32, len(chain))
	for n := 0; n < probes; n++ {
		_, frac := math.Modf(float64(n+1) * (math.Sqrt(5) - 1) / 2)
		at := start + time.Duration(n+1)*spacing + time.Duration(math.Round(frac*spread))
		if err := first.fire(ctx, at, k.frameBytes, k.gbps); err != nil {
			return err
		}
		for i, c := range chain {
			if rx[i], err = c.sn.rxStamp(ctx, c.in); err != nil {
				return err
			}
			if c.out >= 0 {
				if tx[i], err = c.sn.txStamp(ctx, c.out); err != nil {
					return err
				}
			}
		}
		for h := 0; h < hops; h++ {
			// Signed differences of the 32-bit clocks: across their wrap,
			// and across switches whose counters differ by an offset.
			end := rx[h+1] // the chain's end without an exit port
			if chain[h+1].out >= 0 {
				end = tx[h+1]
			}
			hop := float64(int32(end - tx[h]))
			wire := float64(int32(rx[h+1] - tx[h]))
			if wire <= 0 {
				return fmt.Errorf("%s -> %s: probe %d arrived %.0f ns before it left (ingress stamp %d, transmit stamp %d): are the switches' timestamp counters on one time base?", chain[h].dev, chain[h+1].dev, n, -wire, rx[h+1], tx[h])
			}
			cum := float64(int32(rx[h+1] - tx[0]))
			smp.hop[h] = append(smp.hop[h], hop)
			smp.wire[h] = append(smp.wire[h], wire)
			smp.cum[h] = append(smp.cum[h], cum)
			if err := frames.Write(k.link, k.gbps, k.fec, k.frameBytes, k.mode, k.path, n, h+1, hop, wire, cum); err != nil {
				return err
			}
		}
	}
	return st.keep(rc, k, smp)
}
