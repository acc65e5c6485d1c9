package losssweep_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"testbed/experiments/losssweep"
	"testbed/experiments/recipetest"
	"testbed/results"
)

// On a bench whose two links share no device (lg-pairs: a pair of
// switches and a VOA each) the sweep's links are two lanes that run at
// once, and write byte for byte what they write one after the other for
// the same seed: the table's rows in plan order, the same summary. 20,000
// frames a point at 1e-3 leave every row its own counts (losses, copies,
// buffers, pauses) for a lane's mixed-up randomness to change.
func TestLossSweepLinksAtOnceWriteWhatOneAfterTheOtherWrites(t *testing.T) {
	sets := []string{"links=lg100,lg25", "loss_rates=1e-3", "frames=20000", "calib_losses=50"}
	run := func(parallel int) (string, []results.Event) {
		var mu sync.Mutex
		var evs []results.Event
		lab := recipetest.StartBench(t, "lg-pairs", 7)
		res := recipetest.RunParallel(t, lab, losssweep.New(), 7, parallel, nil, func(e results.Event, _ func()) {
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
		}, sets...)
		if res.Status != results.StatusOK {
			t.Fatalf("parallel %d: run %s (%s)", parallel, res.Status, res.Reason)
		}
		return res.Dir, evs
	}
	serial, sevs := run(1)
	par, pevs := run(2)
	for _, f := range []string{"data/loss_sweep.csv", "summary.json"} {
		a, err := os.ReadFile(filepath.Join(serial, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(par, f))
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s differs:\none after the other:\n%s\nat once:\n%s", f, a, b)
		}
	}
	rows := recipetest.ReadTable(t, par, "loss_sweep")
	if len(rows) != 6 || rows[0]["link"] != "lg100" || rows[3]["link"] != "lg25" {
		t.Errorf("rows: %v, want lg100's three modes, then lg25's", rows)
	}
	lanes := func(evs []results.Event) string {
		for _, e := range evs {
			if e.Type == "lanes" {
				return e.Message
			}
		}
		return ""
	}
	if m := lanes(pevs); !strings.Contains(m, "2 lanes, 2 at once at most: lg100 (5 steps); lg25 (5 steps)") {
		t.Errorf("parallel run's lanes: %q", m)
	}
	if m := lanes(sevs); !strings.Contains(m, "one at a time") {
		t.Errorf("serial run's lanes: %q", m)
	}
}
