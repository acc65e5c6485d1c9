package ecmp

import (
	"context"
	"fmt"
	"testbed/dut/p4switch"
	"time"
)

// What the ecmp program (p4/ecmp, a plain packet-switched leaf-spine
// fabric) offers its control plane, in the fabric's terms: ToR ids,
// routes, ECMP groups, generator flows and their counters. Every name and
// key below comes from p4/ecmp's contract.

// pktgenApps is the number of Tofino 1 packet-generator applications
// (pktgen_timer_header_t's app_id is 3 bits).
const pktgenApps = 8

// maxDevPort bounds a dev port (PortId_t is 9 bits on Tofino 1).
const maxDevPort = 511

// ECMPFlow is a generator flow: destination ToR Dst, flow number Flow (< MaxFlows) and
// traffic class TC (0..Classes-1: the DSCP class selector to_flow writes, and the egress
// queue the flow's frames take at every switch; 0 is the default class).
type ECMPFlow struct{ Dst, Flow, TC int }

func (f ECMPFlow) check() error {
	switch {
	case f.Dst < 0 || f.Dst >= MaxToRs:
		return fmt.Errorf("flow %d: destination ToR %d outside 0..%d", f.Flow, f.Dst, MaxToRs-1)
	case f.Flow < 0 || f.Flow >= MaxFlows:
		return fmt.Errorf("flow to ToR %d: flow number %d outside 0..%d", f.Dst, f.Flow, MaxFlows-1)
	case f.TC < 0 || f.TC >= Classes:
		return fmt.Errorf("flow %d to ToR %d: traffic class %d outside 0..%d", f.Flow, f.Dst, f.TC, Classes-1)
	}
	return nil
}

// SetToRID writes whoami's set_id.
func (s *Switch) SetToRID(ctx context.Context, id int) error {
	if id < 0 || id >= MaxToRs {
		return fmt.Errorf("ToR id %d: expected 0..%d", id, MaxToRs-1)
	}
	// whoami is keyless: its one entry is replaced (stardust.go).
	return p4switch.ReplaceKeyless(ctx, s, TableWhoami, p4switch.Entry{Action: ActionSetID, Data: map[string]int64{ParamID: int64(id)}})
}

// SetFlows spreads generator application app's frames over flows, round robin over the Slots slots (flows[s mod len]); replaces the app's slots; none drops them.
//
// The program draws one of the slots per frame (Random<bit<6>>), so with
// 3 flows the first gets 22 of the 64 slots and the others 21. Only the
// application's entries are read (table.get with its app_id) and only the
// slots that differ are changed in place (table.mod), as SetSpray does;
// no flows deletes them (gen_flow's default drops).
func (s *Switch) SetFlows(ctx context.Context, app int, flows []ECMPFlow) error {
	if app < 0 || app >= pktgenApps {
		return fmt.Errorf("generator flows: application %d outside 0..%d", app, pktgenApps-1)
	}
	if len(flows) > Slots {
		return fmt.Errorf("generator flows of application %d: %d flows for %d slots", app, len(flows), Slots)
	}
	for _, f := range flows {
		if err := f.check(); err != nil {
			return fmt.Errorf("generator flows of application %d: %w", app, err)
		}
	}
	have, err := s.EntriesWhere(ctx, TableGenFlow, map[string]int64{KeyAppID: int64(app)})
	if err != nil {
		return err
	}
	if len(flows) == 0 {
		for _, e := range have {
			if err := s.DeleteEntry(ctx, TableGenFlow, e.Key); err != nil {
				return err
			}
		}
		return nil
	}
	want := make([]p4switch.Entry, Slots)
	for slot := range want {
		f := flows[slot%len(flows)]
		want[slot] = p4switch.Entry{Key: map[string]int64{KeyAppID: int64(app), KeySlot: int64(slot)}, Action: ActionToFlow,
			Data: map[string]int64{ParamDst: int64(f.Dst), ParamFlow: int64(f.Flow), ParamTC: int64(f.TC)}}
	}
	return s.writeSlots(ctx, TableGenFlow, KeyAppID, int64(app), have, want)
}

