package orchestrator

import (
	"strings"
	"testing"

	"testbed/inventory"
)

// pair is a topology like fct's: two switches joined by a fibre with a
// VOA, a host with the hostagent on each.
var pair = Topology{
	Roles: []Role{{Name: "tx", Kind: "switch"}, {Name: "rx", Kind: "switch"},
		{Name: "client", Kind: "host", Capabilities: []string{"hostagent"}}, {Name: "server", Kind: "host", Capabilities: []string{"hostagent"}}},
	Links: []LinkRole{{Name: "link", A: "tx", B: "rx", VOA: true}, {Name: "client-cable", A: "client", B: "tx"}, {Name: "server-cable", A: "server", B: "rx"}},
}

const pairLab = `version: 1
name: t
devices:
  voa1: {kind: voa, driver: keysight-n77xx, address: "tcp://127.0.0.1:5025", channels: 4}
  sw1: {kind: switch, driver: tofino-bfrt, address: "ssh://root@127.0.0.1:22"}
  sw2: {kind: switch, driver: tofino-bfrt, address: "ssh://root@127.0.0.1:23"}
  h1: {kind: host, driver: linux-ssh, address: "ssh://lab@127.0.0.1:24", ports: {eth0: 10.0.0.1/24}}
  h2: {kind: host, driver: linux-ssh, address: "ssh://lab@127.0.0.1:25", ports: {eth0: 10.0.0.2/24}}
links:
  - {name: lg, a: {device: sw1, port: "1"}, b: {device: sw2, port: "1"}, transceiver: 25GBASE-SR, voa: {device: voa1, channel: 1}}
  - {name: c1, a: {device: h1, port: eth0}, b: {device: sw1, port: "2"}, transceiver: 25GBASE-SR}
  - {name: c2, a: {device: h2, port: eth0}, b: {device: sw2, port: "2"}, transceiver: 25GBASE-SR}
`

func parseLab(t *testing.T, y string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("lab.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// A lab that fits is bound: every role a distinct device, every link role
// an inventory link between its roles' devices.
func TestBindFindsTheTopology(t *testing.T) {
	a, err := pair.Bind(parseLab(t, pairLab))
	if err != nil {
		t.Fatal(err)
	}
	d := a.Devices
	if d["tx"] == d["rx"] || d["client"] == d["server"] || a.Links["link"] == nil || a.Links["link"].Name != "lg" {
		t.Fatalf("assignment %v, links %v", d, a.Links)
	}
	// The client's cable ends on the client and the tx switch.
	if c := a.Links["client-cable"]; c == nil || !(c.A.Device == d["client"] && c.B.Device == d["tx"] || c.B.Device == d["client"] && c.A.Device == d["tx"]) {
		t.Fatalf("client cable %+v for %v", c, d)
	}
}

// A lab that lacks a role is told which role, of what kind, and why its
// devices do not serve; one that has the devices but not their links is
// told which link is missing between which candidates.
func TestBindExplainsAMisfit(t *testing.T) {
	noHosts := parseLab(t, strings.Split(pairLab, "  h1:")[0]+"links:\n  - {name: lg, a: {device: sw1, port: \"1\"}, b: {device: sw2, port: \"1\"}, transceiver: 25GBASE-SR, voa: {device: voa1, channel: 1}}\n")
	_, err := pair.Bind(noHosts)
	for _, want := range []string{"cannot serve this recipe", "role client needs a host whose driver has hostagent", "the lab has no device of kind host", "role server"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a lab without hosts: %v, want it to say %q", err, want)
		}
	}
	noVOA := parseLab(t, strings.Replace(pairLab, ", voa: {device: voa1, channel: 1}", "", 1))
	_, err = pair.Bind(noVOA)
	for _, want := range []string{"no assignment of its devices to the roles has every link", "link link (tx <-> rx, with a VOA) was missing for", "tx=sw1, rx=sw2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a lab without the VOA: %v, want it to say %q", err, want)
		}
	}
	wrongDriver := parseLab(t, strings.Replace(pairLab, "h2: {kind: host, driver: linux-ssh", "h2: {kind: host, driver: windows-rdp", 1))
	_, err = pair.Bind(wrongDriver)
	for _, want := range []string{"roles client, server need 2 different devices of kind host whose driver has hostagent; the lab has 1 (h1)", "h2 (driver windows-rdp) lacks hostagent"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a lab with one host that runs the hostagent: %v, want it to say %q", err, want)
		}
	}
}
