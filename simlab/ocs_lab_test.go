package simlab

import (
	"encoding/json"
	"net/http"
	"strings"
	"testbed/simlab/ocs"
	"testing"
	"time"
)

func TestLabHasBothCircuitSwitches(t *testing.T) {
	l, err := StartDefault(Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	inv := l.Inventory()
	d1, ok1 := inv.Device("ocs1")
	d2, ok2 := inv.Device("ocs2")
	if !ok1 || !ok2 || d1.Kind != "ocs" || d1.Driver != "mordia-rest" || d2.Driver != "polatis-scpi" {
		t.Fatalf("inventory: %+v %+v", d1, d2)
	}
	if d1.Address != l.MordiaServer("ocs1").Addr() || !strings.HasPrefix(d2.Address, "tcp://127.0.0.1:") {
		t.Fatalf("addresses %s %s", d1.Address, d2.Address)
	}
	// The emulator was built from the inventory entry.
	m := l.MicroOCS("ocs1")
	if o := m.Options(); o.Ports != 24 || !o.Mechanism || m.Switching() == nil || o.Gap.Max > 15*time.Microsecond || o.MinSlot != 40*time.Microsecond || o.Serial != "MOR000004" {
		t.Fatalf("ocs1 options %+v", o)
	}
	if o := l.PolatisSwitch("ocs2").Options(); o.Ingress != 16 || o.SwitchTime != 25*time.Millisecond {
		t.Fatalf("ocs2 options %+v", o)
	}
	resp, err := http.Get(d1.Address + "/v1/system")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sys struct {
		Ports int    `json:"ports"`
		Model string `json:"model"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sys); err != nil || sys.Ports != 24 || sys.Model != "Mordia-24" {
		t.Fatalf("GET /v1/system: %+v %v", sys, err)
	}
	if l.Faults("ocs1") == nil || l.Faults("ocs2") == nil {
		t.Fatal("no fault injectors for the switches")
	}
	if d, ok := DefaultInventory().Device("ocs1"); !ok || d.Options["reconfig_dist"] != "mordia" {
		t.Fatalf("dry-run inventory: %+v", d)
	}
}

func TestMicroOCSFromDeviceOptions(t *testing.T) {
	for _, n := range []string{ocsMicroName, ocsMilliName} {
		d, _ := DefaultInventory().Device(n)
		d.Options["reconfig_sd_us"] = "-1"
		if d.Driver == "mordia-rest" {
			if _, err := ocs.MicroOCSFromDevice(d); err == nil || !strings.Contains(err.Error(), "ocs1") || !strings.Contains(err.Error(), "reconfig_sd_us") {
				t.Errorf("a law's option beside the mechanism: %v", err)
			}
			d.Options["reconfig_dist"] = "truncnormal"
			if _, err := ocs.MicroOCSFromDevice(d); err == nil || !strings.Contains(err.Error(), "ocs1") {
				t.Errorf("bad gap option: %v", err)
			}
			d.Options["reconfig_dist"], d.Options["temperature_c"] = "mordia", "200"
			delete(d.Options, "reconfig_sd_us")
			if _, err := ocs.MicroOCSFromDevice(d); err == nil || !strings.Contains(err.Error(), "temperature_c") {
				t.Errorf("bad temperature: %v", err)
			}
		}
		d.Options["ports"] = "16by16"
		if d.Driver == "polatis-scpi" {
			if _, err := ocs.PolatisFromDevice(d); err == nil || !strings.Contains(err.Error(), "ports") {
				t.Errorf("bad ports option: %v", err)
			}
		}
	}
}
