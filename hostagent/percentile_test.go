package hostagent

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// nearestRankByCounting is the definition of the nearest-rank percentile,
// checked without sorting: the smallest value v such that at least
// ppm/1e6 of the values are <= v.
func nearestRankByCounting(values []int64, ppm int64) int64 {
	n := int64(len(values))
	best := int64(0)
	found := false
	for _, v := range values {
		var le int64
		for _, x := range values {
			if x <= v {
				le++
			}
		}
		// le/n >= ppm/1e6, in integers
		if le*1_000_000 >= ppm*n && (!found || v < best) {
			best, found = v, true
		}
	}
	return best
}

func TestPercentileAgainstDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 2, 3, 10, 999, 1000, 1001, 2345} {
		values := make([]int64, n)
		for i := range values {
			values[i] = int64(rng.IntN(500)) // many ties
		}
		sorted := slices.Clone(values)
		slices.Sort(sorted)
		for _, ppm := range []int64{0, 1, PPM50, PPM90, PPM99, PPM999, PPM9999, 1_000_000} {
			got := PercentileSorted(sorted, ppm)
			want := nearestRankByCounting(values, ppm)
			if ppm == 0 {
				want = sorted[0]
			}
			if got != want {
				t.Errorf("n=%d ppm=%d: got %d, definition gives %d", n, ppm, got, want)
			}
		}
	}
}

func TestPercentileExactRanks(t *testing.T) {
	// 1..1000: the p99.9 is the 999th value, not the 1000th (a float
	// 0.999*1000 rounds up to 999.0000000000001).
	v := make([]int64, 1000)
	for i := range v {
		v[i] = int64(i + 1)
	}
	for ppm, want := range map[int64]int64{PPM50: 500, PPM90: 900, PPM99: 990, PPM999: 999, PPM9999: 1000} {
		if got := PercentileSorted(v, ppm); got != want {
			t.Errorf("ppm %d of 1..1000: got %d, want %d", ppm, got, want)
		}
	}
	if got := PercentileSorted(nil, PPM50); got != 0 {
		t.Errorf("empty: got %d", got)
	}
}

func TestDistribute(t *testing.T) {
	v := []int64{5, 1, 4, 2, 3}
	d := Distribute(slices.Clone(v))
	want := Distribution{Count: 5, MinNS: 1, P50NS: 3, P90NS: 5, P99NS: 5, P999NS: 5, P9999NS: 5, MaxNS: 5, MeanNS: 3}
	if d != want {
		t.Errorf("got %+v, want %+v", d, want)
	}
	if (Distribute(nil) != Distribution{}) {
		t.Error("empty input must give the zero distribution")
	}
}

func BenchmarkDistribute1e6(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]int64, 1_000_000)
	for i := range src {
		src[i] = 15_000 + int64(rng.ExpFloat64()*5_000)
	}
	buf := make([]int64, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, src)
		Distribute(buf)
	}
}
