package simlab_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/experiments/attsweep"
	"testbed/experiments/fct"
	"testbed/experiments/losssweep"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
)

// A lab unlike the default bench: two attenuators of different makes, a
// traffic generator with three fibres through them, and a switch the twin
// cannot emulate yet (reported and left out, with its link).
const twinLab = `version: 1
name: bench-b
devices:
  att-a:
    kind: voa
    driver: keysight-n77xx
    address: tcp://192.0.2.10:5025
    channels: 2
    limits: {min_db: 0, max_db: 30}
  att-b:
    kind: voa
    driver: ozoptics-dd100
    address: serial:///dev/ttyUSB3?baud=9600
    limits: {min_db: 0, max_db: 50}
  gen:
    kind: trafficgen
    driver: otg
    address: https://192.0.2.20
    ports: {a1: eth1, a2: eth2, b1: eth3, b2: eth4, c1: eth5, c2: eth6}
  sw9:
    kind: switch
    driver: arista-eos
    address: ssh://admin@192.0.2.30
    ports: {p1: Ethernet1}
links:
  - name: x10
    a: {device: gen, port: a1}
    b: {device: gen, port: a2}
    transceiver: 10GBASE-SR
    fec: none
    voa: {device: att-a, channel: 2}
  - name: x25
    a: {device: gen, port: b1}
    b: {device: gen, port: b2}
    transceiver: 25GBASE-SR
    fec: rs528
    voa: {device: att-a, channel: 1}
  - name: x100
    a: {device: gen, port: c1}
    b: {device: gen, port: c2}
    transceiver: 100GBASE-SR4
    fec: rs528
    voa: {device: att-b, channel: 1}
  - name: uplink
    a: {device: gen, port: a1}
    b: {device: sw9, port: p1}
    transceiver: 10GBASE-SR
`

func TestTwinOfAnInventoryRunsAttenuationSweep(t *testing.T) {
	_, skipped, tw := startTwin(t, twinLab, "bench-b.yaml", 5)
	dir := t.TempDir()
	if len(skipped) != 1 || skipped[0].Device != "sw9" {
		t.Errorf("skipped %v, want sw9", skipped)
	}
	// The twin's inventory, written and read back as a user would.
	for _, n := range []string{"att-a", "att-b", "gen"} {
		d, ok := tw.Device(n)
		if !ok || strings.Contains(d.Address, "192.0.2.") || strings.Contains(d.Address, "ttyUSB3") {
			t.Errorf("twin's %s: %+v", n, d)
		}
	}
	if _, ok := tw.Device("sw9"); ok {
		t.Error("the twin kept sw9, which it does not emulate")
	}
	if len(tw.Links) != 3 {
		t.Errorf("twin links %d, want 3", len(tw.Links))
	}

	r := attsweep.New()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"step_db=1", "fine_step_db=0", "max_seconds=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: tw, Simulated: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatalf("run %s (%s): %v", res.Status, res.Reason, err)
	}
	var s attsweep.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	cliff := func(link string) float64 {
		l, ok := s.Links[link]
		if !ok {
			t.Fatalf("no link %s in %s", link, b)
		}
		c := l.LossCliffDB["1e-06"]
		if c == nil {
			t.Fatalf("link %s reached no 1e-6 loss: %s", link, b)
		}
		return *c
	}
	// The twin's links are the user's, through the user's channels, with
	// the default optical budget: the same cliffs as the default bench's
	// fibres of the same transceiver, FEC and attenuator model (recorded
	// in testdata with the same sweep parameters).
	var bench attsweep.Summary
	if g, err := os.ReadFile(filepath.Join("testdata", "bench", "attenuation-sweep.summary.json")); err != nil || json.Unmarshal(g, &bench) != nil {
		t.Fatalf("default bench summary: %v", err)
	}
	for twinLink, benchLink := range map[string]string{"x10": "l10g", "x25": "l25g-rs", "x100": "l100g"} {
		want := bench.Links[benchLink].LossCliffDB["1e-06"]
		if got := cliff(twinLink); want == nil || got != *want {
			t.Errorf("%s: 1e-6 loss at %v dB, the default bench's %s at %v", twinLink, got, benchLink, want)
		}
	}
	if len(s.Links) != 3 {
		t.Errorf("swept %d links, want 3: %s", len(s.Links), b)
	}
}

