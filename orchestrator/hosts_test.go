package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"testbed/inventory"
)

const hostLab = `version: 1
name: hosts
devices:
  h1:
    kind: host
    driver: linux-ssh
    address: ssh://lab@10.0.0.21
    credentials: {key_file: /etc/testbed/id_ed25519}
    options:
      known_hosts: /etc/testbed/known_hosts
      agent_dir: /opt/testbed/bin
      sysctl: /usr/sbin/sysctl
      hostagent_arm64: /srv/hostagent-arm64
      hostagent_amd64: /srv/hostagent-amd64
      hostagent_version: "1.0.0"
      hostagent_source: /src/testbed
  h2:
    kind: host
    driver: windows-rdp
    address: ssh://lab@10.0.0.22
`

func TestHostsInTheInventory(t *testing.T) {
	inv, err := inventory.Parse("lab.yaml", []byte(hostLab))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckDrivers(inv)
	if err == nil || strings.Contains(err.Error(), "h1") || !strings.Contains(err.Error(), `unknown host driver "windows-rdp" (known: linux-ssh)`) {
		t.Fatalf("driver check: %v", err)
	}
	d, _ := inv.Device("h1")
	c := DriverConfig(d, nil)
	so, err := c.SSH()
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "h1" || c.Kind != "host" || c.Driver != "linux-ssh" || so.KeyFile != "/etc/testbed/id_ed25519" || so.KnownHosts != "/etc/testbed/known_hosts" ||
		c.Options["agent_dir"] != "/opt/testbed/bin" || c.Options["hostagent_version"] != "1.0.0" {
		t.Fatalf("config %+v, ssh %+v", c, so)
	}
}

func TestOpenHostNamesTheDevice(t *testing.T) {
	inv, err := inventory.Parse("lab.yaml", []byte(strings.Replace(hostLab, "ssh://lab@10.0.0.21", "ssh://lab@127.0.0.1:1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := inv.Device("h1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// No known_hosts file: refused before any connection is tried.
	_, err = OpenDevice(ctx, d, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "h1: ") || strings.Count(err.Error(), "h1:") != 1 || !strings.Contains(err.Error(), "known_hosts") || !strings.HasSuffix(err.Error(), "(opening linux-ssh at ssh://lab@127.0.0.1:1)") {
		t.Fatalf("open: %v", err)
	}
}
