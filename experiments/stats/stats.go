// Package stats holds the estimators recipes report with.
package stats

import "math"

// Z95 is the two-sided 95% standard normal quantile.
const Z95 = 1.959963984540054

// Wilson returns the Wilson score interval for k successes in n trials at
// normal quantile z (Wilson 1927; Brown, Cai & DasGupta 2001 recommend it
// over the Wald interval, which collapses to [0,0] when k = 0). With k = 0
// the upper bound is z²/(n+z²): a point with no loss still says how small
// the loss is known to be.
func Wilson(k, n int64, z float64) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	nf, p := float64(n), float64(k)/float64(n)
	z2 := z * z
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	low, high = math.Max(0, centre-half), math.Min(1, centre+half)
	if k == 0 {
		low = 0
	}
	if k == n {
		high = 1
	}
	return low, high
}

// EventsForPrecision is how many events (losses) make the 95% interval's
// half-width about rel times the estimate, for a rare-event rate: the
// relative standard error of a Poisson count k is 1/sqrt(k).
func EventsForPrecision(rel float64) int64 {
	if rel <= 0 {
		return math.MaxInt64
	}
	return int64(math.Ceil(Z95 * Z95 / (rel * rel)))
}