// Three switches in a line, joined by two fibres through the channels of
// one attenuator, and a host on each of the first two.
const twinLine = `version: 1
name: line
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
    credentials: {key_file: ~/.ssh/id_ed25519}
    ports: {p1: "136", host: "152"}
  s2:
    kind: switch
    driver: tofino-bfrt
    address: ssh://admin@192.0.2.12
    credentials: {key_file: ~/.ssh/id_ed25519}
    ports: {p1: "136", p2: "144", sink: "160", host: "152"}
  s3:
    kind: switch
    driver: tofino-bfrt
    address: ssh://admin@192.0.2.13
    credentials: {key_file: ~/.ssh/id_ed25519}
    ports: {p2: "144", sink: "160"}
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
  - name: s12
    a: {device: s1, port: p1}
    b: {device: s2, port: p1}
    transceiver: 100GBASE-SR4
    fec: none
    voa: {device: att, channel: 1}
  - name: s23
    a: {device: s2, port: p2}
    b: {device: s3, port: p2}
    transceiver: 25GBASE-SR
    fec: none
    voa: {device: att, channel: 2}
  - name: ha-s1
    a: {device: ha, port: eth1}
    b: {device: s1, port: host}
    transceiver: 100GBASE-SR4
  - name: hb-s2
    a: {device: hb, port: eth1}
    b: {device: s2, port: host}
    transceiver: 100GBASE-SR4
`

func TestTwinOfSwitchesAndHostsRunsLossSweepAndFCT(t *testing.T) {
	_, skipped, tw := startTwin(t, twinLine, "line.yaml", 7)
	dir := t.TempDir()
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	for _, link := range []string{"s12", "s23"} {
		r := losssweep.New()
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"links=" + link, "loss_rates=1e-3", "frames=200000", "calib_losses=50",
			"replace_program=true"}) // s2 receives on s12, then sends on s23
		if err != nil {
			t.Fatal(err)
		}
		eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
		res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: tw, Simulated: true, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
		if err != nil || res.Status != "ok" {
			t.Fatalf("%s: run %s (%s): %v", link, res.Status, res.Reason, err)
		}
		var s losssweep.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rates := range s.Points {
			for _, modes := range rates {
				for mode, p := range modes {
					n++
					if p.Link != link || p.ActualLoss <= 0 || p.FramesSent == 0 {
						t.Errorf("%s %s: %+v", link, mode, p)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no points in %s", link, b)
		}
	}

	// The hosts' traffic crosses s12 with its loss and protection.
	r := fct.New()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"link=s12", "sender=ha", "receiver=hb", "trials=400", "blocks=2",
		"calib_losses=50", "warmup=10", "modes=off,linkguardian", "transports=tcp", "replace_program=true"})
	if err != nil {
		t.Fatal(err)
	}
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: tw, Simulated: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil || res.Status != "ok" {
		t.Fatalf("fct: run %s (%s): %v", res.Status, res.Reason, err)
	}
	var fs fct.Summary
	if err := json.Unmarshal(b, &fs); err != nil {
		t.Fatal(err)
	}
	if off := fs.Transports["tcp"]["off"]; off.Trials != 400 || off.P50US <= 0 {
		t.Errorf("fct on the twin: %s", b)
	}
}

// startTwin starts a twin of the inventory text (written to name in a
// temporary directory, as a user's file) and returns it with what it left
// out and its written inventory, loaded back as a user would.
func startTwin(t *testing.T, text, name string, seed uint64) (*simlab.Lab, []simlab.Skipped, *inventory.Inventory) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	lab, skipped, err := simlab.StartTwin(inv, simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	data, err := lab.Inventory().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "twin.yaml")
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tw, err := inventory.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	return lab, skipped, tw
}
