package tofino_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/inventory"
	sd "testbed/p4/stardust"
	"testbed/simlab"
)

// The Stardust control plane through the driver, against simulated
// switches running the deployed programs: the spraying table read back as
// reachability, and a link taken out of it once its port is down or its
// reachability age reaches th, while a destination keeps the links that
// are left. No generator application runs: the test writes the age
// register the program's reachability cells and aging ticks would (ages
// start at SD_AGE_MAX, as the program declares them).
func TestStardustReachabilityThroughTheDriver(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	fa := open(t, lab, "sw1", 20*time.Second)
	fe := open(t, lab, "sw2", 20*time.Second)
	src := sd.Sources()
	for _, c := range []struct {
		s       *tofino.Switch
		program string
	}{{fa, sd.ProgramFA}, {fe, sd.ProgramFE}} {
		if _, err := c.s.BuildProgram(ctx, c.program, sd.MainFile(c.program), src); err != nil {
			t.Fatal(err)
		}
		if err := c.s.StartSwitchd(ctx, c.program); err != nil {
			t.Fatal(err)
		}
	}
	p1, p2 := dev(t, lab, "sw1", "p1"), dev(t, lab, "sw1", "p2")
	for _, s := range []*tofino.Switch{fa, fe} {
		for _, p := range []int{p1, p2} {
			if err := s.AddPort(ctx, p, 100, "none"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v, ok := lab.World().VOA("voa3"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := fa.WaitPortUp(wctx, p1); err != nil {
		t.Fatal(err)
	}

	if err := sd.New(fa).SetSpray(ctx, 3, []int{p2, p1}); err != nil {
		t.Fatal(err)
	}
	if err := sd.New(fa).SetSpray(ctx, 4, []int{p1}); err != nil {
		t.Fatal(err)
	}
	r, err := sd.New(fa).Reachability(ctx)
	if err != nil || !reflect.DeepEqual(r, map[int][]int{3: {p2, p1}, 4: {p1}}) {
		t.Fatalf("reachability %v %v, want FA 3 over %d and %d, FA 4 over %d", r, err, p2, p1, p1)
	}
	es, _ := fa.Entries(ctx, sd.TableSpray)
	if len(es) != 2*sd.MaxLinks {
		t.Errorf("%d spraying entries, want %d slots for each of 2 FAs", len(es), 2*sd.MaxLinks)
	}

	// A reachability cell on p2; two ticks without one on p1: still
	// valid with th 3.
	if err := fa.WriteRegister(ctx, sd.RegReachAge, p2, 0); err != nil {
		t.Fatal(err)
	}
	if err := fa.WriteRegister(ctx, sd.RegReachAge, p1, 2); err != nil {
		t.Fatal(err)
	}
	out, err := sd.New(fa).HealSpray(ctx, []int{p1, p2}, 3, []int{3, 4})
	if err != nil || len(out) != 0 {
		t.Fatalf("heal at age 2 took out %v (%v)", out, err)
	}
	links, err := sd.New(fa).FabricLinks(ctx, []int{p1, p2}, 3)
	if err != nil || !links[0].Up || links[0].Age != 2 || !links[0].Valid || !links[1].Valid {
		t.Fatalf("p1 at age 2, p2 at 0: %+v %v", links, err)
	}
	// The third tick: p1 leaves every destination that has another link.
	if err := fa.WriteRegister(ctx, sd.RegReachAge, p1, 3); err != nil {
		t.Fatal(err)
	}
	out, err = sd.New(fa).HealSpray(ctx, []int{p1, p2}, 3, []int{3, 4})
	if err != nil || !reflect.DeepEqual(out, []int{p1}) {
		t.Fatalf("heal took out %v (%v), want [%d]", out, err, p1)
	}
	r, _ = sd.New(fa).Reachability(ctx)
	if want := map[int][]int{3: {p2}, 4: {p1}}; !reflect.DeepEqual(r, want) {
		t.Errorf("after heal: %v, want %v (FA 4 keeps its only link)", r, want)
	}
	// The fibres dark: both ports down, neither valid whatever its age,
	// and FA 3, with no link left, keeps the one it has.
	if v, ok := lab.World().VOA("voa3"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(false)
		}
	}
	if err := fa.WriteRegister(ctx, sd.RegReachAge, p1, 0); err != nil {
		t.Fatal(err)
	}
	if l, err := sd.New(fa).FabricLinks(ctx, []int{p1, p2}, 3); err != nil || l[0].Up || l[0].Valid || l[1].Valid {
		t.Errorf("dark fibres: %+v %v", l, err)
	}
	if out, err := sd.New(fa).HealSpray(ctx, []int{p1, p2}, 3, []int{3, 4}); err != nil || len(out) != 2 {
		t.Errorf("dark fibres: heal took out %v (%v)", out, err)
	}
	if r, _ := sd.New(fa).Reachability(ctx); !reflect.DeepEqual(r, map[int][]int{3: {p2}, 4: {p1}}) {
		t.Errorf("dark fibres: %v, want the last links kept", r)
	}
	if v, ok := lab.World().VOA("voa3"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	// Good cells again: the age back to 0 and the link valid.
	if err := fa.WriteRegister(ctx, sd.RegReachAge, p1, 0); err != nil {
		t.Fatal(err)
	}
	if l, err := sd.New(fa).FabricLinks(ctx, []int{p1}, 3); err != nil || !l[0].Valid {
		t.Errorf("p1 at age 0: %+v %v", l, err)
	}
	if _, err := sd.New(fa).FabricLinks(ctx, []int{p1}, 0); err == nil {
		t.Error("th 0 accepted")
	}
	if err := sd.New(fa).SetSpray(ctx, sd.MaxFAs, []int{p1}); err == nil {
		t.Error("FA 256 accepted")
	}
	// Counters by VOQ and port read through the contract's registers.
	if err := fa.WriteRegister(ctx, sd.RegCredit, 7, 5); err != nil {
		t.Fatal(err)
	}
	if v, err := sd.New(fa).VOQCredits(ctx, []int{7, 8}); err != nil || v[0] != 5 || v[1] != 0 {
		t.Errorf("VOQ credits %v %v", v, err)
	}
	if _, err := sd.New(fe).VOQCredits(ctx, []int{7}); !tofino.IsNotFound(err) {
		t.Errorf("VOQ credits of an FE: %v, want not found (the FE has no VOQs)", err)
	}
}

// The Stardust bench (simlab/benches/stardust.yaml) as a twin: every FA
// sees its four fabric links up through its FEs once both ends run the
// programs; darkening one of fa1's fibres at voa1 takes that link down,
// and healing takes it out of every destination's spraying slots.
func TestStardustBenchThroughTheDriver(t *testing.T) {
	lab, sws := startStardustBench(t, "fa1", "fa2", "fe1", "fe2", "fe3", "fe4")
	ctx := context.Background()
	if v, ok := lab.World().VOA("voa1"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	fa1 := sws["fa1"]
	var fabric []int
	for k := 1; k <= 4; k++ {
		fabric = append(fabric, dev(t, lab, "fa1", "p"+strconv.Itoa(k)))
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, p := range fabric {
		if err := fa1.WaitPortUp(wctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"fa1", "fa2"} {
		// A reachability cell on each link (ages start at SD_AGE_MAX).
		for _, p := range fabric {
			if err := sws[name].WriteRegister(ctx, sd.RegReachAge, p, 0); err != nil {
				t.Fatal(err)
			}
		}
		ls, err := sd.New(sws[name]).FabricLinks(ctx, fabric, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if !l.Valid {
				t.Errorf("%s: fabric link %+v not valid with every FE running", name, l)
			}
		}
	}
	for d := 1; d < 8; d++ {
		if err := sd.New(fa1).SetSpray(ctx, d, fabric); err != nil {
			t.Fatal(err)
		}
	}
	// fa1-fe2's fibre goes dark.
	v, _ := lab.World().VOA("voa1")
	v.Channels[1].SetShutter(false)
	out, err := sd.New(fa1).HealSpray(ctx, fabric, 3, []int{1, 2, 3, 4, 5, 6, 7})
	if err != nil || !reflect.DeepEqual(out, []int{fabric[1]}) {
		t.Fatalf("heal took out %v (%v), want fa1's p2 (%d)", out, err, fabric[1])
	}
	r, _ := sd.New(fa1).Reachability(ctx)
	for d := 1; d < 8; d++ {
		if want := []int{fabric[0], fabric[2], fabric[3]}; !reflect.DeepEqual(r[d], want) {
			t.Errorf("FA %d over %v, want %v", d, r[d], want)
		}
	}
	// fa2's links do not cross voa1: all still valid.
	if ls, err := sd.New(sws["fa2"]).FabricLinks(ctx, fabric, 3); err != nil || !ls[1].Valid {
		t.Errorf("fa2's link to fe2: %+v %v", ls, err)
	}
}

// startStardustBench starts the Stardust bench's twin and brings the
// switches named to their programs (stardust_fa or stardust_fe, by their
// stardust_role) with their fabric ports added at 100G.
func startStardustBench(t *testing.T, names ...string) (*simlab.Lab, map[string]*tofino.Switch) {
	t.Helper()
	text, err := simlab.Bench("stardust")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Parse("simlab/benches/stardust.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	lab, skipped, err := simlab.StartTwin(inv, simlab.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	if len(skipped) != 0 {
		t.Fatalf("the twin left out %v", skipped)
	}
	ctx := context.Background()
	src := sd.Sources()
	sws := map[string]*tofino.Switch{}
	for _, name := range names {
		d, _ := lab.Inventory().Device(name)
		program := sd.ProgramFA
		if d.Options["stardust_role"] == "fe" {
			program = sd.ProgramFE
		}
		s := open(t, lab, name, 20*time.Second)
		if _, err := s.BuildProgram(ctx, program, sd.MainFile(program), src); err != nil {
			t.Fatal(err)
		}
		if err := s.StartSwitchd(ctx, program); err != nil {
			t.Fatal(err)
		}
		for port, v := range d.Ports {
			if port == "host" {
				continue
			}
			n, _ := strconv.Atoi(v)
			if err := s.AddPort(ctx, n, 100, "none"); err != nil {
				t.Fatal(err)
			}
		}
		sws[name] = s
	}
	return lab, sws
}

// The bring-up's writes through the driver, read back as the programs'
// tables and registers on simulated switches: the snapshot a caller
// journals before them, each method replacing only what it owns, and the
// histograms read in one request each.
func TestStardustBringUpThroughTheDriver(t *testing.T) {
	lab, sws := startStardustBench(t, "fa1", "fe1")
	ctx := context.Background()
	fa, fe := sws["fa1"], sws["fe1"]
	host := dev(t, lab, "fa1", "host")
	if err := fa.AddPort(ctx, host, 100, "none"); err != nil {
		t.Fatal(err)
	}
	var fabric []int
	for k := 1; k <= 4; k++ {
		fabric = append(fabric, dev(t, lab, "fa1", "p"+strconv.Itoa(k)))
	}

	snap, err := sd.New(fa).FabricSnapshot(ctx, sd.ProgramFA)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tables) != 7 || !reflect.DeepEqual(snap.Registers, []sd.RegisterValue{{Name: sd.RegFCIThreshold}, {Name: sd.RegReasmTimeout}}) {
		t.Fatalf("FA snapshot: %d tables, registers %+v; want the 7 tables a bring-up fills, the FCI threshold and the reassembly timeout, 0", len(snap.Tables), snap.Registers)
	}
	for _, ts := range snap.Tables {
		if len(ts.Entries) != 0 {
			t.Errorf("%s holds %d entries on a fresh program", ts.Table, len(ts.Entries))
		}
	}
	if _, err := sd.New(fa).FabricSnapshot(ctx, "switch"); err == nil {
		t.Error("a snapshot of a program that is not Stardust's")
	}

	// Fabric id: set, replaced, one entry.
	if id, ok, err := sd.New(fa).FabricID(ctx); err != nil || ok || id != 0 {
		t.Fatalf("fabric id before any: %d %v %v", id, ok, err)
	}
	for _, id := range []int{3, 5} {
		if err := sd.New(fa).SetFabricID(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if id, ok, err := sd.New(fa).FabricID(ctx); err != nil || !ok || id != 5 {
		t.Fatalf("fabric id: %d %v %v, want 5", id, ok, err)
	}
	if es, _ := fa.Entries(ctx, sd.TableWhoami); len(es) != 1 {
		t.Errorf("whoami holds %d entries", len(es))
	}
	if err := sd.New(fa).SetFabricID(ctx, sd.MaxFAs); err == nil {
		t.Error("fabric id 256 accepted")
	}

	if err := sd.New(fa).SetHostPorts(ctx, map[int]int{0: host, 1: host}); err != nil {
		t.Fatal(err)
	}
	if err := sd.New(fa).SetHostPorts(ctx, map[int]int{0: host}); err != nil {
		t.Fatal(err)
	}
	if es, _ := fa.Entries(ctx, sd.TableHostPort); len(es) != 1 || es[0].Key[sd.KeyDstPort] != 0 || es[0].Data[sd.ParamPort] != int64(host) {
		t.Errorf("host ports %+v", es)
	}

	// Generator flows: 7 destinations over 64 slots (10, 9, 9, ...); a
	// second application's slots are its own.
	var targets []sd.VOQTarget
	for d := 1; d < 8; d++ {
		targets = append(targets, sd.VOQTarget{FA: d, Port: 0, VOQ: d, TC: 0})
	}
	if err := sd.New(fa).SetGenFlow(ctx, 3, targets); err != nil {
		t.Fatal(err)
	}
	if err := sd.New(fa).SetGenFlow(ctx, 4, targets[:1]); err != nil {
		t.Fatal(err)
	}
	if err := sd.New(fa).SetGenFlow(ctx, 3, targets); err != nil {
		t.Fatal(err)
	}
	es, _ := fa.Entries(ctx, sd.TableGenFlow)
	perFA := map[int64]int{}
	for _, e := range es {
		if e.Key[sd.KeyAppID] == 3 {
			perFA[e.Data[sd.ParamFA]]++
			if e.Data[sd.ParamVOQ] != e.Data[sd.ParamFA] || e.Action != sd.ActionToVOQ {
				t.Errorf("gen_flow entry %+v", e)
			}
		}
	}
	if len(es) != 2*sd.MaxLinks || !reflect.DeepEqual(perFA, map[int64]int{1: 10, 2: 9, 3: 9, 4: 9, 5: 9, 6: 9, 7: 9}) {
		t.Errorf("%d gen_flow entries, application 3's per FA %v", len(es), perFA)
	}
	if err := sd.New(fa).SetGenFlow(ctx, 3, nil); err != nil {
		t.Fatal(err)
	}
	if es, _ := fa.Entries(ctx, sd.TableGenFlow); len(es) != sd.MaxLinks || es[0].Key[sd.KeyAppID] != 4 {
		t.Errorf("after clearing application 3: %d entries", len(es))
	}
	if err := sd.New(fa).SetGenFlow(ctx, 3, []sd.VOQTarget{{FA: 1, VOQ: sd.MaxVOQs}}); err == nil {
		t.Error("VOQ 4096 accepted")
	}

	// Credits: one host port, its 256 slots over the sources, replaced.
	if err := sd.New(fa).SetCreditPorts(ctx, []int{0}); err != nil {
		t.Fatal(err)
	}
	var srcs []sd.CreditSource
	for d := 1; d < 8; d++ {
		srcs = append(srcs, sd.CreditSource{FA: d, VOQ: 5})
	}
	if err := sd.New(fa).SetCreditSources(ctx, 0, srcs); err != nil {
		t.Fatal(err)
	}
	if err := sd.New(fa).SetCreditSources(ctx, 0, srcs[:3]); err != nil {
		t.Fatal(err)
	}
	es, _ = fa.Entries(ctx, sd.TableCreditTo)
	got := map[int64]int{}
	for _, e := range es {
		got[e.Data[sd.ParamFA]]++
	}
	if len(es) != sd.CreditSlots || !reflect.DeepEqual(got, map[int64]int{1: 86, 2: 85, 3: 85}) {
		t.Errorf("%d credit_to entries over FAs %v", len(es), got)
	}
	if err := sd.New(fa).SetReachPorts(ctx, fabric); err != nil {
		t.Fatal(err)
	}
	if es, _ := fa.Entries(ctx, sd.TableReachPort); len(es) != 4 {
		t.Errorf("reach_port: %+v", es)
	}
	snap, err = sd.New(fa).FabricSnapshot(ctx, sd.ProgramFA)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ts := range snap.Tables {
		n += len(ts.Entries)
	}
	if want := 1 + 1 + sd.MaxLinks + 1 + sd.CreditSlots + 4; n != want {
		t.Errorf("the snapshot after the bring-up holds %d entries, want %d", n, want)
	}

	// The reassembly timer, in ns in the register, in the snapshot; its
	// drops per source FA.
	if err := sd.New(fa).SetReassemblyTimeout(ctx, 40*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if to, err := sd.New(fa).ReassemblyTimeout(ctx); err != nil || to != 40*time.Microsecond {
		t.Errorf("reassembly timeout %v %v, want 40us", to, err)
	}
	if err := sd.New(fa).SetFCIThreshold(ctx, 64); err != nil {
		t.Fatal(err)
	}
	if snap, err := sd.New(fa).FabricSnapshot(ctx, sd.ProgramFA); err != nil || len(snap.Registers) != 2 || snap.Registers[0].Value != 64 || snap.Registers[1].Value != 40_000 {
		t.Errorf("FA snapshot registers %+v %v, want the FCI threshold, 64, and the timeout, 40000 ns", snap.Registers, err)
	}
	for _, bad := range []time.Duration{-time.Nanosecond, time.Duration(sd.ReasmTimeoutMaxNs) + 1} {
		if err := sd.New(fa).SetReassemblyTimeout(ctx, bad); err == nil {
			t.Errorf("reassembly timeout %v accepted", bad)
		}
	}
	if err := fa.WriteRegister(ctx, sd.RegReasmDrops, 5, 7); err != nil {
		t.Fatal(err)
	}
	if d, err := sd.New(fa).ReassemblyDrops(ctx, []int{4, 5}); err != nil || !reflect.DeepEqual(d, []int64{0, 7}) {
		t.Errorf("reassembly drops %v %v, want [0 7]", d, err)
	}
	if _, err := sd.New(fa).ReassemblyDrops(ctx, []int{sd.MaxFAs}); err == nil {
		t.Error("reassembly drops of FA 256 read")
	}

	// The FE: its FCI threshold, in the snapshot.
	if err := sd.New(fe).SetFCIThreshold(ctx, int(sd.FCIThreshold(8, 256))); err != nil {
		t.Fatal(err)
	}
	if th, err := sd.New(fe).FCIThreshold(ctx); err != nil || th != 32 {
		t.Errorf("FCI threshold %d %v, want 8 frames of 256 B = 32 buffer cells", th, err)
	}
	if snap, err := sd.New(fe).FabricSnapshot(ctx, sd.ProgramFE); err != nil || len(snap.Tables) != 3 || len(snap.Registers) != 1 || snap.Registers[0].Value != 32 {
		t.Errorf("FE snapshot %+v %v", snap, err)
	}

	// Histograms, one request each; an FE has no latency histogram.
	if err := fa.WriteRegister(ctx, sd.RegLatHist, 7, 3); err != nil {
		t.Fatal(err)
	}
	h, err := sd.New(fa).LatencyHistogram(ctx)
	if err != nil || len(h) != sd.HistBuckets || h[7] != 3 || h[6] != 0 {
		t.Fatalf("latency histogram: %d buckets, [7] = %v, %v", len(h), h, err)
	}
	if err := fe.WriteRegister(ctx, sd.RegQHist, sd.HistBuckets-1, 2); err != nil {
		t.Fatal(err)
	}
	if h, err := sd.New(fe).QueueHistogram(ctx); err != nil || len(h) != sd.HistBuckets || h[sd.HistBuckets-1] != 2 {
		t.Errorf("queue histogram: %v", err)
	}
	if _, err := sd.New(fe).LatencyHistogram(ctx); !tofino.IsNotFound(err) {
		t.Errorf("an FE's latency histogram: %v, want not found", err)
	}
	// Generator applications with their cell: fa1's reachability cells
	// reach fe1 (through voa1, opened), whose age of the port they arrive
	// on falls from AgeMax.
	if v, ok := lab.World().VOA("voa1"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	if err := sd.New(fa).SetFabricID(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := sd.New(fe).SetReachPorts(ctx, []int{dev(t, lab, "fe1", "p1")}); err != nil {
		t.Fatal(err)
	}
	g := sd.Generator{AppID: 1, Port: 68, EgressPort: host, FrameBytes: 60, Period: 10 * time.Microsecond, PerBatch: 4, Batches: 100,
		Cell: sd.Cell{Kind: sd.KindReach}}
	if err := sd.New(fa).StartGenerator(ctx, g); err != nil {
		t.Fatal(err)
	}
	if st, err := fa.PktgenStatus(ctx, 1); err != nil || st.Packets == 0 {
		t.Errorf("reachability generator: %+v %v", st, err)
	}
	if l, err := sd.New(fe).FabricLinks(ctx, []int{dev(t, lab, "fe1", "p1")}, 3); err != nil || l[0].Age >= sd.AgeMax || !l[0].Valid {
		t.Errorf("fe1's link from fa1 after fa1's reachability cells: %+v %v", l, err)
	}
	if err := fa.StopPktgen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []sd.Generator{{AppID: 2, Port: 68, EgressPort: host, FrameBytes: 60, Period: time.Microsecond, PerBatch: 1, Batches: 1, Cell: sd.Cell{Kind: 4}},
		{AppID: 2, Port: 68, EgressPort: host, FrameBytes: 30, Period: time.Microsecond, PerBatch: 1, Batches: 1}} {
		if err := sd.New(fa).StartGenerator(ctx, bad); err == nil {
			t.Errorf("generator %+v accepted", bad)
		}
	}
	feports := []int{dev(t, lab, "fe1", "p1"), dev(t, lab, "fe1", "p2")}
	if d, err := sd.New(fe).QueueDrops(ctx, feports, 0); err != nil || len(d) != 2 || d[0] != 0 {
		t.Errorf("queue drops %v %v", d, err)
	}
}
