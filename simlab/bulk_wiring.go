package simlab

import (
	"time"

	"testbed/simlab/host"
	"testbed/simlab/lgmodel"
	"testbed/simlab/tofino"
)

// switchClock lets the simulated hosts' bulk flows (simlab/host, iperf3)
// follow the switches' dataplane clock and see its fibres as they are
// during each step.
type switchClock struct{ dp *tofino.Dataplane }

var _ host.SwitchClock = switchClock{}

func (c switchClock) Now() time.Duration { return c.dp.Now() }

func (c switchClock) Follow(s host.BulkStepper) func() { return c.dp.Follow(follower{s}) }

// follower is a host's bulk flow as the dataplane steps it.
type follower struct{ s host.BulkStepper }

func (f follower) Step(from, to time.Duration, state func(string) (tofino.LinkState, error)) {
	f.s.Step(from, to, func(fibre string) (host.Path, error) {
		s, err := state(fibre)
		return host.Path(s), err
	})
}

func (f follower) Traffic() (string, lgmodel.Result, int, lgmodel.Mode, int64, int64) {
	return f.s.Traffic()
}
