package sched

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Dark marks an input that feeds no output during a slot.
const Dark = -1

// Demand is an N x N matrix of bytes: Demand[i][j] is what host i has for
// host j in one period. The diagonal must be zero.
type Demand [][]int64

// NewDemand returns an all-zero n x n demand.
func NewDemand(n int) Demand {
	d := make(Demand, n)
	for i := range d {
		d[i] = make([]int64, n)
	}
	return d
}

// FromRates converts a matrix of rates in bits per second into the bytes each
// pair offers in one period, rounded to the nearest byte.
func FromRates(rates [][]float64, period time.Duration) Demand {
	d := NewDemand(len(rates))
	for i, row := range rates {
		for j := range d[i] {
			if j < len(row) {
				d[i][j] = int64(math.Round(row[j] * period.Seconds() / 8))
			}
		}
	}
	return d
}

// Validate checks that d is an n x n matrix with non-negative entries and a
// zero diagonal.
func (d Demand) Validate(n int) error {
	if len(d) != n {
		return fmt.Errorf("demand has %d rows, expected %d", len(d), n)
	}
	for i, row := range d {
		if len(row) != n {
			return fmt.Errorf("demand row %d has %d entries, expected %d", i, len(row), n)
		}
		for j, v := range row {
			if v < 0 {
				return fmt.Errorf("demand[%d][%d] = %d, expected a non-negative byte count", i, j, v)
			}
			if i == j && v != 0 {
				return fmt.Errorf("demand[%d][%d] = %d, expected 0: a host's traffic to itself does not cross the switch", i, j, v)
			}
		}
	}
	return nil
}

// Total is the sum of all entries.
func (d Demand) Total() int64 {
	var t int64
	for _, row := range d {
		for _, v := range row {
			t += v
		}
	}
	return t
}

// Constraints are what a schedule must respect (REACToR §3.2, §4).
type Constraints struct {
	// N is the number of OCS ports, one per host.
	N int
	// Period is the accumulation period W; the schedule repeats every W.
	Period time.Duration
	// Delta is the reconfiguration gap charged once per slot (REACToR
	// configures 30 us for a Mordia OCS measured at about 12 us mean, 14.84
	// us max; §4, Fig. 5).
	Delta time.Duration
	// MinSlot is the shortest time a configuration may stay lit, not
	// counting Delta.
	MinSlot time.Duration
	// LinkRate is what one circuit carries, in bits per second. Where hosts
	// rate-limit circuit traffic below line rate to leave room for EPS
	// traffic at the destination port (§3.3: 90-100%), use that limit.
	LinkRate float64
	// EPSRate is what each host may send to, and receive from, the EPS, in
	// bits per second (§3.2; 10 Gb/s beside a 100 Gb/s OCS, or the
	// prototype's 1 Gb/s beside 10 Gb/s). Zero models a pure circuit ToR.
	EPSRate float64
}

// Validate checks that the constraints describe a usable switch.
func (c Constraints) Validate() error {
	var errs []error
	if c.N < 1 {
		errs = append(errs, fmt.Errorf("N = %d ports, expected at least 1", c.N))
	}
	if c.Period <= 0 {
		errs = append(errs, fmt.Errorf("period W = %v, expected a positive duration", c.Period))
	}
	if c.Delta < 0 {
		errs = append(errs, fmt.Errorf("reconfiguration delay = %v, expected >= 0", c.Delta))
	}
	if c.MinSlot < 0 {
		errs = append(errs, fmt.Errorf("minimum slot = %v, expected >= 0", c.MinSlot))
	}
	if !(c.LinkRate > 0) || math.IsInf(c.LinkRate, 0) {
		errs = append(errs, fmt.Errorf("circuit link rate = %g b/s, expected a positive finite rate", c.LinkRate))
	}
	if !(c.EPSRate >= 0) || math.IsInf(c.EPSRate, 0) {
		errs = append(errs, fmt.Errorf("EPS rate = %g b/s, expected a finite rate >= 0", c.EPSRate))
	}
	return errors.Join(errs...)
}

// MaxSlots is the most configurations one period can hold: each needs at
// least the minimum slot (and at least 1 ns) plus Delta.
func (c Constraints) MaxSlots() int {
	per := max(c.MinSlot, time.Nanosecond) + c.Delta
	if c.Period <= 0 || per <= 0 {
		return 0
	}
	return int(c.Period / per)
}

