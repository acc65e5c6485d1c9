package sched

import (
	"fmt"
	"time"
)

// RoundRobin is the all-to-all schedule of REACToR §5.2: N-1 configurations
// per period, configuration k (0-based) connecting input i to output
// (i+k+1) mod N, so every host has a circuit to every other host once per
// period; each configuration lasts (W - (N-1)*delta)/(N-1), rounded down to
// the nanosecond.
func RoundRobin(c Constraints) (Schedule, error) {
	if err := c.Validate(); err != nil {
		return Schedule{}, fmt.Errorf("round-robin schedule: constraints: %w", err)
	}
	if c.N < 2 {
		return Schedule{}, fmt.Errorf("round-robin schedule: %d port, expected at least 2", c.N)
	}
	m := c.N - 1
	free := c.Period - time.Duration(m)*c.Delta
	dur := free / time.Duration(m)
	if floor := max(c.MinSlot, time.Nanosecond); dur < floor {
		return Schedule{}, fmt.Errorf("round-robin schedule: %d slots of (%v - %d x %v)/%d = %v each, expected at least the minimum slot %v",
			m, c.Period, m, c.Delta, m, dur, floor)
	}
	s := Schedule{Delta: c.Delta, Period: c.Period, Slots: make([]Slot, m)}
	for k := range s.Slots {
		perm := make([]int, c.N)
		for i := range perm {
			perm[i] = (i + k + 1) % c.N
		}
		s.Slots[k] = Slot{Perm: perm, Duration: dur}
	}
	return s, nil
}
