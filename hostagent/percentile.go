package hostagent

import (
	"slices"
)

// Percentiles are given in parts per million so that rank arithmetic is exact
// integer arithmetic: 99.9 % is 999000 ppm, 99.99 % is 999900 ppm.
const (
	PPM50   = 500_000
	PPM90   = 900_000
	PPM99   = 990_000
	PPM999  = 999_000
	PPM9999 = 999_900
)

// PercentileSorted returns the nearest-rank percentile of ascending sorted
// values: the ceil(ppm/1e6 * n)-th smallest value (the smallest for ppm 0).
// It returns 0 for no values.
func PercentileSorted(sorted []int64, ppm int64) int64 {
	n := int64(len(sorted))
	if n == 0 {
		return 0
	}
	rank := (ppm*n + 999_999) / 1_000_000 // ceil without floating point
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// Distribution is the summary of a set of durations, in nanoseconds.
type Distribution struct {
	Count   int   `json:"count"`
	MinNS   int64 `json:"min_ns"`
	P50NS   int64 `json:"p50_ns"`
	P90NS   int64 `json:"p90_ns"`
	P99NS   int64 `json:"p99_ns"`
	P999NS  int64 `json:"p99_9_ns"`
	P9999NS int64 `json:"p99_99_ns"`
	MaxNS   int64 `json:"max_ns"`
	MeanNS  int64 `json:"mean_ns"`
}

// Distribute computes the exact distribution of values. It sorts values in
// place; pass a copy to keep the original order.
func Distribute(values []int64) Distribution {
	if len(values) == 0 {
		return Distribution{}
	}
	slices.Sort(values)
	var sum float64
	for _, v := range values {
		sum += float64(v)
	}
	return Distribution{
		Count:   len(values),
		MinNS:   values[0],
		P50NS:   PercentileSorted(values, PPM50),
		P90NS:   PercentileSorted(values, PPM90),
		P99NS:   PercentileSorted(values, PPM99),
		P999NS:  PercentileSorted(values, PPM999),
		P9999NS: PercentileSorted(values, PPM9999),
		MaxNS:   values[len(values)-1],
		MeanNS:  int64(sum/float64(len(values)) + 0.5),
	}
}
