package simlab

import (
	"fmt"
	"time"

	"testbed/internal/sched"
	"testbed/simlab/host"
	"testbed/simlab/ocs"
	"testbed/simlab/reactor"
	"testbed/simlab/reactormodel"
)

// The device packages never import each other; what one needs of another
// is wired here.

// switchPaths gives the simulated hosts the state of the simulated
// switches' fibres, each from the dataplane it is on.
func (t *twin) switchPaths() host.Paths {
	return func(fibre string) (host.Path, error) {
		dp := t.fibreDP[fibre]
		if dp == nil {
			return host.Path{}, fmt.Errorf("no switch fibre %s in this twin", fibre)
		}
		s, err := dp.LinkState(fibre)
		return host.Path(s), err
	}
}

// fabricSwitch shows a REACToR fabric the microsecond circuit switch it is
// built around.
type fabricSwitch struct {
	m *ocs.MicroOCS
}

var _ reactor.CircuitSwitch = (*fabricSwitch)(nil)

func (s *fabricSwitch) Name() string             { return s.m.Name }
func (s *fabricSwitch) Ports() int               { return s.m.Options().Ports }
func (s *fabricSwitch) Gap() reactormodel.GapLaw { return s.m.Options().Gap }
func (s *fabricSwitch) Now() time.Duration       { return s.m.Now() }

func (s *fabricSwitch) PeriodSchedule(start time.Duration, k int64) (*sched.Schedule, bool) {
	return s.m.PeriodSchedule(start, k)
}

func (s *fabricSwitch) Status() reactor.OCSStatus {
	st := s.m.Status()
	return reactor.OCSStatus{State: st.State, Schedule: st.OnPorts, Start: st.Start, Period: st.Period, Now: st.Now}
}
