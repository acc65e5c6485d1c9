package orchestrator

import (
	"strings"
	"testing"

	"testbed/inventory"
)

const lab = `version: 1
name: t
devices:
  voa1: {kind: voa, driver: keysight-n77xx, address: "tcp://127.0.0.1:5025", channels: 4, limits: {min_db: 0, max_db: 30}}
  tg1: {kind: trafficgen, driver: otg, address: "http://127.0.0.1:1", ports: {p1: a, p2: b, p3: c, p4: d}}
  tg2: {kind: trafficgen, driver: otg, address: "http://127.0.0.1:2", ports: {q1: a}}
  sw1: {kind: switch, driver: tofino, address: "ssh://root@127.0.0.1:22"}
  sw2: {kind: switch, driver: tofino, address: "ssh://root@127.0.0.1:23"}
links:
  - {name: ok, a: {device: tg1, port: p1}, b: {device: tg1, port: p2}, transceiver: 25GBASE-SR, voa: {device: voa1, channel: 1}}
  - {name: novoa, a: {device: tg1, port: p3}, b: {device: tg1, port: p4}, transceiver: 25GBASE-SR}
  - {name: split, a: {device: tg1, port: p3}, b: {device: tg2, port: q1}, transceiver: 25GBASE-SR, voa: {device: voa1, channel: 2}}
  - {name: toswitch, a: {device: sw1, port: "1"}, b: {device: tg1, port: p4}, transceiver: 25GBASE-SR, voa: {device: voa1, channel: 3}}
  - {name: fabric, a: {device: sw1, port: "2"}, b: {device: sw2, port: "2"}, transceiver: 25GBASE-SR, voa: {device: voa1, channel: 4}}
`

func TestBindLinksExplainsMisfits(t *testing.T) {
	inv, err := inventory.Parse("lab.yaml", []byte(lab))
	if err != nil {
		t.Fatal(err)
	}
	needs := LinkNeeds{VOA: true, EndsOn: "trafficgen"}
	links, binds, err := BindLinks(inv, "link", nil, needs)
	if err != nil || len(links) != 1 || links[0].Name != "ok" || !strings.Contains(binds[0].Detail, "voa voa1 ch1") {
		t.Fatalf("default binding: %v %v %v", links, binds, err)
	}
	_, _, err = BindLinks(inv, "link", []string{"novoa", "split", "toswitch", "nope"}, needs)
	for _, want := range []string{"link novoa cannot serve as link: no voa on it", "ends are on two different trafficgens (tg1, tg2)",
		"end a is on sw1, a switch", `no link "nope"`, "lab.yaml:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	// A switch-to-switch link: the ends on two different switches.
	across := LinkNeeds{VOA: true, Across: "switch"}
	_, _, err = BindLinks(inv, "link", []string{"ok", "toswitch"}, across)
	for _, want := range []string{"end a is on tg1, a trafficgen", "end b is on tg1, a trafficgen"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("switch-to-switch binding does not say %q:\n%v", want, err)
		}
	}
	if links, _, err := BindLinks(inv, "link", nil, across); err != nil || len(links) != 1 || links[0].Name != "fabric" {
		t.Errorf("switch-to-switch default binding: %v %v", links, err)
	}
	empty, _ := inventory.Parse("empty.yaml", []byte("version: 1\nname: e\ndevices: {}\n"))
	if _, _, err := BindLinks(empty, "link", nil, needs); err == nil || !strings.Contains(err.Error(), "lists no links") {
		t.Errorf("empty lab: %v", err)
	}
}

func TestPlanChecksAttenuationLimits(t *testing.T) {
	inv, _ := inventory.Parse("lab.yaml", []byte(lab))
	pc := &PlanContext{Lab: inv}
	if err := pc.CheckAttenuation("voa1", 1, 12); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dev  string
		ch   int
		db   float64
		want string
	}{{"voa1", 1, 31, "outside the limits [0.00, 30.00] dB"}, {"voa1", 5, 1, "has no channel 5"}, {"tg1", 1, 1, "not a voa"}, {"x", 1, 1, `no device "x"`}} {
		if err := pc.CheckAttenuation(c.dev, c.ch, c.db); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := CheckDrivers(inv); err == nil || !strings.Contains(err.Error(), `devices.sw1.driver: unknown switch driver "tofino" (known: tofino-bfrt, tofino-bfrt-grpc)`) {
		t.Errorf("CheckDrivers: %v", err)
	}
}
