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

	if err := fa.SetSpray(ctx, 3, []int{p2, p1}); err != nil {
		t.Fatal(err)
	}
	if err := fa.SetSpray(ctx, 4, []int{p1}); err != nil {
		t.Fatal(err)
	}
	r, err := fa.Reachability(ctx)
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
	out, err := fa.HealSpray(ctx, []int{p1, p2}, 3, []int{3, 4})
	if err != nil || len(out) != 0 {
		t.Fatalf("heal at age 2 took out %v (%v)", out, err)
	}
	links, err := fa.FabricLinks(ctx, []int{p1, p2}, 3)
	if err != nil || !links[0].Up || links[0].Age != 2 || !links[0].Valid || !links[1].Valid {
		t.Fatalf("p1 at age 2, p2 at 0: %+v %v", links, err)
	}
	// The third tick: p1 leaves every destination that has another link.
	if err := fa.WriteRegister(ctx, sd.RegReachAge, p1, 3); err != nil {
		t.Fatal(err)
	}
	out, err = fa.HealSpray(ctx, []int{p1, p2}, 3, []int{3, 4})
	if err != nil || !reflect.DeepEqual(out, []int{p1}) {
		t.Fatalf("heal took out %v (%v), want [%d]", out, err, p1)
	}
	r, _ = fa.Reachability(ctx)
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
	if l, err := fa.FabricLinks(ctx, []int{p1, p2}, 3); err != nil || l[0].Up || l[0].Valid || l[1].Valid {
		t.Errorf("dark fibres: %+v %v", l, err)
	}
	if out, err := fa.HealSpray(ctx, []int{p1, p2}, 3, []int{3, 4}); err != nil || len(out) != 2 {
		t.Errorf("dark fibres: heal took out %v (%v)", out, err)
	}
	if r, _ := fa.Reachability(ctx); !reflect.DeepEqual(r, map[int][]int{3: {p2}, 4: {p1}}) {
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
	if l, err := fa.FabricLinks(ctx, []int{p1}, 3); err != nil || !l[0].Valid {
		t.Errorf("p1 at age 0: %+v %v", l, err)
	}
	if _, err := fa.FabricLinks(ctx, []int{p1}, 0); err == nil {
		t.Error("th 0 accepted")
	}
	if err := fa.SetSpray(ctx, sd.MaxFAs, []int{p1}); err == nil {
		t.Error("FA 256 accepted")
	}
	// Counters by VOQ and port read through the contract's registers.
	if err := fa.WriteRegister(ctx, sd.RegCredit, 7, 5); err != nil {
		t.Fatal(err)
	}
	if v, err := fa.VOQCredits(ctx, []int{7, 8}); err != nil || v[0] != 5 || v[1] != 0 {
		t.Errorf("VOQ credits %v %v", v, err)
	}
	if _, err := fe.VOQCredits(ctx, []int{7}); !tofino.IsNotFound(err) {
		t.Errorf("VOQ credits of an FE: %v, want not found (the FE has no VOQs)", err)
	}
}

// The Stardust bench (simlab/benches/stardust.yaml) as a twin: every FA
// sees its four fabric links up through its FEs once both ends run the
// programs; darkening one of fa1's fibres at voa1 takes that link down,
// and healing takes it out of every destination's spraying slots.
func TestStardustBenchThroughTheDriver(t *testing.T) {
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
	for _, name := range []string{"fa1", "fa2", "fe1", "fe2", "fe3", "fe4"} {
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
		ls, err := sws[name].FabricLinks(ctx, fabric, 3)
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
		if err := fa1.SetSpray(ctx, d, fabric); err != nil {
			t.Fatal(err)
		}
	}
	// fa1-fe2's fibre goes dark.
	v, _ := lab.World().VOA("voa1")
	v.Channels[1].SetShutter(false)
	out, err := fa1.HealSpray(ctx, fabric, 3, []int{1, 2, 3, 4, 5, 6, 7})
	if err != nil || !reflect.DeepEqual(out, []int{fabric[1]}) {
		t.Fatalf("heal took out %v (%v), want fa1's p2 (%d)", out, err, fabric[1])
	}
	r, _ := fa1.Reachability(ctx)
	for d := 1; d < 8; d++ {
		if want := []int{fabric[0], fabric[2], fabric[3]}; !reflect.DeepEqual(r[d], want) {
			t.Errorf("FA %d over %v, want %v", d, r[d], want)
		}
	}
	// fa2's links do not cross voa1: all still valid.
	if ls, err := sws["fa2"].FabricLinks(ctx, fabric, 3); err != nil || !ls[1].Valid {
		t.Errorf("fa2's link to fe2: %+v %v", ls, err)
	}
}
