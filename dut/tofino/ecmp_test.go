package tofino_test

import (
	"context"
	"reflect"
	"strings"
	sd "testbed/p4/stardust"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/inventory"
	"testbed/p4/ecmp"
	"testbed/simlab"
)

// startECMP builds and starts the ecmp program on a simulated switch of
// lab, as a recipe does.
func startECMP(t *testing.T, s *tofino.Switch) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.BuildProgram(ctx, ecmp.Program, ecmp.MainFile(ecmp.Program), ecmp.Sources()); err != nil {
		t.Fatal(err)
	}
	if err := s.StartSwitchd(ctx, ecmp.Program); err != nil {
		t.Fatal(err)
	}
}

// byKey indexes entries by one key field.
func byKey(es []tofino.Entry, field string) map[int64]tofino.Entry {
	out := map[int64]tofino.Entry{}
	for _, e := range es {
		out[e.Key[field]] = e
	}
	return out
}

// The ecmp control plane through the driver against a simulated switch
// running the program: every table written as the contract says, read
// back with Entries; rewrites replace what was there; bad arguments are
// refused before anything is written.
func TestECMPTablesThroughTheDriver(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	sw := open(t, lab, "sw1", 20*time.Second)
	startECMP(t, sw)
	p1, p2 := dev(t, lab, "sw1", "p1"), dev(t, lab, "sw1", "p2")

	snap, err := sd.New(sw).FabricSnapshot(ctx, ecmp.Program)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, ts := range snap.Tables {
		tables = append(tables, ts.Table)
		if len(ts.Entries) != 0 {
			t.Errorf("%s holds %d entries on a fresh program", ts.Table, len(ts.Entries))
		}
	}
	if want := []string{ecmp.TableWhoami, ecmp.TableGenFlow, ecmp.TableRoute, ecmp.TableECMPSlot}; !reflect.DeepEqual(tables, want) || len(snap.Registers) != 0 {
		t.Fatalf("snapshot: tables %v, registers %+v; want %v and no register", tables, snap.Registers, want)
	}

	// ToR id: set, replaced, one entry.
	for _, id := range []int{3, 4} {
		if err := ecmp.New(sw).SetToRID(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if es, err := sw.Entries(ctx, ecmp.TableWhoami); err != nil || len(es) != 1 || es[0].Action != ecmp.ActionSetID || es[0].Data[ecmp.ParamID] != 4 {
		t.Errorf("whoami: %+v %v, want one set_id(4)", es, err)
	}

	// Generator flows: slot s of an application holds flows[s mod len].
	three := []ecmp.ECMPFlow{{Dst: 2, Flow: 7, TC: 3}, {Dst: 5, Flow: 9}, {Dst: 2, Flow: 8, TC: 7}}
	if err := ecmp.New(sw).SetFlows(ctx, 1, three); err != nil {
		t.Fatal(err)
	}
	if err := ecmp.New(sw).SetFlows(ctx, 2, []ecmp.ECMPFlow{{Dst: 6, Flow: 255}}); err != nil {
		t.Fatal(err)
	}
	checkFlows := func(app int, flows []ecmp.ECMPFlow) {
		t.Helper()
		es, err := sw.EntriesWhere(ctx, ecmp.TableGenFlow, map[string]int64{ecmp.KeyAppID: int64(app)})
		if err != nil {
			t.Fatal(err)
		}
		if len(flows) == 0 {
			if len(es) != 0 {
				t.Errorf("application %d: %d entries, want none", app, len(es))
			}
			return
		}
		slots := byKey(es, ecmp.KeySlot)
		if len(es) != ecmp.Slots || len(slots) != ecmp.Slots {
			t.Fatalf("application %d: %d entries over %d slots, want %d", app, len(es), len(slots), ecmp.Slots)
		}
		for s := 0; s < ecmp.Slots; s++ {
			e, f := slots[int64(s)], flows[s%len(flows)]
			if e.Action != ecmp.ActionToFlow || e.Data[ecmp.ParamDst] != int64(f.Dst) || e.Data[ecmp.ParamFlow] != int64(f.Flow) || e.Data[ecmp.ParamTC] != int64(f.TC) {
				t.Fatalf("application %d slot %d: %+v, want to_flow(%d, %d, %d)", app, s, e, f.Dst, f.Flow, f.TC)
			}
		}
	}
	checkFlows(1, three)
	checkFlows(2, []ecmp.ECMPFlow{{Dst: 6, Flow: 255}})
	// Rewritten in place; the other application's slots untouched.
	if err := ecmp.New(sw).SetFlows(ctx, 1, three[1:2]); err != nil {
		t.Fatal(err)
	}
	checkFlows(1, three[1:2])
	checkFlows(2, []ecmp.ECMPFlow{{Dst: 6, Flow: 255}})
	if err := ecmp.New(sw).SetFlows(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	checkFlows(1, nil)
	checkFlows(2, []ecmp.ECMPFlow{{Dst: 6, Flow: 255}})

	// Routes: a host port, an ECMP group by hash, then by spraying, then
	// none; one route entry per destination throughout.
	route := func(dst int) tofino.Entry {
		t.Helper()
		es, err := sw.Entries(ctx, ecmp.TableRoute)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var found tofino.Entry
		for _, e := range es {
			if e.Key[ecmp.KeyDst] == int64(dst) {
				n++
				found = e
			}
		}
		if n != 1 {
			t.Fatalf("route holds %d entries for ToR %d, want 1", n, dst)
		}
		return found
	}
	group := func(dst int) []int64 {
		t.Helper()
		es, err := sw.EntriesWhere(ctx, ecmp.TableECMPSlot, map[string]int64{ecmp.KeyDst: int64(dst)})
		if err != nil {
			t.Fatal(err)
		}
		slots := byKey(es, ecmp.KeySlot)
		if len(es) != ecmp.Slots || len(slots) != ecmp.Slots {
			t.Fatalf("ToR %d: %d ECMP slot entries, want %d", dst, len(es), ecmp.Slots)
		}
		out := make([]int64, ecmp.Slots)
		for s := range out {
			e := slots[int64(s)]
			switch e.Action {
			case ecmp.ActionToLink:
				out[s] = e.Data[ecmp.ParamLink]
			case ecmp.ActionDrop:
				out[s] = -1
			default:
				t.Fatalf("ToR %d slot %d: %+v", dst, s, e)
			}
		}
		return out
	}
	roundRobin := func(links ...int64) []int64 {
		out := make([]int64, ecmp.Slots)
		for s := range out {
			out[s] = links[s%len(links)]
		}
		return out
	}
	if err := ecmp.New(sw).RouteToHost(ctx, 4, p1); err != nil {
		t.Fatal(err)
	}
	if e := route(4); e.Action != ecmp.ActionToHost || e.Data[ecmp.ParamPort] != int64(p1) {
		t.Errorf("route to ToR 4: %+v, want to_host(%d)", e, p1)
	}
	if err := ecmp.New(sw).RouteECMP(ctx, 2, []int{p1, p2}, false); err != nil {
		t.Fatal(err)
	}
	if e := route(2); e.Action != ecmp.ActionECMPHash {
		t.Errorf("route to ToR 2: %+v, want ecmp_hash", e)
	}
	if g := group(2); !reflect.DeepEqual(g, roundRobin(int64(p1), int64(p2))) {
		t.Errorf("ToR 2's slots %v, want %d and %d round robin", g, p1, p2)
	}
	if err := ecmp.New(sw).RouteECMP(ctx, 2, []int{p2, p1, p2}, true); err != nil {
		t.Fatal(err)
	}
	if e := route(2); e.Action != ecmp.ActionECMPSpray {
		t.Errorf("route to ToR 2: %+v, want ecmp_spray", e)
	}
	if g := group(2); !reflect.DeepEqual(g, roundRobin(int64(p2), int64(p1), int64(p2))) {
		t.Errorf("ToR 2's slots %v after the rewrite", g)
	}
	if err := ecmp.New(sw).RouteECMP(ctx, 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if e := route(2); e.Action != ecmp.ActionDrop {
		t.Errorf("route to ToR 2 without links: %+v, want drop", e)
	}
	if g := group(2); !reflect.DeepEqual(g, roundRobin(-1)) {
		t.Errorf("ToR 2's slots without links: %v, want every slot drop", g)
	}
	// A ToR's route moves between a host port and a group in place.
	if err := ecmp.New(sw).RouteECMP(ctx, 4, []int{p2}, false); err != nil {
		t.Fatal(err)
	}
	if e := route(4); e.Action != ecmp.ActionECMPHash {
		t.Errorf("route to ToR 4: %+v, want ecmp_hash", e)
	}
	if err := ecmp.New(sw).RouteToHost(ctx, 4, p2); err != nil {
		t.Fatal(err)
	}
	if e := route(4); e.Action != ecmp.ActionToHost || e.Data[ecmp.ParamPort] != int64(p2) {
		t.Errorf("route to ToR 4: %+v, want to_host(%d)", e, p2)
	}

	// Queue priorities: each queue of each port apart, the SDE's default
	// (0) first, the previous one answered.
	for _, c := range []struct{ port, qid, prio, prev int }{{p1, 3, 7, 0}, {p1, 3, 5, 7}, {p1, 4, 2, 0}, {p2, 3, 1, 0}, {p1, 3, 0, 5}} {
		if prev, err := sw.SetQueuePriority(ctx, c.port, c.qid, c.prio); err != nil || prev != c.prev {
			t.Errorf("port %d queue %d priority %d: previous %d %v, want %d", c.port, c.qid, c.prio, prev, err, c.prev)
		}
	}
	// A read changes nothing.
	for range 2 {
		if p, err := sw.QueuePriority(ctx, p1, 4); err != nil || p != 2 {
			t.Errorf("port %d queue 4 read: %d %v, want 2", p1, p, err)
		}
	}
	if _, err := sw.SetQueuePriority(ctx, 100, 0, 1); !tofino.IsNotFound(err) {
		t.Errorf("a queue of dev port 100 (beyond the pipe's 72 ports): %v", err)
	}

	// Bad arguments: a clear error, and nothing written.
	before := map[string][]tofino.Entry{}
	for _, tbl := range tables {
		before[tbl], _ = sw.Entries(ctx, tbl)
	}
	many := make([]int, ecmp.Slots+1)
	manyFlows := make([]ecmp.ECMPFlow, ecmp.Slots+1)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"ToR id 256", ecmp.New(sw).SetToRID(ctx, ecmp.MaxToRs), "ToR id 256"},
		{"ToR id -1", ecmp.New(sw).SetToRID(ctx, -1), "ToR id -1"},
		{"application 8", ecmp.New(sw).SetFlows(ctx, 8, three), "application 8"},
		{"65 flows", ecmp.New(sw).SetFlows(ctx, 0, manyFlows), "65 flows for 64 slots"},
		{"flow 256", ecmp.New(sw).SetFlows(ctx, 0, []ecmp.ECMPFlow{{Dst: 1, Flow: 0}, {Dst: 1, Flow: ecmp.MaxFlows}}), "flow number 256 outside 0..255"},
		{"destination 256", ecmp.New(sw).SetFlows(ctx, 0, []ecmp.ECMPFlow{{Dst: ecmp.MaxToRs, Flow: 1}}), "destination ToR 256"},
		{"class 8", ecmp.New(sw).SetFlows(ctx, 0, []ecmp.ECMPFlow{{Dst: 1, Flow: 2, TC: ecmp.Classes}}), "traffic class 8 outside 0..7"},
		{"class -1", ecmp.New(sw).SetFlows(ctx, 0, []ecmp.ECMPFlow{{Dst: 1, Flow: 2, TC: -1}}), "traffic class -1"},
		{"route to ToR 256", ecmp.New(sw).RouteToHost(ctx, ecmp.MaxToRs, p1), "destination ToR 256"},
		{"host port 512", ecmp.New(sw).RouteToHost(ctx, 1, 512), "host port 512"},
		{"65 links", ecmp.New(sw).RouteECMP(ctx, 1, many, false), "65 links"},
		{"link -1", ecmp.New(sw).RouteECMP(ctx, 1, []int{p1, -1}, true), "link -1"},
		{"ECMP to ToR -1", ecmp.New(sw).RouteECMP(ctx, -1, []int{p1}, false), "destination ToR -1"},
		{"priority 8", second(sw.SetQueuePriority(ctx, p1, 0, 8)), "priority 8: expected 0..7"},
		{"queue 8", second(sw.SetQueuePriority(ctx, p1, 8, 1)), "expected a queue 0..7"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, c.err, c.want)
		}
	}
	for _, tbl := range tables {
		if after, _ := sw.Entries(ctx, tbl); len(after) != len(before[tbl]) {
			t.Errorf("%s: %d entries after refused calls, %d before", tbl, len(after), len(before[tbl]))
		}
	}
	if _, err := sd.New(sw).FabricSnapshot(ctx, "ecmp2"); err == nil || !strings.Contains(err.Error(), ecmp.Program) {
		t.Errorf("a snapshot of an unknown program: %v", err)
	}
}

// The flow registers through the driver: FlowCounts reads each flow's
// four registers (the timestamps as the unsigned 32 bits they are),
// ClearFlowCounts zeroes them, and a generator application starts with
// the contract's packet buffer.
func TestECMPFlowCountsThroughTheDriver(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	sw := open(t, lab, "sw1", 20*time.Second)
	startECMP(t, sw)

	want := map[int]ecmp.FlowCount{
		5:   {Sent: 10, Rcvd: 9, First: 1000, Last: 0xdeadbeef},
		200: {Sent: 1 << 31, Rcvd: 7, First: 0xfffffffe, Last: 3},
		255: {Sent: 1},
	}
	for f, c := range want {
		for reg, v := range map[string]int64{ecmp.RegFlowSent: c.Sent, ecmp.RegFlowRcvd: c.Rcvd, ecmp.RegFlowFirst: int64(c.First), ecmp.RegFlowLast: int64(c.Last)} {
			if err := sw.WriteRegister(ctx, reg, f, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	flows := []int{200, 5, 6, 255}
	got, err := ecmp.New(sw).FlowCounts(ctx, flows)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range flows {
		if got[i] != want[f] {
			t.Errorf("flow %d: %+v, want %+v", f, got[i], want[f])
		}
	}
	if got, err := ecmp.New(sw).FlowCounts(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("no flows: %v %v", got, err)
	}
	for _, bad := range [][]int{{0, ecmp.MaxFlows}, {-1}} {
		if _, err := ecmp.New(sw).FlowCounts(ctx, bad); err == nil || !strings.Contains(err.Error(), "outside 0..255") {
			t.Errorf("flows %v: %v", bad, err)
		}
	}
	if err := ecmp.New(sw).ClearFlowCounts(ctx); err != nil {
		t.Fatal(err)
	}
	for _, reg := range []string{ecmp.RegFlowSent, ecmp.RegFlowRcvd, ecmp.RegFlowFirst, ecmp.RegFlowLast} {
		v, err := sw.ReadRegisterRange(ctx, reg, 0, ecmp.MaxFlows)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range v {
			if x != 0 {
				t.Errorf("%s[%d] = %d after the clear", reg, i, x)
			}
		}
	}

	host := dev(t, lab, "sw1", "p1")
	if err := sw.AddPort(ctx, host, 100, "none"); err != nil {
		t.Fatal(err)
	}
	g := ecmp.FlowGenerator{AppID: 1, Port: ecmp.PktgenPort, EgressPort: host, FrameBytes: 256, Period: 10 * time.Microsecond,
		PerBatch: 2, Batches: 50, SrcMAC: [6]byte{2, 0, 0, 0, 1, 1}, SrcAddr: ecmp.SourceAddr(1, 1)}
	if err := ecmp.New(sw).StartFlowGenerator(ctx, g); err != nil {
		t.Fatal(err)
	}
	// Reading the status moves the simulated clock: the application may
	// have sent its frames already.
	if st, err := sw.PktgenStatus(ctx, 1); err != nil || !st.Enabled && st.Packets == 0 {
		t.Errorf("flow generator: %+v %v, want it running or its frames sent", st, err)
	}
	if err := sw.StopPktgen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mutate func(*ecmp.FlowGenerator)
		want   string
	}{
		{func(g *ecmp.FlowGenerator) { g.AppID = 8 }, "application 8"},
		{func(g *ecmp.FlowGenerator) { g.Port = 196 }, "generator port 196"},
		{func(g *ecmp.FlowGenerator) { g.FrameBytes = 59 }, "59 B frames"},
		{func(g *ecmp.FlowGenerator) { g.FrameBytes = 9213 }, "9217 B"},
		{func(g *ecmp.FlowGenerator) { g.EgressPort = 512 }, "egress port 512"},
		{func(g *ecmp.FlowGenerator) { g.Period = 0 }, "interval"},
	} {
		bad := g
		bad.AppID = 2
		c.mutate(&bad)
		if err := ecmp.New(sw).StartFlowGenerator(ctx, bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("generator %+v: %v, want an error saying %q", bad, err, c.want)
		}
	}
	if st, err := sw.PktgenStatus(ctx, 2); err == nil && st.Enabled {
		t.Errorf("a refused application runs: %+v", st)
	}
}

// Two ToRs (the Stardust bench's fa1 and fa2, ToR ids 0 and 1) and two
// spines (fe1, fe2) running ecmp on the simulated bench, configured only
// through the driver: fa1's generator sends two flows to ToR 1, and
// FlowCounts sees every frame fa1 sent arrive at fa2's host port, in the
// time the generator took. Hashed, each flow keeps to one uplink; sprayed,
// one flow uses both.
func TestECMPFlowsCrossTheFabric(t *testing.T) {
	text, err := simlab.Bench("stardust")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Parse("simlab/benches/stardust.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	lab, _, err := simlab.StartTwin(inv, simlab.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	ctx := context.Background()
	sws := map[string]*tofino.Switch{}
	for _, name := range []string{"fa1", "fa2", "fe1", "fe2"} {
		s := open(t, lab, name, 20*time.Second)
		startECMP(t, s)
		for _, port := range []string{"host", "p1", "p2"} {
			if name[:2] == "fe" && port == "host" {
				continue
			}
			if err := s.AddPort(ctx, dev(t, lab, name, port), 100, "none"); err != nil {
				t.Fatal(err)
			}
		}
		sws[name] = s
	}
	// A ToR's pN goes to spine N; a spine's pM to ToR M-1.
	up := []int{dev(t, lab, "fa1", "p1"), dev(t, lab, "fa1", "p2")}
	for i, tor := range []string{"fa1", "fa2"} {
		s := sws[tor]
		if err := ecmp.New(s).SetToRID(ctx, i); err != nil {
			t.Fatal(err)
		}
		if err := ecmp.New(s).RouteToHost(ctx, i, dev(t, lab, tor, "host")); err != nil {
			t.Fatal(err)
		}
		if err := ecmp.New(s).RouteECMP(ctx, 1-i, []int{dev(t, lab, tor, "p1"), dev(t, lab, tor, "p2")}, false); err != nil {
			t.Fatal(err)
		}
		for _, spine := range []string{"fe1", "fe2"} {
			if err := ecmp.New(sws[spine]).RouteECMP(ctx, i, []int{dev(t, lab, spine, "p"+string(rune('1'+i)))}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// fa1's fibres run through voa1: open its shutters.
	if v, ok := lab.World().VOA("voa1"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, p := range up {
		if err := sws["fa1"].WaitPortUp(wctx, p); err != nil {
			t.Fatal(err)
		}
	}
	fa1, fa2 := sws["fa1"], sws["fa2"]
	flows := []int{3, 4}
	const frames = 100
	period := 10 * time.Microsecond
	run := func(app int, fl []ecmp.ECMPFlow) (sent, rcvd []ecmp.FlowCount, uplink [2]int64) {
		t.Helper()
		for _, s := range []*tofino.Switch{fa1, fa2} {
			if err := ecmp.New(s).ClearFlowCounts(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var before [2]int64
		for k, p := range up {
			f, err := fa1.PortFramesOf(ctx, p, tofino.FrameQuery{Fields: tofino.FramesTxOK})
			if err != nil {
				t.Fatal(err)
			}
			before[k] = f.TxOK
		}
		if err := ecmp.New(fa1).SetFlows(ctx, app, fl); err != nil {
			t.Fatal(err)
		}
		g := ecmp.FlowGenerator{AppID: app, Port: ecmp.PktgenPort, EgressPort: dev(t, lab, "fa1", "host"), FrameBytes: 1024, Period: period,
			PerBatch: 1, Batches: frames, SrcMAC: [6]byte{2, 0, 0, 0, 0, byte(app)}, SrcAddr: ecmp.SourceAddr(0, app)}
		if err := ecmp.New(fa1).StartFlowGenerator(ctx, g); err != nil {
			t.Fatal(err)
		}
		now, err := fa1.Clock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fa1.WaitClock(ctx, now+frames*period+100*time.Microsecond); err != nil {
			t.Fatal(err)
		}
		if st, err := fa1.PktgenStatus(ctx, app); err != nil || !st.Done || st.Packets != frames {
			t.Fatalf("generator: %+v %v, want %d frames sent", st, err, frames)
		}
		if sent, err = ecmp.New(fa1).FlowCounts(ctx, flows); err != nil {
			t.Fatal(err)
		}
		if rcvd, err = ecmp.New(fa2).FlowCounts(ctx, flows); err != nil {
			t.Fatal(err)
		}
		for k, p := range up {
			f, err := fa1.PortFramesOf(ctx, p, tofino.FrameQuery{Fields: tofino.FramesTxOK})
			if err != nil {
				t.Fatal(err)
			}
			uplink[k] = f.TxOK - before[k]
		}
		return sent, rcvd, uplink
	}

	sent, rcvd, uplink := run(1, []ecmp.ECMPFlow{{Dst: 1, Flow: 3}, {Dst: 1, Flow: 4}})
	var total int64
	for k, f := range flows {
		total += sent[k].Sent
		if sent[k].Sent == 0 || rcvd[k].Rcvd != sent[k].Sent {
			t.Errorf("flow %d: fa1 sent %d, fa2's host port got %d", f, sent[k].Sent, rcvd[k].Rcvd)
		}
		if rcvd[k].Sent != 0 || sent[k].Rcvd != 0 {
			t.Errorf("flow %d counted on the wrong ToR: fa1 %+v, fa2 %+v", f, sent[k], rcvd[k])
		}
		if span := time.Duration(rcvd[k].Last-rcvd[k].First) * time.Nanosecond; rcvd[k].First == 0 || span <= 0 || span > frames*period {
			t.Errorf("flow %d: first %d ns, last %d ns: want a span within the generator's %v", f, rcvd[k].First, rcvd[k].Last, frames*period)
		}
	}
	if total != frames {
		t.Errorf("fa1 sent %d frames of the two flows, the generator %d", total, frames)
	}
	t.Logf("hashed: flows %v sent %d and %d, received %d and %d; uplinks sent %v", flows, sent[0].Sent, sent[1].Sent, rcvd[0].Rcvd, rcvd[1].Rcvd, uplink)
	// Per flow: the uplinks carry the flows whole, one link each or both
	// on one.
	a, b := sent[0].Sent, sent[1].Sent
	if u := uplink; !(u == [2]int64{a, b} || u == [2]int64{b, a} || u == [2]int64{a + b, 0} || u == [2]int64{0, a + b}) {
		t.Errorf("hashed: uplinks sent %v, flows %d and %d: a flow was split", u, a, b)
	}

	// Sprayed, one flow takes both uplinks.
	if err := ecmp.New(fa1).RouteECMP(ctx, 1, up, true); err != nil {
		t.Fatal(err)
	}
	sent, rcvd, uplink = run(2, []ecmp.ECMPFlow{{Dst: 1, Flow: 3}})
	if sent[0].Sent != frames || rcvd[0].Rcvd != frames || sent[1].Sent != 0 {
		t.Errorf("sprayed: flow 3 sent %d, received %d; flow 4 sent %d", sent[0].Sent, rcvd[0].Rcvd, sent[1].Sent)
	}
	t.Logf("sprayed: flow 3 sent %d, received %d; uplinks sent %v", sent[0].Sent, rcvd[0].Rcvd, uplink)
	if uplink[0] == 0 || uplink[1] == 0 || uplink[0]+uplink[1] != frames {
		t.Errorf("sprayed: uplinks sent %v, want the flow's %d frames over both", uplink, frames)
	}
}

func second[T any](_ T, err error) error { return err }
