package ocs

import (
	"fmt"
	"strings"
	"time"

	"testbed/internal/sched"
)

// A schedule a scheduling switch plays is a sched.Schedule, the type the
// schedulers produce (REACToR §3.2: m configurations P_k with durations
// phi_k in an accumulation period W), over the switch's ports: Perm[i] is
// the output input port i+1 feeds, less one, or sched.Dark. Perms shorter
// than the switch's inputs leave the remaining inputs dark.
//
// Slot k begins with a night of length Delta (the reconfiguration budget
// delta; night_ns on the wire), during which the switch reconfigures and no
// circuit carries traffic, followed by Slots[k].Duration (phi_k) with the
// slot's circuits up. Slots follow each other without pause; whatever is
// left of the period after the last slot is dark. Hence REACToR's constraint
//
//	sum(phi_k) + m * delta <= W.

// Circuits is the configuration a slot's permutation holds, in ports
// numbered from 1 as the switch numbers them.
func Circuits(perm []int) Configuration {
	var c Configuration
	for i, j := range perm {
		if j != sched.Dark {
			c = append(c, Circuit{In: i + 1, Out: j + 1})
		}
	}
	return c
}

// Perm is c as a slot's permutation over a switch's inputs: Perm[In-1] =
// Out-1, every other input sched.Dark. It is the inverse of Circuits for a
// valid configuration; circuits on inputs outside 1..inputs are left out.
func (c Configuration) Perm(inputs int) []int {
	perm := make([]int, inputs)
	for i := range perm {
		perm[i] = sched.Dark
	}
	for _, x := range c {
		if x.In >= 1 && x.In <= inputs {
			perm[x.In-1] = x.Out - 1
		}
	}
	return perm
}

// Constraints are what a scheduling switch accepts.
type Constraints struct {
	Ports Ports
	// MinSlot is the shortest slot, night included (REACToR §5.4 states
	// its 40 us minimum "including reconfiguration delay").
	MinSlot time.Duration
	// MinNight is the shortest reconfiguration budget the switch accepts:
	// its worst-case reconfiguration time.
	MinNight time.Duration
	// MaxSlots is the most configurations one schedule may hold.
	MaxSlots int
	// MaxPeriod is the longest period; 0 means no limit.
	MaxPeriod time.Duration
}

// ScheduleError lists everything wrong with a schedule, each problem naming
// the slot it is about.
type ScheduleError struct {
	Problems []string
}

func (e *ScheduleError) Error() string {
	return "schedule refused: " + strings.Join(e.Problems, "; ")
}

func fmtUS(d time.Duration) string {
	return fmt.Sprintf("%.1f us", float64(d)/float64(time.Microsecond))
}

// Validate checks a schedule against the constraints; it returns a
// *ScheduleError naming every problem, or nil.
func (c Constraints) Validate(s sched.Schedule) error {
	var ps []string
	add := func(format string, args ...any) { ps = append(ps, fmt.Sprintf(format, args...)) }
	if s.Period <= 0 {
		add("period W is %v: it must be positive", s.Period)
	}
	if c.MaxPeriod > 0 && s.Period > c.MaxPeriod {
		add("period W = %s is longer than the switch allows (%s)", fmtUS(s.Period), fmtUS(c.MaxPeriod))
	}
	switch {
	case s.Delta <= 0:
		add("night (the reconfiguration budget delta) is %v: set it to at least the switch's %s", s.Delta, fmtUS(c.MinNight))
	case s.Delta < c.MinNight:
		add("night delta = %s is shorter than the switch's worst-case reconfiguration time %s", fmtUS(s.Delta), fmtUS(c.MinNight))
	}
	if len(s.Slots) == 0 {
		add("no slots")
	}
	if c.MaxSlots > 0 && len(s.Slots) > c.MaxSlots {
		add("%d slots: the switch holds at most %d", len(s.Slots), c.MaxSlots)
	}
	for k, sl := range s.Slots {
		if sl.Duration <= 0 {
			add("slots[%d]: duration %v: circuits must be up for a positive time", k, sl.Duration)
		} else if s.Delta > 0 && s.Delta+sl.Duration < c.MinSlot {
			add("slots[%d]: %s (%s night + %s up) is shorter than the minimum slot %s", k, fmtUS(s.Delta+sl.Duration), fmtUS(s.Delta), fmtUS(sl.Duration), fmtUS(c.MinSlot))
		}
		for _, p := range permProblems(sl.Perm, c.Ports) {
			add("slots[%d]: %s", k, p)
		}
	}
	if s.Period > 0 && len(s.Slots) > 0 {
		if busy := s.Busy(); busy > s.Period {
			add("slots take %s (%s of circuits + %d x %s of reconfiguration), more than the period W = %s",
				fmtUS(busy), fmtUS(s.Lit()), len(s.Slots), fmtUS(s.Delta), fmtUS(s.Period))
		}
	}
	if len(ps) > 0 {
		return &ScheduleError{Problems: ps}
	}
	return nil
}

// permProblems lists what is wrong with a slot's permutation on a switch of
// size p, in the switch's port numbers: inputs or outputs that do not
// exist, an output fed twice.
func permProblems(perm []int, p Ports) []string {
	var out []string
	for i, j := range perm {
		if j != sched.Dark && i >= p.Inputs {
			out = append(out, fmt.Sprintf("input %d does not exist (inputs 1..%d)", i+1, p.Inputs))
		}
	}
	in := perm[:min(len(perm), p.Inputs)]
	for _, j := range in {
		if j != sched.Dark && (j < 0 || j >= p.Outputs) {
			out = append(out, fmt.Sprintf("output %d does not exist (outputs 1..%d)", j+1, p.Outputs))
		}
	}
	byOut := map[int]int{}
	for i, j := range in {
		if j == sched.Dark {
			continue
		}
		if prev, dup := byOut[j]; dup {
			out = append(out, fmt.Sprintf("output %d is used twice (by inputs %d and %d)", j+1, prev+1, i+1))
		} else {
			byOut[j] = i
		}
	}
	return out
}
