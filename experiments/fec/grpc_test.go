package fec_test

import (
	"encoding/json"
	"testing"

	"testbed/dut/tofino/bfrtgrpc"
	"testbed/experiments/fec"
	"testbed/experiments/recipetest"
	"testbed/results"
	"testbed/simlab"
)

// fec-ber over either switch driver: the default bench's switches reached
// over SSH (tofino-bfrt) and over BF Runtime gRPC (tofino-bfrt-grpc, its
// FEC counters through the agent side channel) give the same summary for
// the same seed, codeword counters included.
func TestFECBERSameSummaryOverBothSwitchDrivers(t *testing.T) {
	sets := []string{"links=lg25", "attenuations_db=8", "fec_modes=none,rs528", "front_ports=sw2:p2=2"}
	var sums [2][]byte
	for i, driver := range []string{"tofino-bfrt", bfrtgrpc.Driver} {
		lab, err := simlab.StartDefault(simlab.Options{Seed: 11, SwitchDriver: driver})
		if err != nil {
			t.Fatal(err)
		}
		var s fec.BERSummary
		res := recipetest.Run(t, lab, fec.NewBER(), 11, &s, nil, sets...)
		lab.Close()
		if res.Status != results.StatusOK {
			t.Fatalf("%s: run %s: %s", driver, res.Status, res.Reason)
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
	t.Logf("summary: %s", sums[0])
}