// Slot is one circuit configuration.
type Slot struct {
	// Perm[i] is the output input i is connected to, or Dark. No output
	// appears twice.
	Perm []int
	// Duration is how long the configuration stays lit, not counting the
	// reconfiguration gap before it.
	Duration time.Duration
}

// Schedule is what the OCS plays once per period, in order, each slot
// preceded by a reconfiguration gap.
type Schedule struct {
	Slots  []Slot
	Delta  time.Duration
	Period time.Duration
}

// Lit is the sum of the slot durations.
func (s Schedule) Lit() time.Duration {
	var t time.Duration
	for _, sl := range s.Slots {
		t += sl.Duration
	}
	return t
}

// Busy is the time the schedule occupies: the sum of the slot durations plus
// one reconfiguration gap per slot.
func (s Schedule) Busy() time.Duration {
	return s.Lit() + time.Duration(len(s.Slots))*s.Delta
}

// SlotStart is when slot k's reconfiguration gap begins, counted from the
// period's start.
func (s Schedule) SlotStart(k int) time.Duration {
	var t time.Duration
	for i := 0; i < k && i < len(s.Slots); i++ {
		t += s.Delta + s.Slots[i].Duration
	}
	return t
}

// DutyCycle is the fraction of the period during which circuits are lit.
func (s Schedule) DutyCycle() float64 {
	if s.Period <= 0 {
		return 0
	}
	return float64(s.Lit()) / float64(s.Period)
}

// Validate checks s against c: the schedule budgets at least the switch's
// reconfiguration gap and fits in its period, every slot is a (partial)
// permutation of c.N ports, every slot lasts at least the minimum slot, and
// the slots and gaps together fit in the period. It reports every problem it
// finds, each naming the slot and what was expected.
func Validate(s Schedule, c Constraints) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("constraints: %w", err)
	}
	var errs []error
	if s.Delta < c.Delta {
		errs = append(errs, fmt.Errorf("schedule budgets a reconfiguration gap of %v, expected at least the switch's %v", s.Delta, c.Delta))
	}
	if s.Period <= 0 || s.Period > c.Period {
		errs = append(errs, fmt.Errorf("schedule period %v, expected a positive period of at most %v", s.Period, c.Period))
	}
	minSlot := max(c.MinSlot, time.Nanosecond)
	for k, sl := range s.Slots {
		if len(sl.Perm) != c.N {
			errs = append(errs, fmt.Errorf("slot %d: permutation has %d inputs, expected %d", k, len(sl.Perm), c.N))
		}
		fedBy := make(map[int]int, len(sl.Perm))
		for in, out := range sl.Perm {
			if out == Dark {
				continue
			}
			if out < 0 || out >= c.N {
				errs = append(errs, fmt.Errorf("slot %d: input %d -> output %d, expected an output in 0..%d or %d for dark", k, in, out, c.N-1, Dark))
				continue
			}
			if prev, dup := fedBy[out]; dup {
				errs = append(errs, fmt.Errorf("slot %d: inputs %d and %d both feed output %d, expected each output at most once", k, prev, in, out))
				continue
			}
			fedBy[out] = in
		}
		if sl.Duration < minSlot {
			errs = append(errs, fmt.Errorf("slot %d: lasts %v, expected at least the minimum slot %v", k, sl.Duration, minSlot))
		}
	}
	if busy := s.Busy(); s.Period > 0 && busy > s.Period {
		errs = append(errs, fmt.Errorf("slots take %v (%d slots lit for %v plus %d x %v reconfiguration), expected at most the period %v",
			busy, len(s.Slots), s.Lit(), len(s.Slots), s.Delta, s.Period))
	}
	return errors.Join(errs...)
}

// bytesIn is what rate bits/s carries in d, rounded down to whole bytes.
func bytesIn(d time.Duration, rate float64) int64 {
	if d <= 0 || rate <= 0 {
		return 0
	}
	// A tiny allowance keeps exact products (100 us at 8 Gb/s) from
	// landing one byte short through float rounding.
	return int64(math.Floor(float64(d)*rate/8e9 + 1e-6))
}
