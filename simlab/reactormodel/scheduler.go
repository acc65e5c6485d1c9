package reactormodel

import (
	"math/rand/v2"
	"slices"

	"testbed/internal/sched"
)

// Scheduler computes the schedule of one period from the controller's
// demand matrix (bytes per period) under the switch's constraints. A model
// calls it from one goroutine, once per period, in order.
type Scheduler interface {
	Schedule(period int64, d sched.Demand, c sched.Constraints) (sched.Schedule, error)
}

// SchedulerFunc adapts a function to Scheduler.
type SchedulerFunc func(period int64, d sched.Demand, c sched.Constraints) (sched.Schedule, error)

// Schedule calls f.
func (f SchedulerFunc) Schedule(period int64, d sched.Demand, c sched.Constraints) (sched.Schedule, error) {
	return f(period, d, c)
}

// Fixed plays s every period whatever the demand (§5.2's all-to-all).
func Fixed(s sched.Schedule) Scheduler {
	return SchedulerFunc(func(int64, sched.Demand, sched.Constraints) (sched.Schedule, error) { return s, nil })
}

// Permuted plays the slots of s in a different order every period, drawn
// from seed: §5.2 changes the schedule so that hosts receive circuits in
// different permutations in each period.
func Permuted(s sched.Schedule, seed uint64) Scheduler {
	return SchedulerFunc(func(period int64, _ sched.Demand, _ sched.Constraints) (sched.Schedule, error) {
		r := rand.New(rand.NewPCG(seed, uint64(period)))
		out := s
		out.Slots = slices.Clone(s.Slots)
		r.Shuffle(len(out.Slots), func(i, j int) { out.Slots[i], out.Slots[j] = out.Slots[j], out.Slots[i] })
		return out, nil
	})
}

// solstice is the default scheduler: Solstice (internal/sched)
// with Solstice's own stopping rule, keeping the fewest of its
// configurations, in the order it cuts them, that leave the EPS only what
// it can carry in the period (sched.Evaluate: every host's EPS bytes, sent
// and received, within EPSRate x W); when no count does, all of them up to
// the bound. The EPS makes up for what circuits would serve only at the
// price of more nights (§3.2); demand it cannot carry gets circuits. A pure
// circuit switch (no EPS) thus gives every flow a circuit (§5.4), and
// backlogged flows that saturate their links all get one (§5.2).
//
// Demands are rounded to bytes, so a remainder that matches the EPS's
// capacity can overflow it by a few bytes; a frame per pair is allowed for
// that. The last answer is kept: a steady demand costs one search.
type solstice struct {
	frame int64 // one frame's wire bytes
	lastD sched.Demand
	lastC sched.Constraints
	lastS sched.Schedule
	ok    bool
}

func (s *solstice) Schedule(_ int64, d sched.Demand, c sched.Constraints) (sched.Schedule, error) {
	if s.ok && c == s.lastC && equalDemand(d, s.lastD) {
		return s.lastS, nil
	}
	out, err := sched.Solstice(d, c, sched.Options{})
	if err != nil {
		return sched.Schedule{}, err
	}
	if c.EPSRate > 0 && len(out.Slots) > 1 {
		// The lit pairs only grow with the count, so what is left to the
		// EPS only shrinks: search for the fewest that fit. best is the
		// schedule of hi, or all of them while nothing has fitted.
		lo, hi := 1, len(out.Slots)
		best := out
		for lo < hi {
			m := (lo + hi) / 2
			sm, err := sched.Solstice(d, c, sched.Options{MaxConfigs: m})
			if err != nil {
				return sched.Schedule{}, err
			}
			fits, err := s.epsFits(sm, d, c)
			if err != nil {
				return sched.Schedule{}, err
			}
			if fits {
				best, hi = sm, m
			} else {
				lo = m + 1
			}
		}
		out = best
	}
	s.lastD, s.lastC, s.lastS, s.ok = d, c, out, true
	return out, nil
}

// epsFits says whether every host's EPS bytes under s, sent and received,
// fit in what the EPS carries in a period, allowing a frame per pair.
func (s *solstice) epsFits(sc sched.Schedule, d sched.Demand, c sched.Constraints) (bool, error) {
	r, err := sched.Evaluate(sc, d, c)
	if err != nil {
		return false, err
	}
	n := len(d)
	for h := range n {
		var sent, recv, ps, pr int64
		for k := range n {
			if v := r.EPS[h][k]; v > 0 {
				sent += v
				ps++
			}
			if v := r.EPS[k][h]; v > 0 {
				recv += v
				pr++
			}
		}
		if sent > r.EPSCapacityBytes+ps*s.frame || recv > r.EPSCapacityBytes+pr*s.frame {
			return false, nil
		}
	}
	return true, nil
}

func equalDemand(a, b sched.Demand) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
