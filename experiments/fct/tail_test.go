package fct

import (
	"math"
	"testing"
)

// The binomial functions against exact small cases and known values.
func TestBinomial(t *testing.T) {
	// Binomial(10, 0.5): P[X <= 2] = 56/1024.
	if got := binomCDF(10, 0.5, 2); math.Abs(got-56.0/1024) > 1e-12 {
		t.Fatalf("cdf %v", got)
	}
	if got := binomSF(10, 0.5, 8); math.Abs(got-56.0/1024) > 1e-12 {
		t.Fatalf("sf %v", got)
	}
	if q := binomQuantile(10, 0.5, 0.5); q != 5 {
		t.Fatalf("median %d", q)
	}
	// At a per-trial loss of exactly 1e-3 the p99.9 of 300,000 trials
	// is a coin flip: about half the runs have more than 300 affected.
	if p := binomSF(300_000, 1e-3, tailNeed(300_000)); p < 0.45 || p > 0.52 {
		t.Fatalf("P(tail) at 1e-3 = %v", p)
	}
	if tailNeed(300_000) != 301 || tailNeed(1000) != 2 {
		t.Fatalf("tailNeed %d %d", tailNeed(300_000), tailNeed(1000))
	}
}

// The tail of a sample: affected trials counted with their interval, the
// p99.9 bounded by order statistics, P(tail) from the per-trial loss.
func TestTailOf(t *testing.T) {
	const n = 100_000
	fcts := make([]int64, n)
	aff := make([]bool, n)
	for i := range fcts {
		fcts[i] = 20_000 + int64(i%7)
		if i%500 == 0 { // 200 affected: 0.2%
			fcts[i], aff[i] = 1_500_000+int64(i), true
		}
	}
	ts := tailOf(fcts, aff, 2e-3, 20.0)
	if ts.Affected != 200 || ts.AffectedLow >= 2e-3 || ts.AffectedHigh <= 2e-3 {
		t.Fatalf("affected %+v", ts)
	}
	if ts.AffectedP50US < 1500 || ts.AffectedP50VsLossless < 75 {
		t.Fatalf("affected distribution %+v", ts)
	}
	// 200 slow of 100,000: the p99.9 (rank 99,900) and its interval are
	// all in the slow tail.
	if ts.P999LowUS < 1500 || ts.P999HighUS < ts.P999LowUS {
		t.Fatalf("p99.9 interval [%v, %v]", ts.P999LowUS, ts.P999HighUS)
	}
	if ts.PTail < 0.999 {
		t.Fatalf("P(tail) %v at twice the threshold", ts.PTail)
	}
	// Without a per-trial loss there is no P(tail).
	if ts := tailOf(fcts, aff, 0, 20); ts.PTail != 0 {
		t.Fatalf("P(tail) %v without a loss", ts.PTail)
	}
}
