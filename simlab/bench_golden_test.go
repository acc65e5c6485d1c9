package simlab_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"testbed/experiments/attsweep"
	"testbed/experiments/fct"
	"testbed/experiments/losssweep"
	"testbed/experiments/ocscharacterize"
	"testbed/experiments/reactor"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/bench/*.summary.json from this build")

// The default bench must give the same summary.json for the same seed
// whatever shape the code behind it takes: these runs were recorded from
// the bench as built before the simulated lab was split into one package
// per device kind, and any change to a device, a link, a seed stream or a
// model shows up here. Sizes are cut down to keep the test quick; the
// numbers only need to be the same, not to reproduce a figure.
func TestDefaultBenchSummaries(t *testing.T) {
	const seed = 1
	cases := []struct {
		name   string
		recipe orchestrator.Recipe
		sets   []string
		// wallClock names summary fields that depend on the machine's
		// load, not on the seed: the reconfiguration recipe reaches the
		// switch over REST, so the boundary at which the fabric follows a
		// new schedule can be a period or more later on a loaded machine
		// (README, "How the simulated REACToR works").
		wallClock []string
	}{
		{"attenuation-sweep", attsweep.New(), []string{"step_db=1", "fine_step_db=0", "max_seconds=0.5"}, nil},
		{"loss-sweep", losssweep.New(), []string{"links=lg25", "loss_rates=1e-3", "frames=200000", "calib_losses=50"}, nil},
		{"fct", fct.New(), []string{"trials=400", "blocks=2", "calib_losses=50", "warmup=10", "modes=off,linkguardian", "transports=tcp"}, nil},
		{"ocs-characterize", ocscharacterize.New(), []string{"slots=4", "slot_us=40", "periods=50", "bin_us=0.5"}, nil},
		{"reactor-reconfig", reactor.NewReconfig(), []string{"warmup=2", "periods=8"}, []string{"transition"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lab := recipetest.StartLab(t, seed)
			res := recipetest.Run(t, lab, c.recipe, seed, nil, nil, c.sets...)
			got, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "bench", c.name+".summary.json")
			if *updateGolden {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (record with -update-golden)", err)
			}
			if !bytes.Equal(normalize(t, got, c.wallClock), normalize(t, want, c.wallClock)) {
				t.Errorf("%s: summary.json for seed %d differs from %s\ngot:  %s\nwant: %s", c.name, seed, golden, got, want)
			}
		})
	}
}

// normalize re-encodes a summary without the top-level fields drop, so
// that neither formatting nor those fields matter.
func normalize(t *testing.T, b []byte, drop []string) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range drop {
		if _, ok := v[k]; !ok {
			t.Fatalf("summary has no field %q to leave out", k)
		}
		delete(v, k)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
