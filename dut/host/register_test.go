package host

import (
	"testing"
	"time"

	"testbed/drivers"
	"testbed/transport"
)

// The inventory's options of a linux-ssh host become the driver's Options.
func TestOptionsFromTheInventory(t *testing.T) {
	c := drivers.Config{Name: "h1", Kind: Kind, Driver: "linux-ssh", Timeout: 7 * time.Second,
		Options: map[string]string{"agent_dir": "/opt/testbed/bin", "sysctl": "/usr/sbin/sysctl", "hostagent_arm64": "/srv/hostagent-arm64",
			"hostagent_amd64": "/srv/hostagent-amd64", "hostagent_version": "1.0.0", "hostagent_source": "/src/testbed"},
		SSH: func() (transport.SSHOptions, error) {
			return transport.SSHOptions{KeyFile: "/etc/testbed/id_ed25519", KnownHosts: "/etc/testbed/known_hosts"}, nil
		}}
	o, err := optionsOf(c)
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "h1" || o.Timeout != 7*time.Second || o.SSH.KeyFile != "/etc/testbed/id_ed25519" || o.SSH.KnownHosts != "/etc/testbed/known_hosts" ||
		o.AgentDir != "/opt/testbed/bin" || o.Sysctl != "/usr/sbin/sysctl" || o.IP != "" {
		t.Fatalf("options %+v", o)
	}
	a := o.Agent
	if len(a.Prebuilt) != 2 || a.Prebuilt["arm64"] != "/srv/hostagent-arm64" || a.Prebuilt["amd64"] != "/srv/hostagent-amd64" || a.Version != "1.0.0" || a.ModuleDir != "/src/testbed" {
		t.Fatalf("agent source %+v", a)
	}
}
