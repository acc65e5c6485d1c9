package inventory

import (
	"strings"
	"testing"
)

// A host is cabled to a switch port by a link; its ports are its
// interfaces with their addresses.
const withHosts = `version: 1
name: bench-h
devices:
  sw1:
    kind: switch
    driver: tofino-bfrt
    address: ssh://admin@10.0.0.21
    ports: {host: "152"}
  h1:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@10.0.0.31
    credentials: {key_file: ~/.ssh/id_ed25519}
    options: {known_hosts: ~/.ssh/known_hosts}
    ports: {eth1: 10.0.0.1/24}
links:
  - name: h1-sw1
    a: {device: h1, port: eth1}
    b: {device: sw1, port: host}
    transceiver: 100GBASE-SR4
`

func TestHostPortsAreAddresses(t *testing.T) {
	inv, err := Load(write(t, "lab.yaml", withHosts))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := inv.Device("h1"); d.Ports["eth1"] != "10.0.0.1/24" {
		t.Errorf("h1 ports %v", d.Ports)
	}
	for _, bad := range []string{"10.0.0.1", "eth1", "10.0.0.300/24"} {
		_, err := Load(write(t, "lab.yaml", strings.Replace(withHosts, "10.0.0.1/24", bad, 1)))
		if err == nil || !strings.Contains(err.Error(), "devices.h1.ports.eth1") || !strings.Contains(err.Error(), "prefix length") {
			t.Errorf("port %q: %v", bad, err)
		}
	}
}
