package stardust_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"testbed/experiments/stardust"
	"testbed/inventory"
	"testbed/orchestrator"
	simfabric "testbed/simlab/fabric"
)

// fabricLab is a lab of one device, a simulated Stardust fabric on a
// loopback port (driver stardust-model): the model mode's lab. It is
// closed when the test ends.
func fabricLab(t testing.TB) *inventory.Inventory {
	t.Helper()
	srv, err := simfabric.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	inv, err := inventory.Parse("fabric-lab.yaml", fmt.Appendf(nil, `version: 1
name: fabric-lab
devices:
  fabric1:
    kind: fabric
    driver: stardust-model
    address: %s
`, srv.Address()))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// A lab without a fabric device cannot run the model mode: the plan says
// which role is missing and of which kind, naming the lab.
func TestModelModeNeedsAFabricDevice(t *testing.T) {
	for _, r := range []orchestrator.Recipe{stardust.NewFabric(), stardust.NewFailover(), stardust.NewIncast(), stardust.NewPermutation(), stardust.NewPushPull()} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Plan(&orchestrator.PlanContext{Params: params, Lab: &inventory.Inventory{Name: "no-lab", Path: "empty.yaml"}})
		if err == nil || !strings.Contains(err.Error(), "empty.yaml cannot serve this recipe") || !strings.Contains(err.Error(), "role fabric needs a fabric") {
			t.Errorf("%s on a lab with no fabric: %v", r.Meta().Name, err)
		}
	}
}
