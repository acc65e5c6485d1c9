package losssweep_test

import (
	"encoding/json"
	"testing"

	"testbed/dut/tofino/bfrtgrpc"
	"testbed/experiments/losssweep"
	"testbed/experiments/recipetest"
	"testbed/results"
	"testbed/simlab"
)

// The recipe over either switch driver: the default bench with its
// switches reached over SSH (tofino-bfrt, the bfrt_python agent) and over
// BF Runtime gRPC (tofino-bfrt-grpc) gives the same summary for the same
// seed, every point (calibrated loss, copies, frames sent and delivered,
// buffers, link speed) equal.
func TestLossSweepSameSummaryOverBothSwitchDrivers(t *testing.T) {
	sets := []string{"links=lg25", "loss_rates=1e-3", "modes=off,linkguardian,linkguardian-nb", "frames=20000", "calib_losses=50"}
	var sums [2][]byte
	for i, driver := range []string{"tofino-bfrt", bfrtgrpc.Driver} {
		lab, err := simlab.StartDefault(simlab.Options{Seed: 11, SwitchDriver: driver})
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := lab.Inventory().Device("sw1"); d.Driver != driver {
			lab.Close()
			t.Fatalf("sw1's driver is %q, want %q", d.Driver, driver)
		}
		var s losssweep.Summary
		res := recipetest.Run(t, lab, losssweep.New(), 3, &s, nil, sets...)
		lab.Close()
		if res.Status != results.StatusOK {
			t.Fatalf("%s: run %s: %s", driver, res.Status, res.Reason)
		}
		if len(s.Points) != 1 {
			t.Fatalf("%s: %d speeds in the summary", driver, len(s.Points))
		}
		b, err := json.MarshalIndent(s, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = b
	}
	if string(sums[0]) != string(sums[1]) {
		t.Errorf("the summaries differ:\nover SSH:\n%s\nover gRPC:\n%s", sums[0], sums[1])
	}
}
