package sched

import (
	"fmt"
	"math/bits"
	"time"
)

// Options tune how a decomposition becomes a schedule.
type Options struct {
	// MaxConfigs bounds the number of configurations; 0 means as many as
	// the period holds (Constraints.MaxSlots), and a larger bound is cut
	// to that. What the kept configurations do not carry is left to the
	// EPS.
	MaxConfigs int
	// BestCount keeps the number of configurations m (1..bound) that
	// delivers the most bytes in the period, circuit bytes plus what the
	// EPS carries of the rest; ties go to more circuit bytes, then to
	// fewer configurations. Without it every configuration up to the bound
	// is kept.
	BestCount bool
}

func (o Options) limit(c Constraints) int {
	l := c.MaxSlots()
	if o.MaxConfigs > 0 {
		l = min(l, o.MaxConfigs)
	}
	return l
}

// config is one term of a decomposition: a permutation (with inputs whose
// pair has no demand already dark) and its weight in bytes.
type config struct {
	perm   []int
	weight int64
}

func checkInputs(what string, d Demand, c Constraints, o Options) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: constraints: %w", what, err)
	}
	if err := d.Validate(c.N); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if o.MaxConfigs < 0 {
		return fmt.Errorf("%s: at most %d configurations, expected a bound >= 0 (0: as many as the period holds)", what, o.MaxConfigs)
	}
	return nil
}

// stuff returns a copy of d raised, entry by entry, until every row and
// every column sums to the largest line sum of d, and that sum. Entries
// that already carry demand are raised first, then empty off-diagonal ones,
// then the diagonal, so the result stays as sparse as the greedy allows
// (Solstice's QuickStuff does the same). Each entry is raised by the smaller
// of its row's and its column's remaining deficit; since the deficits of the
// rows and of the columns have the same total, one pass over all entries
// clears them all.
func stuff(d Demand) ([][]int64, int64) {
	n := len(d)
	s := make([][]int64, n)
	row := make([]int64, n)
	col := make([]int64, n)
	for i := range n {
		s[i] = append([]int64(nil), d[i]...)
		for j, v := range d[i] {
			row[i] += v
			col[j] += v
		}
	}
	var line int64
	for i := range n {
		line = max(line, row[i], col[i])
	}
	for i := range n {
		row[i], col[i] = line-row[i], line-col[i]
	}
	raise := func(i, j int) {
		if a := min(row[i], col[j]); a > 0 {
			s[i][j] += a
			row[i] -= a
			col[j] -= a
		}
	}
	for i := range n {
		for j := range n {
			if d[i][j] > 0 {
				raise(i, j)
			}
		}
	}
	for i := range n {
		for j := range n {
			if i != j {
				raise(i, j)
			}
		}
	}
	for i := range n {
		raise(i, i)
	}
	return s, line
}

// takeMatching subtracts w along the matching m.left from s and returns
// the configuration, with pairs that have no real demand dark, and whether
// any input in it is lit.
func takeMatching(s [][]int64, left []int, w int64, d Demand) (config, bool) {
	perm := make([]int, len(left))
	lit := false
	for i, j := range left {
		s[i][j] -= w
		if d[i][j] > 0 {
			perm[i] = j
			lit = true
		} else {
			perm[i] = Dark
		}
	}
	return config{perm: perm, weight: w}, lit
}

// fit turns an ordered list of configurations into a schedule: all of them,
// or with o.BestCount the leading m that deliver the most.
func fit(cfgs []config, d Demand, c Constraints, o Options) Schedule {
	if !o.BestCount || len(cfgs) <= 1 {
		return place(cfgs, c)
	}
	var best Schedule
	var bestRep Report
	for m := 1; m <= len(cfgs); m++ {
		s := place(cfgs[:m], c)
		r, err := Evaluate(s, d, c)
		if err != nil {
			// The shapes were checked before decomposing.
			panic("sched: evaluating a fitted schedule: " + err.Error())
		}
		if m == 1 || r.DeliveredBytes() > bestRep.DeliveredBytes() ||
			(r.DeliveredBytes() == bestRep.DeliveredBytes() && r.CircuitBytes > bestRep.CircuitBytes) {
			best, bestRep = s, r
		}
	}
	return best
}

// place gives the configurations W - m*delta in proportion to their
// weights, none less than the minimum slot: those whose share falls below it
// get exactly the minimum and the others share what is left, repeated until
// no share falls below (the shares only shrink, so this ends). Durations are
// rounded down to the nanosecond, so the schedule never exceeds the period.
// The caller keeps len(cfgs) within Constraints.MaxSlots.
func place(cfgs []config, c Constraints) Schedule {
	s := Schedule{Delta: c.Delta, Period: c.Period}
	m := len(cfgs)
	if m == 0 {
		return s
	}
	floor := max(c.MinSlot, time.Nanosecond)
	avail := c.Period - time.Duration(m)*c.Delta
	pinned := make([]bool, m)
	dur := make([]time.Duration, m)
	for {
		free := avail
		var sum uint64
		for k, cf := range cfgs {
			if pinned[k] {
				free -= floor
			} else {
				sum += uint64(cf.weight)
			}
		}
		changed := false
		for k, cf := range cfgs {
			if pinned[k] {
				dur[k] = floor
				continue
			}
			dur[k] = time.Duration(mulDiv(uint64(free), uint64(cf.weight), sum))
			if dur[k] < floor {
				pinned[k], changed = true, true
			}
		}
		if !changed {
			break
		}
	}
	s.Slots = make([]Slot, m)
	for k, cf := range cfgs {
		s.Slots[k] = Slot{Perm: cf.perm, Duration: dur[k]}
	}
	return s
}

// mulDiv is a*b/c rounded down, exact for any a*b (c > 0, a <= c or b <= c).
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}
