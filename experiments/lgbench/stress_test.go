package lgbench

import (
	"testing"
	"time"
)

// A wait's step grows while the switch answers quickly and shrinks when it
// answers slowly, within [clockStep, clockStepMax].
func TestNextStep(t *testing.T) {
	step := clockStep
	for i := 0; i < 20; i++ {
		step = nextStep(step, time.Millisecond)
	}
	if step != clockStepMax {
		t.Errorf("quick answers: step %v, want %v", step, clockStepMax)
	}
	if got := nextStep(step, 2*stepWall); got != step {
		t.Errorf("an answer in %v: step %v, want it kept at %v", 2*stepWall, got, step)
	}
	if got := nextStep(step, 5*stepWall); got != step/2 {
		t.Errorf("an answer in %v: step %v, want %v", 5*stepWall, got, step/2)
	}
	for i := 0; i < 20; i++ {
		step = nextStep(step, time.Second)
	}
	if step != clockStep {
		t.Errorf("slow answers: step %v, want %v", step, clockStep)
	}
}
