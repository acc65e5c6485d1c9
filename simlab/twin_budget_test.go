package simlab_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/experiments/attsweep"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
	"testbed/simlab/physics"
)

// Four like fibres through the channels of one attenuator; three of them
// say in their options that they are longer or better patched than the
// bench's default cords (1.0 dB before the VOA, 0.5 dB after it).
const twinBudget = `version: 1
name: budget
devices:
  att:
    kind: voa
    driver: keysight-n77xx
    address: tcp://192.0.2.10:5025
    channels: 4
  gen:
    kind: trafficgen
    driver: otg
    address: https://192.0.2.20
    ports: {a1: eth1, a2: eth2, b1: eth3, b2: eth4, c1: eth5, c2: eth6, d1: eth7, d2: eth8}
links:
  - name: short
    a: {device: gen, port: a1}
    b: {device: gen, port: a2}
    transceiver: 10GBASE-SR
    voa: {device: att, channel: 1}
  - name: long
    a: {device: gen, port: b1}
    b: {device: gen, port: b2}
    transceiver: 10GBASE-SR
    voa: {device: att, channel: 2}
    options: {fibre_length_m: "400", fibre_type: OM4}
  - name: patched
    a: {device: gen, port: c1}
    b: {device: gen, port: c2}
    transceiver: 10GBASE-SR
    voa: {device: att, channel: 3}
    options: {loss_before_voa_db: "2.0", loss_after_voa_db: "1.5"}
  - name: both
    a: {device: gen, port: d1}
    b: {device: gen, port: d2}
    transceiver: 10GBASE-SR
    voa: {device: att, channel: 4}
    options: {fibre_length_m: "200", fibre_type: OM3, loss_before_voa_db: "1.5"}
`

// The links' options are the twin's fibres: extra fibre (3.5 dB/km of
// OM3/OM4 at 850 nm) and extra connector loss move the attenuation-sweep
// cliff down by as many dB.
func TestTwinLinkOptionsShiftTheCliff(t *testing.T) {
	_, _, tw := startTwin(t, twinBudget, "budget.yaml", 3)
	dir := t.TempDir()
	if l, _ := tw.Link("both"); l.FibreLengthM != 200 || l.FibreType != "OM3" {
		t.Fatalf("the twin's inventory lost the link's options: %+v", l)
	}

	r := attsweep.New()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"step_db=0.5", "fine_step_db=0.1", "max_seconds=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: tw, Simulated: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil || res.Status != "ok" {
		t.Fatalf("run %s (%s): %v", res.Status, res.Reason, err)
	}
	var s attsweep.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	cliff := func(link, rate string) float64 {
		c := s.Links[link].LossCliffDB[rate]
		if c == nil {
			t.Fatalf("link %s reached no %s loss: %s", link, rate, b)
		}
		return *c
	}
	// A fibre run also closes the eye: its dispersion penalty moves the
	// cliff too (physics/fibre.go), by what the optics model says for
	// that fibre and length, not by its attenuation alone.
	tr, err := physics.TransceiverByName("10GBASE-SR")
	if err != nil {
		t.Fatal(err)
	}
	pen := func(fibre string, m float64) float64 {
		f, err := physics.FibreByName(fibre)
		if err != nil {
			t.Fatal(err)
		}
		return tr.DispersionPenaltyDB(f, m)
	}
	shifts := map[string]float64{
		"long":    1.4 + pen("OM4", 400),       // 400 m x 3.5 dB/km, and the eye
		"patched": 1.0 + 1.0,                   // 1 dB more before the VOA, 1 dB more after it
		"both":    0.5 + 0.7 + pen("OM3", 200), // 0.5 dB more before, 200 m of OM3 after
	}
	if shifts["long"] < 1.4+0.5 || shifts["both"] < 1.2+0.5 {
		t.Fatalf("the fibres' eye penalties are too small to tell apart from their loss: %v", shifts)
	}
	// The points lie on a 0.1 dB grid and each is a finite count of
	// frames: 1e-3 is seen to within one refinement step; 1e-6, a few
	// lost frames in half a second of 10G traffic, to within three (the
	// same fibres with no options differ by up to 0.3 dB at 1e-6).
	for rate, tol := range map[string]float64{"1e-06": 0.3, "1e-03": 0.1} {
		ref := cliff("short", rate)
		for link, shift := range shifts {
			if got := cliff(link, rate); math.Abs(ref-got-shift) > tol+1e-9 {
				t.Errorf("%s: %s loss at %.2f dB, %.2f dB below short's %.2f; want %.2f below", link, rate, got, ref-got, ref, shift)
			}
		}
	}
}

// Two switches joined by two fibres: host traffic crosses the one marked
// data_path, else the last listed.
const twinPair = `version: 1
name: pair
devices:
  att:
    kind: voa
    driver: keysight-n77xx
    address: tcp://192.0.2.10:5025
    channels: 2
  s1:
    kind: switch
    driver: tofino-bfrt
    address: ssh://admin@192.0.2.11
    ports: {p1: "136", p2: "144", host: "152"}
  s2:
    kind: switch
    driver: tofino-bfrt
    address: ssh://admin@192.0.2.12
    ports: {p1: "136", p2: "144", sink: "160", host: "152"}
  ha:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@192.0.2.21
    ports: {eth1: 10.0.0.1/24}
  hb:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@192.0.2.22
    ports: {eth1: 10.0.0.2/24}
links:
  - name: first
    a: {device: s1, port: p1}
    b: {device: s2, port: p1}
    transceiver: 100GBASE-SR4
    voa: {device: att, channel: 1}
    options: {data_path: "true"}
  - name: second
    a: {device: s1, port: p2}
    b: {device: s2, port: p2}
    transceiver: 25GBASE-SR
    voa: {device: att, channel: 2}
  - {name: ha-s1, a: {device: ha, port: eth1}, b: {device: s1, port: host}, transceiver: 100GBASE-SR4}
  - {name: hb-s2, a: {device: hb, port: eth1}, b: {device: s2, port: host}, transceiver: 100GBASE-SR4}
`

func TestTwinRoutesHostsOverTheDataPathLink(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"marked", twinPair, "first"},
		{"unmarked", strings.Replace(twinPair, `    options: {data_path: "true"}`+"\n", "", 1), "second"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "pair.yaml")
			if err := os.WriteFile(src, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			inv, err := inventory.Load(src)
			if err != nil {
				t.Fatal(err)
			}
			lab, _, err := simlab.StartTwin(inv, simlab.Options{Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer lab.Close()
			if got, ok := lab.HostNet().RouteOf("s1", "s2"); !ok || got != c.want {
				t.Errorf("s1 -> s2 host traffic over %q (%v), want %s", got, ok, c.want)
			}
		})
	}
}
