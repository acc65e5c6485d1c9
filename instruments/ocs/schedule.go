package ocs

import (
	"fmt"
	"strings"
	"time"
)

// Schedule is a cycle of configurations the switch repeats every Period
// until it is stopped or replaced (REACToR §3.2: m configurations P_k with
// durations phi_k in an accumulation period W).
//
// Slot k begins with a night of length Night (the reconfiguration budget
// delta), during which the switch reconfigures and no circuit carries
// traffic, followed by Slots[k].Duration (phi_k) with the slot's circuits
// up. Slots follow each other without pause; whatever is left of the period
// after the last slot is dark. Hence REACToR's constraint
//
//	sum(phi_k) + m * delta <= W.
type Schedule struct {
	Period time.Duration
	Night  time.Duration
	Slots  []Slot
}

// Slot is one configuration and how long its circuits stay up (phi_k,
// without the night before it). No circuits means a dark slot.
type Slot struct {
	Duration time.Duration
	Circuits Configuration
}

// Busy is the time the slots take: sum(phi_k) + m * delta.
func (s Schedule) Busy() time.Duration {
	t := time.Duration(len(s.Slots)) * s.Night
	for _, sl := range s.Slots {
		t += sl.Duration
	}
	return t
}

// DutyCycle is the share of the period circuits are scheduled up:
// sum(phi_k) / W.
func (s Schedule) DutyCycle() float64 {
	if s.Period <= 0 {
		return 0
	}
	var up time.Duration
	for _, sl := range s.Slots {
		up += sl.Duration
	}
	return float64(up) / float64(s.Period)
}

// SlotStart is when slot k's night begins, counted from the period's start.
func (s Schedule) SlotStart(k int) time.Duration {
	var t time.Duration
	for i := 0; i < k && i < len(s.Slots); i++ {
		t += s.Night + s.Slots[i].Duration
	}
	return t
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
func (c Constraints) Validate(s Schedule) error {
	var ps []string
	add := func(format string, args ...any) { ps = append(ps, fmt.Sprintf(format, args...)) }
	if s.Period <= 0 {
		add("period W is %v: it must be positive", s.Period)
	}
	if c.MaxPeriod > 0 && s.Period > c.MaxPeriod {
		add("period W = %s is longer than the switch allows (%s)", fmtUS(s.Period), fmtUS(c.MaxPeriod))
	}
	switch {
	case s.Night <= 0:
		add("night (the reconfiguration budget delta) is %v: set it to at least the switch's %s", s.Night, fmtUS(c.MinNight))
	case s.Night < c.MinNight:
		add("night delta = %s is shorter than the switch's worst-case reconfiguration time %s", fmtUS(s.Night), fmtUS(c.MinNight))
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
		} else if s.Night > 0 && sl.Length(s) < c.MinSlot {
			add("slots[%d]: %s (%s night + %s up) is shorter than the minimum slot %s", k, fmtUS(sl.Length(s)), fmtUS(s.Night), fmtUS(sl.Duration), fmtUS(c.MinSlot))
		}
		for _, p := range sl.Circuits.Problems(c.Ports) {
			add("slots[%d]: %s", k, p)
		}
	}
	if s.Period > 0 && len(s.Slots) > 0 {
		if busy := s.Busy(); busy > s.Period {
			up := busy - time.Duration(len(s.Slots))*s.Night
			add("slots take %s (%s of circuits + %d x %s of reconfiguration), more than the period W = %s",
				fmtUS(busy), fmtUS(up), len(s.Slots), fmtUS(s.Night), fmtUS(s.Period))
		}
	}
	if len(ps) > 0 {
		return &ScheduleError{Problems: ps}
	}
	return nil
}

// Length is the slot's full length in s, its night included.
func (sl Slot) Length(s Schedule) time.Duration { return s.Night + sl.Duration }
