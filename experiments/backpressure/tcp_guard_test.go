package backpressure

import (
	"testing"
	"time"
)

// The host's timeout(1) must not end a flow the switch's clock still runs:
// at any pace up to slowestPace times slower than real time, awaitReport's
// judgment on the clock (reportLimit past the flow's start) comes before
// the wall deadline the host kills iperf3 at. A wall bound of 20 flows and
// a minute (80 s for the 1 s flow of TestBackpressureWithATCPFlow) ended a
// flow running over 80 times slower than real time, which a loaded machine
// reached.
func TestIperf3OutlivesTheClocksJudgment(t *testing.T) {
	for _, dur := range []time.Duration{10 * time.Millisecond, time.Second, 8 * time.Second, time.Hour} {
		judged := time.Duration(slowestPace) * reportLimit(dur)
		if kill := iperf3KillAfter(dur); kill <= judged {
			t.Errorf("a %v flow: the host kills iperf3 after %v of wall time, before the clock's judgment at %v past its start reaches it at %dx slower than real time (%v)",
				dur, kill, reportLimit(dur), slowestPace, judged)
		}
	}
	if slowestPace <= 80 {
		t.Errorf("slowestPace %d: a loaded machine has run a simulated 100G flow over 80 times slower than real time", slowestPace)
	}
}
