package simlab_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/experiments/losssweep"
	"testbed/orchestrator"
	"testbed/results"
)

// A line of three switches (testdata/twins/lg-line3.yaml): loss-sweep runs
// on both links in one run. s2 receives on s12 and sends on s23; what the
// run changed on s2 under the receiver program (its thresholds, its ports)
// is undone before bf_switchd restarts with the sender, and the bundle
// says so; the run ends ok with the lab restored.
func TestLineOfThreeSwitchesLossSweepBothLinksInOneRun(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "twins", "lg-line3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, skipped, tw := startTwin(t, string(text), "lg-line3.yaml", 7)
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	dir := t.TempDir()
	r := losssweep.New()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"links=s12,s23", "loss_rates=1e-3", "frames=200000", "calib_losses=50",
		"replace_program=true"})
	if err != nil {
		t.Fatal(err)
	}
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: tw, Simulated: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "ok" || len(res.Unrestored) != 0 {
		t.Fatalf("run %s (%s), not restored: %v", res.Status, res.Reason, res.Unrestored)
	}
	var m results.Manifest
	if b, err := os.ReadFile(filepath.Join(res.Dir, "manifest.json")); err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("manifest: %v", err)
	}
	if m.LabRestored == nil || !*m.LabRestored {
		t.Errorf("manifest says the lab was not restored: %+v", m.Cleanup)
	}
	var s losssweep.Summary
	if b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json")); err != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("summary: %v", err)
	}
	measured := map[string]int{}
	for _, rates := range s.Points {
		for _, modes := range rates {
			for mode, p := range modes {
				if p.ActualLoss <= 0 || p.FramesSent == 0 {
					t.Errorf("%s %s: %+v", p.Link, mode, p)
				}
				measured[p.Link]++
			}
		}
	}
	if measured["s12"] == 0 || measured["s23"] == 0 {
		t.Errorf("points per link %v, want both links measured", measured)
	}
	// The bundle records s2's receiver-program undos as settled before the
	// restart, and only s2's.
	f, err := os.Open(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settled := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e results.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "undo.settled" {
			settled[e.Device]++
			if !strings.Contains(e.Message, "before bf_switchd restarts with") {
				t.Errorf("settled undo without its why: %+v", e)
			}
		}
	}
	if settled["s2"] == 0 || len(settled) != 1 {
		t.Errorf("undos settled per device %v, want s2's alone", settled)
	}
}