// writeSlots makes the slots of one group (key field group at value g)
// of a slot table hold want (want[k] for slot k), given have, what the
// table holds: it adds the slots without an entry and modifies in place
// those whose action or data differ.
func (s *Switch) writeSlots(ctx context.Context, table, group string, g int64, have, want []p4switch.Entry) error {
	cur := map[int64]p4switch.Entry{}
	for _, e := range have {
		if e.Key[group] == g {
			cur[e.Key[KeySlot]] = e
		}
	}
	for slot, e := range want {
		old, ok := cur[int64(slot)]
		switch {
		case !ok:
			if err := s.AddEntry(ctx, table, e); err != nil {
				return err
			}
		case !p4switch.SameAction(old, e):
			if err := s.ModifyEntry(ctx, table, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRouteDst(dst int) error {
	if dst < 0 || dst >= MaxToRs {
		return fmt.Errorf("route: destination ToR %d outside 0..%d", dst, MaxToRs-1)
	}
	return nil
}

// RouteToHost delivers frames for ToR dst out of host port port.
//
// The egress counts a generator flow's frames that leave by a host port
// (reg_flow_rcvd): on a spine, route towards a ToR with RouteECMP over
// the link(s) down to it instead. An ECMP group dst had stays in
// ecmp_slot, unused.
func (s *Switch) RouteToHost(ctx context.Context, dst, port int) error {
	if err := checkRouteDst(dst); err != nil {
		return err
	}
	if port < 0 || port > maxDevPort {
		return fmt.Errorf("route to ToR %d: host port %d outside 0..%d", dst, port, maxDevPort)
	}
	return s.setRoute(ctx, dst, ActionToHost, map[string]int64{ParamPort: int64(port)})
}

// setRoute gives route's entry for dst an action: in place where there
// is one (table.mod), added where not.
func (s *Switch) setRoute(ctx context.Context, dst int, action string, data map[string]int64) error {
	key := map[string]int64{KeyDst: int64(dst)}
	have, err := s.EntriesWhere(ctx, TableRoute, key)
	if err != nil {
		return err
	}
	e := p4switch.Entry{Key: key, Action: action, Data: data}
	for _, old := range have {
		if old.Key[KeyDst] != int64(dst) {
			continue
		}
		if p4switch.SameAction(old, e) {
			return nil
		}
		return s.ModifyEntry(ctx, TableRoute, e)
	}
	return s.AddEntry(ctx, TableRoute, e)
}

// RouteECMP sends frames for ToR dst over links (dev ports), by the flow hash (spray false) or per frame at random (spray true): route's action and ecmp_slot's members written round robin over the Slots slots; replaces what was there (use table.mod where an entry exists, add where not, as SetSpray does).
//
// Slot s goes to links[s mod len(links)]: with 3 links the first gets 22
// of the 64 slots. The slots are written before the route, so a frame
// never meets the new action with the old members missing. No links
// drops dst's frames (route and every slot).
func (s *Switch) RouteECMP(ctx context.Context, dst int, links []int, spray bool) error {
	if err := checkRouteDst(dst); err != nil {
		return err
	}
	if len(links) > Slots {
		return fmt.Errorf("route to ToR %d: %d links for %d ECMP slots", dst, len(links), Slots)
	}
	for _, l := range links {
		if l < 0 || l > maxDevPort {
			return fmt.Errorf("route to ToR %d: link %d outside dev ports 0..%d", dst, l, maxDevPort)
		}
	}
	have, err := s.EntriesWhere(ctx, TableECMPSlot, map[string]int64{KeyDst: int64(dst)})
	if err != nil {
		return err
	}
	want := make([]p4switch.Entry, Slots)
	for slot := range want {
		want[slot] = p4switch.Entry{Key: map[string]int64{KeyDst: int64(dst), KeySlot: int64(slot)}, Action: ActionDrop}
		if len(links) > 0 {
			want[slot].Action, want[slot].Data = ActionToLink, map[string]int64{ParamLink: int64(links[slot%len(links)])}
		}
	}
	if err := s.writeSlots(ctx, TableECMPSlot, KeyDst, int64(dst), have, want); err != nil {
		return err
	}
	action := ActionECMPHash
	switch {
	case len(links) == 0:
		action = ActionDrop
	case spray:
		action = ActionECMPSpray
	}
	return s.setRoute(ctx, dst, action, nil)
}

// FlowCount is a flow's registers.
type FlowCount struct {
	Sent, Rcvd  int64
	First, Last uint32
}

// flowRegs are the four flow registers in FlowCount's order.
var flowRegs = []string{RegFlowSent, RegFlowRcvd, RegFlowFirst, RegFlowLast}

func checkFlows(flows []int) error {
	for _, f := range flows {
		if f < 0 || f >= MaxFlows {
			return fmt.Errorf("flow counts: flow %d outside 0..%d", f, MaxFlows-1)
		}
	}
	return nil
}

// FlowCounts reads flows' registers (one reg.range request per register over the span of flows, as readEach does).
//
// Sent is counted at the source ToR (frames that left its ingress for the
// traffic manager), Rcvd, First and Last at the destination ToR (frames
// out of the host port, and the low 32 bits of the egress global
// timestamps, ns, of the first and last): read each on its switch.
func (s *Switch) FlowCounts(ctx context.Context, flows []int) ([]FlowCount, error) {
	if err := checkFlows(flows); err != nil {
		return nil, err
	}
	out := make([]FlowCount, len(flows))
	if len(flows) == 0 {
		return out, nil
	}
	for r, reg := range flowRegs {
		v, err := p4switch.ReadEach(ctx, s, reg, flows, MaxFlows)
		if err != nil {
			return nil, err
		}
		for i, x := range v {
			switch r {
			case 0:
				out[i].Sent = x
			case 1:
				out[i].Rcvd = x
			case 2:
				out[i].First = uint32(x)
			case 3:
				out[i].Last = uint32(x)
			}
		}
	}
	return out, nil
}

// ClearFlowCounts zeroes the four flow registers.
//
// The agent has no register clear: each register is read in one reg.range
// request and only its indices that are not 0 are written (reg.set), so a
// clear after a few flows costs a few requests, not 4 x MaxFlows. Frames
// that arrive while it runs may be counted or not: clear with the
// generators stopped.
func (s *Switch) ClearFlowCounts(ctx context.Context) error {
	for _, reg := range flowRegs {
		v, err := s.ReadRegisterRange(ctx, reg, 0, MaxFlows)
		if err != nil {
			return err
		}
		for i, x := range v {
			if x == 0 {
				continue
			}
			if err := s.WriteRegister(ctx, reg, i, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// FlowGenerator is a generator application of the ecmp program.
//
// AppID is the application (0..7); Port the generator port the program
// parses generator frames from (PktgenPort); EgressPort an added
// port of the switch (the agent checks it is there; the program routes
// the frames). Batches of PerBatch frames of FrameBytes (FCS not
// counted, as Generator's and Pktgen's) leave every Period,
// Batches times. SrcMAC and SrcAddr are the frames' source
// (SourceAddr(tor, app) is the program's addressing); gen_flow gives
// each its destination and flow (SetFlows).
type FlowGenerator struct {
	AppID, Port, EgressPort, FrameBytes int
	Period                              time.Duration
	PerBatch, Batches                   int
	SrcMAC                              [6]byte
	SrcAddr                             uint32
}

// fcsBytes is the Ethernet FCS, which the generator's pkt_len leaves out
// and Generator.Buffer's frame size counts.
const fcsBytes = 4

// StartFlowGenerator starts it with Generator{...}.Buffer of its
// frames (FCS included) as its packet buffer.
func (s *Switch) StartFlowGenerator(ctx context.Context, g FlowGenerator) error {
	if g.AppID < 0 || g.AppID >= pktgenApps {
		return fmt.Errorf("flow generator: application %d outside 0..%d", g.AppID, pktgenApps-1)
	}
	if g.Port != PktgenPort {
		return fmt.Errorf("flow generator application %d: generator port %d, the ecmp program takes generator frames from port %d", g.AppID, g.Port, PktgenPort)
	}
	if g.EgressPort < 0 || g.EgressPort > maxDevPort {
		return fmt.Errorf("flow generator application %d: egress port %d outside 0..%d", g.AppID, g.EgressPort, maxDevPort)
	}
	// The generator's smallest packet is 60 B without the FCS.
	if g.FrameBytes < 60 {
		return fmt.Errorf("flow generator application %d: %d B frames (expected 60 B or more without the FCS, the packet generator's smallest)", g.AppID, g.FrameBytes)
	}
	buf, err := Generator{SrcMAC: g.SrcMAC, SrcAddr: g.SrcAddr}.Buffer(g.FrameBytes + fcsBytes)
	if err != nil {
		return fmt.Errorf("flow generator application %d: %w", g.AppID, err)
	}
	return s.StartPktgen(ctx, p4switch.Pktgen{AppID: g.AppID, Port: g.Port, EgressPort: g.EgressPort, PacketBytes: g.FrameBytes,
		Interval: g.Period, Batches: g.Batches, PerBatch: g.PerBatch, Buffer: buf})
}
