package simlab_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"testbed/experiments/attsweep"
	"testbed/experiments/recipetest"
	"testbed/simlab"
)

// The trex bench is the default bench's attenuation bench with a TRex
// server in place of the OTG one: attenuation-sweep runs on it through the
// trex driver, with the default bench's parameters and seed, and its
// summary has the same shape as the default bench's (testdata/bench), the
// same links and the same cliffs to within one step of the sweep: the
// optics are the same; only the generator and the order of its draws
// differ.
func TestTRexBenchRunsAttenuationSweep(t *testing.T) {
	const seed = 1
	lab, err := simlab.StartBench("trex", simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	if d, ok := lab.Inventory().Device("tg1"); !ok || d.Driver != "trex" {
		t.Fatalf("tg1 of the trex bench: %+v", d)
	}
	res := recipetest.Run(t, lab, attsweep.New(), seed, nil, nil, "step_db=1", "fine_step_db=0", "max_seconds=0.5")
	got, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatalf("run %s (%s): %v", res.Status, res.Reason, err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "bench", "attenuation-sweep.summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if gs, ws := shape(g, ""), shape(w, ""); !slices.Equal(gs, ws) {
		t.Fatalf("summary shape differs from the default bench's:\ngot:  %v\nwant: %v", gs, ws)
	}
	var gsum, wsum attsweep.Summary
	json.Unmarshal(got, &gsum)
	json.Unmarshal(want, &wsum)
	for name, wl := range wsum.Links {
		gl := gsum.Links[name]
		for th, wc := range wl.LossCliffDB {
			gc := gl.LossCliffDB[th]
			if (wc == nil) != (gc == nil) || (wc != nil && math.Abs(*gc-*wc) > 1) {
				t.Errorf("%s: loss %s at %v dB over TRex, %v dB over OTG", name, th, deref(gc), deref(wc))
			}
		}
	}
	t.Logf("summary over TRex: %s", got)
}

// shape lists the paths of a JSON value's object keys, sorted.
func shape(v any, at string) []string {
	var out []string
	if m, ok := v.(map[string]any); ok {
		for k, x := range m {
			out = append(out, at+"/"+k)
			out = append(out, shape(x, at+"/"+k)...)
		}
	}
	slices.Sort(out)
	return out
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
