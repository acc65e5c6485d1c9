package recipetest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"testbed/dut/tofino/bfrtgrpc"
	"testbed/experiments/backpressure"
	"testbed/experiments/fct"
	"testbed/experiments/recipetest"
	"testbed/experiments/rehearsal"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
)

// The LinkGuardian recipes over either switch driver: the default bench
// with its switches reached over SSH (tofino-bfrt) and over BF Runtime
// gRPC (tofino-bfrt-grpc) gives the same summary.json for the same seed.
// loss-sweep's is in experiments/losssweep (grpc_test.go).
func TestLinkGuardianRecipesSameSummaryOverBothSwitchDrivers(t *testing.T) {
	recipetest.Long(t)
	for _, c := range []struct {
		name   string
		recipe func() orchestrator.Recipe
		seed   uint64
		sets   []string
	}{
		{"backpressure", func() orchestrator.Recipe { return backpressure.New() }, 21,
			[]string{"links=lg100", "duration_s=0.3", "loss_on_s=0.1", "protect_on_s=0.2", "interval=5ms", "calib_losses=50"}},
		{"rehearsal", func() orchestrator.Recipe { return rehearsal.New() }, 5, []string{"links=lg25"}},
		{"fct", func() orchestrator.Recipe { return fct.New() }, 41,
			[]string{"trials=2000", "blocks=4", "calib_losses=50", "warmup=10", "loss_source=voa", "loss_rate=1e-3", "connection=persistent", "paper_sysctls=false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sums [2][]byte
			for i, driver := range []string{"tofino-bfrt", bfrtgrpc.Driver} {
				lab, err := simlab.StartDefault(simlab.Options{Seed: c.seed, SwitchDriver: driver})
				if err != nil {
					t.Fatal(err)
				}
				res := recipetest.Run(t, lab, c.recipe(), c.seed, nil, nil, c.sets...)
				lab.Close()
				if res.Status != results.StatusOK {
					t.Fatalf("%s: run %s: %s", driver, res.Status, res.Reason)
				}
				b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
				if err != nil {
					t.Fatal(err)
				}
				var v any
				if err := json.Unmarshal(b, &v); err != nil {
					t.Fatal(err)
				}
				sums[i], _ = json.MarshalIndent(v, "", " ")
			}
			if string(sums[0]) != string(sums[1]) {
				t.Errorf("the summaries differ:\nover SSH:\n%s\nover gRPC:\n%s", sums[0], sums[1])
			}
		})
	}
}
