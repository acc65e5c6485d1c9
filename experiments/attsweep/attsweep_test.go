package attsweep_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/experiments/attsweep"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
)

// runSweep runs the recipe through the engine against a simulated lab
// started in this process, over the real drivers and transports.
func runSweep(t *testing.T, seed uint64, sets ...string) (attsweep.Summary, *results.Manifest) {
	t.Helper()
	lab, err := simlab.StartDefault(simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	r := attsweep.New()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: lab.Inventory(), Simulated: true, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	recipetest.CheckReport(t, res.Dir, "loss-vs-attenuation")
	var s attsweep.Summary
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var m results.Manifest
	mb, _ := os.ReadFile(filepath.Join(res.Dir, "manifest.json"))
	json.Unmarshal(mb, &m)
	return s, &m
}

func cliff(t *testing.T, s attsweep.Summary, link, th string) float64 {
	t.Helper()
	ls, ok := s.Links[link]
	if !ok {
		t.Fatalf("summary has no link %s", link)
	}
	v := ls.LossCliffDB[th]
	if v == nil {
		t.Fatalf("%s never reached loss %s: %+v", link, th, ls)
	}
	return *v
}

// LinkGuardian Fig. 1: the faster the baud (10G -> 25G) and the denser the
// modulation (25G NRZ -> 50G PAM4), the less attenuation a link tolerates;
// FEC moves the cliff, but 50GBASE-SR still suffers most. The simulated lab
// must reproduce that ordering from its receiver and FEC model.
func TestSweepReproducesFig1Ordering(t *testing.T) {
	s, m := runSweep(t, 42, "step_db=0.5", "fine_step_db=0", "max_seconds=1")
	if s.Partial {
		t.Fatal("summary is partial")
	}
	if m.Status != results.StatusOK {
		t.Fatalf("status %s", m.Status)
	}
	for _, th := range []string{"1e-06", "1e-03"} {
		c10, c25, c25rs, c50 := cliff(t, s, "l10g", th), cliff(t, s, "l25g", th), cliff(t, s, "l25g-rs", th), cliff(t, s, "l50g", th)
		t.Logf("loss %s reached at: 10G %.2f dB, 25G-RS %.2f dB, 25G %.2f dB, 50G-RS544 %.2f dB, 100G-SR4 %.2f dB",
			th, c10, c25rs, c25, c50, cliff(t, s, "l100g", th))
		if !(c10 > c25) {
			t.Errorf("loss %s: 10G cliff %.2f dB not beyond 25G %.2f dB (baud rate)", th, c10, c25)
		}
		if !(c25rs > c25) {
			t.Errorf("loss %s: RS(528,514) did not move 25G's cliff (%.2f vs %.2f dB)", th, c25rs, c25)
		}
		if !(c50 < c25 && c50 < c25rs && c50 < c10) {
			t.Errorf("loss %s: 50G PAM4 with FEC (%.2f dB) does not suffer most", th, c50)
		}
	}
}

// The N776x powers up with its shutters closed: the run opens the shutter
// of every channel it sets and closes it again at the end, and a sweep
// that gets no light through fails rather than ending ok with 100% loss.
func TestSweepOpensClosedShuttersAndRestoresThem(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	v, ok := lab.World().VOA("voa1")
	if !ok {
		t.Fatal("no voa1")
	}
	for i, ch := range v.Channels {
		if ch.Shutter() {
			t.Fatalf("voa1 channel %d open at power-up", i+1)
		}
	}
	run := func(sets ...string) *orchestrator.RunResult {
		r := attsweep.New()
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
		res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: lab.Inventory(), Simulated: true, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run("links=l25g", "step_db=4", "fine_step_db=0", "max_frames=2000")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	for i, ch := range v.Channels {
		if ch.Shutter() {
			t.Errorf("voa1 channel %d left open after the run", i+1)
		}
	}
	// A fibre with no light (a connector pulled after the VOA): the sweep
	// must not end ok with a curve of 100% loss.
	fib, ok := lab.World().Fibre("l25g")
	if !ok {
		t.Fatal("no fibre l25g in the world")
	}
	fib.LossAfterDB += 100
	res = run("links=l25g", "step_db=4", "fine_step_db=0", "max_frames=2000")
	if res.Status == results.StatusOK {
		t.Fatalf("a sweep with no light ended ok")
	}
	if !strings.Contains(res.Reason, "no light") {
		t.Errorf("reason %q does not say there is no light", res.Reason)
	}
}
