package sched

import "fmt"

// BvN schedules d by Birkhoff-von Neumann decomposition (Birkhoff 1946;
// Chang, Chen and Huang, INFOCOM 2000): stuff d to equal line sums, then
// repeatedly take the bottleneck perfect matching of the positive entries
// (the one whose smallest entry is largest, found by binary search over the
// entry values with Hopcroft-Karp), with that smallest entry as its weight,
// and subtract it. Bottleneck weights never increase from one term to the
// next, so stopping after the bound keeps the largest terms; the EPS gets
// what the dropped terms would have carried. See Options for the bound and
// the choice of how many terms to keep.
func BvN(d Demand, c Constraints, o Options) (Schedule, error) {
	if err := checkInputs("BvN schedule", d, c, o); err != nil {
		return Schedule{}, err
	}
	return fit(bvnTerms(d, o.limit(c)), d, c, o), nil
}

// bvnTerms returns up to limit terms of the decomposition, in order, that
// light at least one pair with demand. Terms made only of stuffing are
// subtracted but not returned.
func bvnTerms(d Demand, limit int) []config {
	n := len(d)
	s, line := stuff(d)
	left := line * int64(n) // what is left to decompose
	m := newMatcher(n)
	var out []config
	values := make([]int64, 0, n*n)
	// Subtracting a matching only lowers entries, so the bottleneck value
	// never rises: only values up to the previous one need trying.
	prev := line
	for left > 0 && len(out) < limit {
		values = values[:0]
		for _, row := range s {
			for _, v := range row {
				if v > 0 && v <= prev {
					values = append(values, v)
				}
			}
		}
		// Search the values for the largest that admits a perfect
		// matching, quickselect-style: try one, keep the values above it
		// if it does and below it if not. The smallest positive value
		// always does: s has equal line sums, so its support holds a
		// perfect matching (Birkhoff-König).
		var w int64
		for len(values) > 0 {
			pivot := values[len(values)/2]
			ok := m.perfect(s, pivot)
			if ok {
				w = pivot
			}
			kept := values[:0]
			for _, v := range values {
				if (ok && v > pivot) || (!ok && v < pivot) {
					kept = append(kept, v)
				}
			}
			values = kept
		}
		if w == 0 || !m.perfect(s, w) {
			panic(fmt.Sprintf("sched: no perfect matching on the support of a matrix of equal line sums (%d left)", left))
		}
		prev = w
		cfg, lit := takeMatching(s, m.left, w, d)
		left -= w * int64(n)
		if lit {
			out = append(out, cfg)
		}
	}
	return out
}
