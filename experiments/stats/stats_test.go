package stats

import (
	"math"
	"testing"
)

func TestWilsonZeroEventsBoundsTheRate(t *testing.T) {
	lo, hi := Wilson(0, 1_000_000, Z95)
	if lo != 0 {
		t.Fatalf("low = %g, want 0", lo)
	}
	// z²/(n+z²) ≈ 3.84e-6: close to the "rule of three" 3/n.
	if want := Z95 * Z95 / (1e6 + Z95*Z95); math.Abs(hi-want) > 1e-12 {
		t.Fatalf("high = %g, want %g", hi, want)
	}
}

func TestWilsonContainsEstimateAndNarrowsWithN(t *testing.T) {
	prev := 1.0
	for _, n := range []int64{100, 10_000, 1_000_000} {
		k := n / 10
		lo, hi := Wilson(k, n, Z95)
		p := float64(k) / float64(n)
		if !(lo < p && p < hi) {
			t.Fatalf("n=%d: [%g,%g] does not contain %g", n, lo, hi, p)
		}
		if hi-lo >= prev {
			t.Fatalf("n=%d: width %g did not shrink from %g", n, hi-lo, prev)
		}
		prev = hi - lo
	}
}

func TestWilsonCoverage(t *testing.T) {
	// Known value (Newcombe 1998, table I): 81 of 263 -> 0.2553 to 0.3662.
	lo, hi := Wilson(81, 263, Z95)
	if math.Abs(lo-0.2553) > 5e-4 || math.Abs(hi-0.3662) > 5e-4 {
		t.Fatalf("Wilson(81,263) = [%.4f, %.4f], want [0.2553, 0.3662]", lo, hi)
	}
}

func TestEventsForPrecision(t *testing.T) {
	if got := EventsForPrecision(0.2); got != 97 {
		t.Fatalf("EventsForPrecision(0.2) = %d, want 97", got)
	}
}
