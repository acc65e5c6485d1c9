package simlab

import (
	"fmt"
	"strings"
	"testing"

	"testbed/inventory"
)

// The simulated hosts follow one island of switches' clock: a host whose
// switch shares no fibre path with the other hosts' switches is refused,
// saying why, not run on a clock its traffic does not cross.
func TestHostsOnTwoIslandsAreRefused(t *testing.T) {
	sw := func(name string, n int) string {
		return fmt.Sprintf(`    %s:
        kind: switch
        driver: tofino-bfrt
        address: ssh://admin@127.0.0.1:22%02d
        ports: {host: "152"}
`, name, n)
	}
	host := func(name, addr string, n int) string {
		return fmt.Sprintf(`    %s:
        kind: host
        driver: linux-ssh
        address: ssh://testbed@127.0.0.1:22%02d
        ports: {eth1: %s}
`, name, n, addr)
	}
	link := func(h, s string) string {
		return fmt.Sprintf(`    - name: %s-%s
      a: {device: %s, port: eth1}
      b: {device: %s, port: host}
      transceiver: 100GBASE-SR4
      fec: rs528
`, h, s, h, s)
	}
	doc := "version: 1\nname: islands\ndevices:\n" + sw("sw1", 1) + sw("sw3", 3) + host("h1", "10.0.0.1/24", 11) + host("h3", "10.0.0.3/24", 13) +
		"links:\n" + link("h1", "sw1") + link("h3", "sw3")
	inv, err := inventory.Parse("islands.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	lab, _, err := StartTwin(inv, Options{Seed: 1})
	if err == nil {
		lab.Close()
		t.Fatal("hosts on switches joined by no fibre started")
	}
	if !strings.Contains(err.Error(), "joined by no fibres to the switches of the lab's other hosts") {
		t.Errorf("error %v, want why", err)
	}
}
