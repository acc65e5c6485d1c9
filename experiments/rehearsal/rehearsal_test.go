package rehearsal_test

import (
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/rehearsal"
	"testbed/results"
)

// The rehearsal on the simulated lab's lg25 (25GBASE-SR, no FEC): as the
// VOA drifts the monitor finds the corruption on the counters alone,
// after the true loss crosses the threshold and within the time its
// window needs, raises no false alarm, and LinkGuardian then cuts the
// frames lost to a small fraction of the FCS errors; once the VOA is back
// protection goes off after the quiet period.
func TestRehearsalDetectsAndProtects(t *testing.T) {
	lab := recipetest.StartLab(t, 5)
	var s rehearsal.Summary
	// The recipe's default timeline (drift from 1 s at 0.5 dB/s, cleaned
	// at 8 s, 12 s of clock) compressed: the same 3 dB drift at 1.5 dB/s
	// from 0.5 s crosses the threshold near 2 s, is cleaned at 3.5 s and
	// leaves the quiet period and the monitor's window (some 2 s) before
	// 6.5 s. The frames sent follow duration_s (here 7.5 s of 25G, not 13).
	res := recipetest.Run(t, lab, rehearsal.New(), 5, &s, nil, "links=lg25",
		"drift_start_s=0.5", "drift_db_per_s=1.5", "clean_at_s=3.5", "duration_s=6.5")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	recipetest.CheckReport(t, res.Dir, "loss-estimate", "true-loss", "copies", "actions")
	lr, ok := s.Links["lg25"]
	if !ok {
		t.Fatalf("summary %+v", s)
	}
	t.Logf("%+v", lr)
	if !lr.Detected || lr.DetectionDelayS < 0 || lr.FalseAlarms != 0 {
		t.Fatalf("detection: %+v", lr)
	}
	if lr.ProtectedS < lr.AlarmS || lr.MaxCopies < 1 || lr.UnprotectedS <= lr.ProtectedS {
		t.Fatalf("protection: %+v", lr)
	}
	if lr.ErrorsProtected == 0 || lr.LostAfter*10 > lr.ErrorsProtected {
		t.Fatalf("protected: %d frames lost of %d corrupted", lr.LostAfter, lr.ErrorsProtected)
	}
}
