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
	res := recipetest.Run(t, lab, rehearsal.New(), 5, &s, nil, "links=lg25")
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
