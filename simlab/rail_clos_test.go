package simlab

import (
	"math"
	"testing"
)

// The RAIL Clos bench starts whole, and its fibres' losses and eye
// penalties come from their lengths, types and connectors: a longer run
// of the same optics costs more, OM4 less than OM3 for the same length, a
// dirty connector shows as light lost before the VOA, and the dispersion
// penalty is not light (the received power does not include it).
func TestRailClosBench(t *testing.T) {
	lab, err := StartBench("rail-clos", Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	inv := lab.Inventory()
	if n := len(inv.Links); n != 16 {
		t.Fatalf("%d links, want 16 (4 ToRs x 2 aggregation, 2 cores x 4 aggregation)", n)
	}
	roles := map[string]int{}
	for _, n := range inv.DeviceNames() {
		if d, _ := inv.Device(n); d.Kind == "switch" {
			roles[d.Options["role"]]++
			if lab.Switch(n) == nil {
				t.Errorf("%s: no emulator", n)
			}
		}
	}
	if roles["tor"] != 4 || roles["agg"] != 4 || roles["core"] != 2 {
		t.Errorf("roles %v", roles)
	}
	// An N7764A powers up with its shutters closed.
	for _, v := range []string{"voa1", "voa2", "voa3", "voa4"} {
		w, ok := lab.World().VOA(v)
		if !ok {
			t.Fatalf("no %s", v)
		}
		for _, c := range w.Channels {
			c.SetShutter(true)
		}
	}
	fib := func(name string) (rx, eye float64) {
		f, ok := lab.World().Fibre(name)
		if !ok {
			t.Fatalf("no fibre %s", name)
		}
		return f.RxPowerDBm(), f.EyePowerDBm()
	}
	short, shortEye := fib("t1-a1") // 30 m of OM3
	long, longEye := fib("t4-a4")   // 510 m of OM3
	// 480 m more of OM3 at 3.5 dB/km: 1.68 dB less light.
	if d := short - long; math.Abs(d-1.68) > 0.01 {
		t.Errorf("t1-a1 %.2f dBm, t4-a4 %.2f dBm: %.3f dB apart, want 1.68", short, long, d)
	}
	if ps, pl := short-shortEye, long-longEye; !(ps >= 0 && ps < 0.1 && pl > 2) {
		t.Errorf("dispersion penalties: 30 m %.2f dB, 460 m %.2f dB", ps, pl)
	}
	dirty, _ := fib("t2-a2") // 250 m, 7.5 dB of dirty connector
	mid, _ := fib("t2-a1")   // 120 m
	if d := mid - dirty; math.Abs(d-(7.5+0.455)) > 0.01 {
		t.Errorf("t2-a1 %.2f dBm, t2-a2 %.2f dBm: %.3f dB apart, want 7.955", mid, dirty, d)
	}
	om3, om3Eye := fib("c2-a3") // 100GBASE-SR4, 70 m OM3
	om4, om4Eye := fib("c2-a2") // 60 m OM4
	if !(om3-om3Eye > om4-om4Eye) {
		t.Errorf("100G-SR4 penalties: 70 m OM3 %.2f dB, 60 m OM4 %.2f dB", om3-om3Eye, om4-om4Eye)
	}
}
