package reactor

import (
	"time"

	"testbed/internal/sched"
	"testbed/simlab/reactormodel"
)

// CircuitSwitch is what the fabric reads of its circuit switch: the
// simulated lab connects it to the circuit switch emulator, so that the
// fabric follows whatever schedule a driver has that switch play.
type CircuitSwitch interface {
	Name() string
	// Ports is how many input (and output) ports the switch has.
	Ports() int
	// Gap is the law of the switch's reconfiguration gaps.
	Gap() reactormodel.GapLaw
	// Now is the switch's clock.
	Now() time.Duration
	// Status is what the switch does now.
	Status() OCSStatus
	// PeriodSchedule is the schedule period k of the run started at start
	// played, from the switch's record of its replacements; false when
	// the switch has not reached k or no longer knows that run.
	PeriodSchedule(start time.Duration, k int64) (*sched.Schedule, bool)
}

// OCSStatus is what a circuit switch reports it does: State is "idle",
// "armed", "running" (or another word of the switch's for a state without
// a schedule); a running schedule began at Start, and the switch is in
// period Period at Now. Schedule is the switch's over its ports: a slot's
// Perm[p-1] is the output port, less one, that input port p feeds.
type OCSStatus struct {
	State    string
	Schedule *sched.Schedule
	Start    time.Duration
	Period   int64
	Now      time.Duration
}
