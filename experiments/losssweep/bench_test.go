package losssweep_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"testbed/experiments/losssweep"
	"testbed/experiments/recipetest"
	"testbed/results"
)

// benchRecipe runs the recipe's stress tests on one link, loss rate and
// mode through the engine, the switch driver over SSH and the simulated
// switches (the default bench), and reports the simulated frames per
// wall second (frames/s) and per CPU second (frames/cpu-s) of its
// stress-test steps: the packet generator's frames through the emulated
// switch and its dataplane, what lgmodel's BenchmarkFrames* measure of
// the model alone for the same link speed, mode and loss. The
// calibration that sets the loss rate is not counted (its frames are
// measured in runs of its own). A stress test's own requests (its
// protection, its reads of the counters and queues) cost the same for
// any length: 10^8 frames a point make them a small part, as they are of
// the 3.84x10^9 frames resolve_effective_loss=1e-10 sends.
func benchRecipe(b *testing.B, link, mode string, loss float64) {
	const frames = 100_000_000
	lab := recipetest.StartLab(b, 1)
	var wall, cpu time.Duration
	var sent int64
	for i := 0; i < b.N; i++ {
		var start time.Time
		var cpu0 time.Duration
		var s losssweep.Summary
		res := recipetest.Run(b, lab, losssweep.New(), uint64(i+1), &s, func(e results.Event, _ func()) {
			switch {
			case e.Type == "step.start" && e.Message == "stress-test":
				start, cpu0 = time.Now(), cpuTime(b)
			case e.Type == "step.end" && !start.IsZero():
				wall += time.Since(start)
				cpu += cpuTime(b) - cpu0
				start = time.Time{}
			}
		}, "links="+link, fmt.Sprintf("loss_rates=%g", loss), "modes="+mode, fmt.Sprintf("frames=%d", frames))
		if res.Status != results.StatusOK {
			b.Fatalf("run %s: %s", res.Status, res.Reason)
		}
		for _, byLoss := range s.Points {
			for _, byMode := range byLoss {
				sent += byMode[mode].FramesSent
			}
		}
	}
	if sent < frames*int64(b.N) || wall <= 0 {
		b.Fatalf("%d frames sent in %v of stress tests", sent, wall)
	}
	b.ReportMetric(float64(sent)/wall.Seconds(), "frames/s")
	b.ReportMetric(float64(sent)/cpu.Seconds(), "frames/cpu-s")
	b.ReportMetric(0, "ns/op") // a run is dominated by its setup: frames/s is the figure
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The cases of lgmodel's BenchmarkFrames*, through the recipe: compare
// frames/s and frames/cpu-s with theirs.
func BenchmarkRecipeFrames100GOrdered1e3(b *testing.B) { benchRecipe(b, "lg100", "linkguardian", 1e-3) }
func BenchmarkRecipeFrames100GNB1e3(b *testing.B)      { benchRecipe(b, "lg100", "linkguardian-nb", 1e-3) }
func BenchmarkRecipeFrames25GOrdered1e3(b *testing.B)  { benchRecipe(b, "lg25", "linkguardian", 1e-3) }
func BenchmarkRecipeFrames25GNB1e3(b *testing.B)       { benchRecipe(b, "lg25", "linkguardian-nb", 1e-3) }
