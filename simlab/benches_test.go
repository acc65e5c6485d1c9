package simlab

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// The running default bench is benches/default.yaml with the addresses of
// its emulators: the same devices, drivers, ports and links; only
// addresses, key files and the paths the hosts' agent is installed from
// differ, and the circuit switches' serials, which follow the seed.
func TestDefaultBenchIsTheFile(t *testing.T) {
	lab, err := StartDefault(Options{Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	file, run := DefaultInventory(), lab.Inventory()
	if len(file.DeviceNames()) < 10 || !slices.Equal(file.DeviceNames(), run.DeviceNames()) {
		t.Fatalf("devices: file %v, running %v", file.DeviceNames(), run.DeviceNames())
	}
	rewritten := map[string]bool{"known_hosts": true, "hostagent_amd64": true, "hostagent_source": true, "serial": true}
	for _, n := range file.DeviceNames() {
		f, r := file.Devices[n], run.Devices[n]
		if f.Kind != r.Kind || f.Driver != r.Driver || f.Channels != r.Channels || !maps.Equal(f.Ports, r.Ports) || f.Description != r.Description {
			t.Errorf("%s: file %+v, running %+v", n, f, r)
		}
		if f.Address == r.Address {
			t.Errorf("%s: still at the file's placeholder %s", n, f.Address)
		}
		for k, v := range f.Options {
			if !rewritten[k] && r.Options[k] != v {
				t.Errorf("%s: option %s %q, running %q", n, k, v, r.Options[k])
			}
		}
	}
	if s := run.Devices["ocs1"].Options["serial"]; s != "MOR000012" || lab.MicroOCS("ocs1").Options().Serial != s {
		t.Errorf("ocs1 serial %s, emulator %s; want MOR000012 for seed 12", s, lab.MicroOCS("ocs1").Options().Serial)
	}
	if len(file.Links) != len(run.Links) {
		t.Fatalf("links: file %d, running %d", len(file.Links), len(run.Links))
	}
	for i, fl := range file.Links {
		rl := run.Links[i]
		if fl.Name != rl.Name || fl.A != rl.A || fl.B != rl.B || fl.Transceiver != rl.Transceiver || fl.FEC != rl.FEC || fl.DataPath != rl.DataPath {
			t.Errorf("link %d: file %+v, running %+v", i, fl, rl)
		}
	}
	if f, ok := lab.HostNet().RouteOf("sw1", "sw2"); !ok || f != hostFibre {
		t.Errorf("h1 -> h2 traffic over %q, want %s", f, hostFibre)
	}
}

func TestBenchNames(t *testing.T) {
	if names := BenchNames(); len(names) == 0 || names[0] != "default" {
		t.Errorf("benches %v", names)
	}
	if _, err := Bench("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "default") {
		t.Errorf("unknown bench: %v", err)
	}
}
