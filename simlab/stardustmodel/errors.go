package stardustmodel

import (
	"fmt"
	"math"
)

// Links that corrupt rather than die (§5.10, App. E): a link with an
// error rate p loses each cell it carries with probability p (the
// receiver drops a cell that fails its check). The receiving end measures
// the link's error rate over every reachability period from all the
// cells' worth of bits the link carries in it, data or idle (its FEC sees
// every codeword), and when the rate crosses the threshold the link marks
// itself faulty on its reachability cells: it is out at once, and back
// only after th good reachability cells, each closing a period whose
// rate was below the threshold. Only FA-FE links corrupt here.

type linkErrs struct {
	rate      []float64 // by link number
	threshold float64
	corrupted []int64 // data cells lost, by link
	faulty    []int64 // periods whose rate crossed the threshold, by link
}

// SetLinkErrorRate sets FA-FE link's cell error rate (0: clean) and the
// measured rate above which a receiving end marks the link faulty (the
// same for every link; 0 never marks).
func (m *Model) SetLinkErrorRate(link int, rate, threshold float64) error {
	if link < 0 || link >= m.c.FAs*m.c.LinksPerFA {
		return fmt.Errorf("link %d: the FA-FE links are 0..%d", link, m.c.FAs*m.c.LinksPerFA-1)
	}
	if rate < 0 || rate > 1 || threshold < 0 || threshold > 1 {
		return fmt.Errorf("error rate %g, threshold %g: expected fractions", rate, threshold)
	}
	if m.errs == nil {
		n := len(m.rt.linkUp)
		m.errs = &linkErrs{rate: make([]float64, n), corrupted: make([]int64, n), faulty: make([]int64, n)}
	}
	m.errs.rate[link], m.errs.threshold = rate, threshold
	return nil
}

// corrupts draws whether a data cell on link li is corrupted, counting it.
func (m *Model) corrupts(li int) bool {
	if m.errs == nil || m.errs.rate[li] == 0 || m.r.Float64() >= m.errs.rate[li] {
		return false
	}
	m.errs.corrupted[li]++
	m.S.CellsCorrupted++
	return true
}

// errored draws the errors among one period's cells' worth on link li
// and says whether their rate crossed the threshold.
func (m *Model) errored(li int) bool {
	e := m.errs
	p := e.rate[li]
	if p == 0 || e.threshold == 0 {
		return false
	}
	n := m.c.ReachPeriodSlots
	k := 0
	if mean := float64(n) * p; mean < 30 {
		for i := 0; i < n; i++ {
			if m.r.Float64() < p {
				k++
			}
		}
	} else { // many errors: the normal approximation of the binomial
		k = int(math.Round(mean + m.r.NormFloat64()*math.Sqrt(mean*(1-p))))
	}
	if float64(k)/float64(n) <= e.threshold {
		return false
	}
	e.faulty[li]++
	return true
}

// LinkCorrupted is the data cells link li lost to errors; LinkFaultyPeriods
// the reachability periods in which its measured rate crossed the
// threshold.
func (m *Model) LinkCorrupted(li int) int64 {
	if m.errs == nil {
		return 0
	}
	return m.errs.corrupted[li]
}

// LinkFaultyPeriods: see LinkCorrupted.
func (m *Model) LinkFaultyPeriods(li int) int64 {
	if m.errs == nil {
		return 0
	}
	return m.errs.faulty[li]
}

// LinkValid says whether both ends of FA-FE link li hold it valid: the FA
// sprays on it and the FE sends on it.
func (m *Model) LinkValid(li int) bool {
	if !m.rt.on {
		return true
	}
	if !m.rt.fa.e[li].valid {
		return false
	}
	for q := range m.rt.dn.e {
		if m.dnLink(q) == li {
			return m.rt.dn.e[q].valid
		}
	}
	return true
}
