package simlab

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"testbed/dut/host"
	"testbed/hostagent"
)

// The default lab's REACToR: rh1..rh24 on ports 1..24 of ocs1, each
// reached over SSH as a Linux host whose agent serves host control from
// the fabric; the bench hosts h1 and h2 are on no REACToR and say so.
func TestLabReactorHostsOverSSH(t *testing.T) {
	lab := startLab(t, 41)
	inv := lab.Inventory()
	for i := 1; i <= reactorHosts; i++ {
		name := "rh" + strconv.Itoa(i)
		d, ok := inv.Device(name)
		if !ok || d.Kind != "host" || d.Options["reactor"] != reactorName || d.Options["reactor_eps_gbps"] != "10" || d.Ports[reactorIface] != "10.20.0."+strconv.Itoa(i)+"/24" {
			t.Fatalf("%s: %+v", name, d)
		}
		l, ok := inv.Link(name + "-ocs1")
		if !ok || l.A.Device != name || l.B.Device != "ocs1" || l.B.Port != strconv.Itoa(i) || l.Transceiver != reactorXcvr {
			t.Fatalf("link of %s: %+v", name, l)
		}
	}
	if lab.ReactorFabric("rtor1") == nil || lab.ReactorHost("rh3") == nil {
		t.Fatal("no fabric")
	}
	ctx := hostTestCtx(t)
	agent := func(name string) *hostagent.Client {
		h, d := openSimHost(t, lab, name)
		if _, err := h.InstallAgent(ctx, host.AgentBinary{Path: d.Options["hostagent_amd64"], Version: hostagent.Version}); err != nil {
			t.Fatal(err)
		}
		a, err := h.StartAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return hostagent.NewClient(a.Client, a.BaseURL)
	}
	c := agent("rh3")
	st, err := c.Reactor(ctx)
	if err != nil || !st.Available || st.Backend != "simulated" {
		t.Fatalf("rh3: %+v, %v", st, err)
	}
	st, err = c.ReactorSetup(ctx, hostagent.ReactorSetup{Interface: "eth1", PFC: true, EPSBps: 1e9,
		Destinations: []hostagent.ReactorDestination{{Name: "rh1", Address: "10.20.0.1"}, {Name: "rh2", Address: "10.20.0.2"}}})
	if err != nil || len(st.Classes) != 3 || st.Classes[1].Priority != 2 || st.Setup.LinkBps != 10e9 {
		t.Fatalf("setup: %+v, %v", st, err)
	}
	h1 := agent("h1")
	st, err = h1.Reactor(ctx)
	if err != nil || st.Available || !strings.Contains(st.Reason, "not to a REACToR") {
		t.Errorf("h1: %+v, %v", st, err)
	}
	if _, err := h1.ReactorSetup(ctx, hostagent.ReactorSetup{Interface: "eth1", EPSBps: 1e9,
		Destinations: []hostagent.ReactorDestination{{Name: "h2", Address: "10.0.0.2"}}}); !errors.Is(err, hostagent.ErrNotAvailable) {
		t.Errorf("h1 setup: %v", err)
	}
	// The dry-run inventory lists the same devices.
	dry := DefaultInventory()
	if _, ok := dry.Device("rh24"); !ok {
		t.Error("dry-run inventory without rh24")
	}
	if _, ok := dry.Link("rh24-ocs1"); !ok {
		t.Error("dry-run inventory without rh24's link")
	}
}
