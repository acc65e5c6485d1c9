package lgbench

import (
	"context"
	"testing"
	"time"

	"testbed/dut/p4switch"
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

// clockSwitch is a switch clock that moves only when waited for, as the
// simulated switch's does, and records what it is asked.
type clockSwitch struct {
	p4switch.Switch // only the clock's two calls are used
	now             time.Duration
	reads           int
	waits           []time.Duration // the span each wait asked for
}

func (c *clockSwitch) Clock(context.Context) (time.Duration, error) {
	c.reads++
	return c.now, nil
}

func (c *clockSwitch) WaitClock(_ context.Context, t time.Duration) (time.Duration, error) {
	c.waits = append(c.waits, t-c.now)
	c.now = max(c.now, t)
	return c.now, nil
}

// A run's waits carry their step from one wait to the next, and a wait
// handed the clock as the caller just read it does not read it again: a
// long stress test's later waits then take a few requests, not a
// doubling from clockStep each. Fails with the step reset at every wait
// (the second wait's first request asks for clockStep) and with from
// reading the clock.
func TestClockWaitsCarryTheirStep(t *testing.T) {
	sw := &clockSwitch{}
	w := (&Bench{Tx: sw}).clockWaits()
	ctx := context.Background()
	// Quick answers double the step; a stalled machine may keep it, so
	// wait until it has grown at least once.
	for i := 0; w.step == clockStep; i++ {
		if i == 5 {
			t.Skipf("five waits of %v kept the step at %v: every answer took over %v", 10*time.Second, clockStep, stepWall)
		}
		if _, err := w.until(ctx, sw.now+10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	step, reads := w.step, sw.reads
	sw.waits = nil
	if _, err := w.until(ctx, sw.now+100*time.Second); err != nil {
		t.Fatal(err)
	}
	if sw.waits[0] != step {
		t.Errorf("the next wait's first request asked for %v, want the step the wait before ended with, %v (waits %v)", sw.waits[0], step, sw.waits)
	}
	if sw.reads != reads+1 {
		t.Errorf("until read the clock %d times, want once", sw.reads-reads)
	}
	reads = sw.reads
	got, err := w.from(ctx, sw.now, sw.now+time.Second)
	if err != nil || got != sw.now {
		t.Fatalf("from: %v, %v; want the clock %v", got, err, sw.now)
	}
	if sw.reads != reads {
		t.Errorf("from, handed the clock, read it %d times; want none", sw.reads-reads)
	}
}
