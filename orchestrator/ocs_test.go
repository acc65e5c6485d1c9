package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"testbed/instruments/ocs"
	"testbed/inventory"
	simocs "testbed/simlab/ocs"
	"testbed/simlab/world"
	"testbed/transport"
)

func TestOCSOpenedForARunAndDarkOnExit(t *testing.T) {
	w := world.New(1)
	m, err := simocs.NewMicroOCS(w, "ocs1", simocs.MicroOCSOptions{Ports: 8})
	if err != nil {
		t.Fatal(err)
	}
	ms := simocs.NewMordiaServer(m, nil)
	ps := simocs.NewPolatisServer(simocs.NewPolatis(w, "ocs2", simocs.PolatisOptions{Ingress: 4, SwitchTime: time.Millisecond}), nil)
	for _, start := range []func(string) error{ms.Start, ps.Start} {
		if err := start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	defer ms.Close()
	defer ps.Close()
	lab := fmt.Sprintf(`version: 1
name: ocs
devices:
  ocs1: {kind: ocs, driver: mordia-rest, address: "%s", timeout: 2s}
  ocs2: {kind: ocs, driver: polatis-scpi, address: "%s", timeout: 2s}
  ocs3: {kind: ocs, driver: calient-tl1, address: "tcp://127.0.0.1:1"}
`, ms.Addr(), ps.Addr())
	inv, err := inventory.Parse("lab.yaml", []byte(lab))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDrivers(inv); err == nil || strings.Contains(err.Error(), "ocs1") || !strings.Contains(err.Error(), `unknown ocs driver "calient-tl1" (known: mordia-rest, polatis-scpi)`) {
		t.Fatalf("driver check: %v", err)
	}
	ctx := context.Background()
	ds, err := OpenDevices(ctx, inv, []string{"ocs1", "ocs2"}, func(string) *transport.Transcript { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if od, _ := ds.Get("ocs2"); od.Identity.Vendor != "Polatis" {
		t.Fatalf("identity %+v", od.Identity)
	}
	rc := &RunContext{devices: ds, runShared: &runShared{touched: map[string]bool{}}}
	cs, err := rc.OCS("ocs1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ocs.AsScheduler(cs); err != nil {
		t.Fatalf("ocs1 runs no schedules: %v", err)
	}
	if _, err := rc.OCS("ocs9"); err == nil || !strings.Contains(err.Error(), "ocs9 is not part of this run") {
		t.Fatalf("missing device: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := rc.DarkOCSOnExit("ocs1"); err != nil {
			t.Fatal(err)
		}
	}
	if len(rc.undo) != 1 || rc.undo[0].Device != "ocs1" {
		t.Fatalf("undo stack %+v: want one dark action", rc.undo)
	}
	if err := cs.SetConfiguration(ctx, ocs.Shift(8, 1)); err != nil {
		t.Fatal(err)
	}
	if err := rc.undo[0].Fn(ctx); err != nil {
		t.Fatal(err)
	}
	if lit, _ := m.Lit(); len(lit) != 0 {
		t.Fatalf("after the undo the switch holds %v", lit)
	}
	_, err = OpenDevice(ctx, &inventory.Device{Name: "ocs4", Kind: "ocs", Driver: "mordia-rest", Address: "http://127.0.0.1:1", Timeout: 200 * time.Millisecond}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "ocs4 (mordia-rest") || !strings.HasSuffix(err.Error(), "(opening mordia-rest at http://127.0.0.1:1)") {
		t.Fatalf("open an absent switch: %v", err)
	}
}
