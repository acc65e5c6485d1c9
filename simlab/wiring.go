package simlab

import (
	"sync"
	"time"

	"testbed/simlab/host"
	"testbed/simlab/ocs"
	"testbed/simlab/reactor"
	"testbed/simlab/reactormodel"
	"testbed/simlab/tofino"
)

// The device packages never import each other; what one needs of another
// is wired here.

// switchPaths gives the simulated hosts the state of the simulated
// switches' fibres.
func switchPaths(dp *tofino.Dataplane) host.Paths {
	return func(fibre string) (host.Path, error) {
		s, err := dp.LinkState(fibre)
		return host.Path(s), err
	}
}

// fabricSwitch shows a REACToR fabric the microsecond circuit switch it is
// built around.
type fabricSwitch struct {
	m *ocs.MicroOCS

	mu   sync.Mutex
	from *ocs.OCSSchedule     // the switch's schedule last converted
	to   *reactor.OCSSchedule // and what it became
}

var _ reactor.CircuitSwitch = (*fabricSwitch)(nil)

func (s *fabricSwitch) Name() string             { return s.m.Name }
func (s *fabricSwitch) Ports() int               { return s.m.Options().Ports }
func (s *fabricSwitch) Gap() reactormodel.GapLaw { return s.m.Options().Gap }
func (s *fabricSwitch) Now() time.Duration       { return s.m.Now() }

func (s *fabricSwitch) Status() reactor.OCSStatus {
	st := s.m.Status()
	return reactor.OCSStatus{State: st.State, Schedule: s.schedule(st.Schedule), Start: st.Start, Period: st.Period, Now: st.Now}
}

// schedule converts a schedule of the switch, once per schedule: the
// switch replaces its schedule, never changes one in place.
func (s *fabricSwitch) schedule(in *ocs.OCSSchedule) *reactor.OCSSchedule {
	if in == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in == s.from {
		return s.to
	}
	out := &reactor.OCSSchedule{Period: in.Period, Night: in.Night}
	for _, sl := range in.Slots {
		o := reactor.OCSSlot{Duration: sl.Duration}
		for _, c := range sl.Circuits {
			o.Circuits = append(o.Circuits, reactor.OCSCircuit{In: c.In, Out: c.Out})
		}
		out.Slots = append(out.Slots, o)
	}
	s.from, s.to = in, out
	return out
}
