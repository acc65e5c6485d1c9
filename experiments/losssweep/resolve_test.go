package losssweep_test

import (
	"testing"

	"testbed/experiments/losssweep"
	"testbed/experiments/recipetest"
	"testbed/experiments/stats"
	"testbed/results"
)

// The rule: a point with no frame lost is bounded at about ten times the
// resolution, and a point at a hundred times it has an interval that
// excludes the resolution.
func TestFramesToResolveSeparatesTwoDecades(t *testing.T) {
	for _, r := range []float64{1e-10, 1e-8, 1e-6} {
		n := losssweep.FramesToResolve(r)
		if _, hi := stats.Wilson(0, n, stats.Z95); hi > 10*r || hi < 9*r {
			t.Errorf("r=%g: %d frames, zero lost bounded at %.3g, want about %g", r, n, hi, 10*r)
		}
		if lo, _ := stats.Wilson(int64(100*r*float64(n)), n, stats.Z95); lo <= r {
			t.Errorf("r=%g: at 100r the interval starts at %.3g", r, lo)
		}
		if _, hi := stats.Wilson(5, n, stats.Z95); hi >= 100*r {
			t.Errorf("r=%g: 5 lost of %d bounded at %.3g, not below 100r", r, n, hi)
		}
	}
	if n := losssweep.FramesToResolve(1e-10); n != 3_841_458_821 {
		t.Errorf("1e-10: %d frames", n)
	}
}

// resolve_effective_loss sets what every stress test sends, in place of
// frames, and the summary says so.
func TestResolveEffectiveLossPicksTheFrames(t *testing.T) {
	lab := recipetest.StartLab(t, 3)
	var s losssweep.Summary
	res := recipetest.Run(t, lab, losssweep.New(), 3, &s, nil, "links=lg100", "loss_rates=1e-3", "modes=off,linkguardian-nb",
		"frames=1000", "resolve_effective_loss=1e-5", "calib_losses=100")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	want := losssweep.FramesToResolve(1e-5)
	if s.FramesPerPoint != want || s.ResolveEffectiveLoss != 1e-5 {
		t.Errorf("summary: %d frames a point for %g, want %d for 1e-5", s.FramesPerPoint, s.ResolveEffectiveLoss, want)
	}
	for mode, p := range s.Points["100G"][losssweep.LossKey(1e-3)] {
		if p.FramesSent != want {
			t.Errorf("%s: %d frames sent, want %d", mode, p.FramesSent, want)
		}
	}
	if len(s.Points["100G"][losssweep.LossKey(1e-3)]) != 2 {
		t.Errorf("points %+v", s.Points)
	}
}
