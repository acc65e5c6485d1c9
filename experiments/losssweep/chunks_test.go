package losssweep

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/results"
)

// A stress test longer than one packet generator run is sent as several
// back to back, and the point counts them all: here 2.5 runs' worth.
func TestStressBeyondOneGeneratorRunAddsUp(t *testing.T) {
	lab := recipetest.StartLab(t, 5)
	r := &Recipe{perRun: 65536 * 16}
	var s Summary
	res := recipetest.Run(t, lab, r, 3, &s, nil, "links=lg100", "loss_rates=1e-3", "modes=linkguardian-nb",
		"frames=2621440", "calib_losses=100")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	p := s.Points["100G"][LossKey(1e-3)]["linkguardian-nb"]
	if p.FramesSent != 2621440 || p.FramesDelivered > p.FramesSent || p.FramesDelivered < p.FramesSent-10 {
		t.Fatalf("point %+v: want 2621440 frames sent in three runs, nearly all delivered", p)
	}
	// The sender's transcript: the calibration's runs and three for the point.
	tr, err := os.ReadFile(filepath.Join(res.Dir, "transcripts", "sw1.log"))
	if err != nil {
		t.Fatal(err)
	}
	starts := strings.Count(string(tr), "pktgen.start")
	ev, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(\d+) measurements`).FindStringSubmatch(string(ev))
	if m == nil {
		t.Fatal("no calibration event")
	}
	if cal, _ := strconv.Atoi(m[1]); starts != cal+3 {
		t.Errorf("%d packet generator runs in the sender's transcript, want the calibration's %d and 3", starts, cal)
	}
	if p.EffectiveSpeedGbps < 95 || p.EffectiveSpeedGbps > 100.01 {
		t.Errorf("window rate %.2f Gb/s over three runs", p.EffectiveSpeedGbps)
	}
}
