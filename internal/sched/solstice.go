package sched

import "fmt"

// Solstice schedules d with the greedy slicing of Liu et al., "Scheduling
// Techniques for Hybrid Circuit/Packet Networks" (CoNEXT 2015): stuff d to
// equal line sums, start a threshold r at the largest power of two not
// above the largest entry, and repeatedly take any perfect matching
// (Hopcroft-Karp) among the entries >= r, for as long as its smallest entry,
// subtracting it; when the entries >= r hold no perfect matching, halve r.
// Slicing stops at the bound or when the stuffed matrix is used up; the
// slices keep the order they were cut in, which is roughly longest first.
// See Options for the bound and the choice of how many slices to keep.
func Solstice(d Demand, c Constraints, o Options) (Schedule, error) {
	if err := checkInputs("Solstice schedule", d, c, o); err != nil {
		return Schedule{}, err
	}
	return fit(solsticeTerms(d, o.limit(c)), d, c, o), nil
}

func solsticeTerms(d Demand, limit int) []config {
	n := len(d)
	s, line := stuff(d)
	left := line * int64(n)
	var top int64
	for _, row := range s {
		for _, v := range row {
			top = max(top, v)
		}
	}
	r := int64(1)
	for r <= top/2 {
		r *= 2
	}
	m := newMatcher(n)
	var out []config
	for left > 0 && len(out) < limit {
		if !m.perfect(s, r) {
			if r == 1 {
				panic(fmt.Sprintf("sched: no perfect matching on the support of a matrix of equal line sums (%d left)", left))
			}
			r /= 2
			continue
		}
		w := s[0][m.left[0]]
		for i, j := range m.left {
			w = min(w, s[i][j])
		}
		cfg, lit := takeMatching(s, m.left, w, d)
		left -= w * int64(n)
		if lit {
			out = append(out, cfg)
		}
	}
	return out
}
