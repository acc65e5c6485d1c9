package tofino_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"testbed/dut/tofino"
	sd "testbed/p4/stardust"
)

// The Stardust control plane through the driver, against simulated
// switches running the deployed programs: the spraying table read back as
// reachability, and a link taken out of it once its port is down or its
// reachability age reaches th, while a destination keeps the links that
// are left. The simulated switch has no Stardust dataplane: the test
// writes the age register the program's aging ticks would.
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

	// Two ticks without a reachability cell: still valid with th 3.
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
