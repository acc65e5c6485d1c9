package sched

import (
	"math/rand/v2"
	"testing"
	"time"
)

// hybrid64 is the §5.4 simulation setting: one ToR of 64 hosts at 100 Gb/s,
// a 10 Gb/s EPS, 3 ms periods, a 20 us gap and configurations of at least
// 40 us including it (at most 75 per period).
func hybrid64() Constraints {
	return Constraints{
		N:        64,
		Period:   3 * time.Millisecond,
		Delta:    20 * time.Microsecond,
		MinSlot:  20 * time.Microsecond,
		LinkRate: 100e9,
		EPSRate:  10e9,
	}
}

// skewed64 is the §5.4 workload: host j sends to hosts j+1..j+21, a large
// flow of share 0.9 to j+1 and the rest split evenly among the other 20.
func skewed64(c Constraints) Demand {
	rates := make([][]float64, c.N)
	for j := range rates {
		rates[j] = make([]float64, c.N)
		rates[j][(j+1)%c.N] = 0.9 * c.LinkRate
		for k := 2; k <= 21; k++ {
			rates[j][(j+k)%c.N] = 0.1 * c.LinkRate / 20
		}
	}
	return FromRates(rates, c.Period)
}

// dense64 gives every pair a random share of what a host can send.
func dense64(c Constraints) Demand {
	rng := rand.New(rand.NewPCG(64, 64))
	full := bytesIn(c.Period, c.LinkRate)
	d := NewDemand(c.N)
	for i := range c.N {
		for j := range c.N {
			if i != j {
				d[i][j] = rng.Int64N(2*full/int64(c.N) + 1)
			}
		}
	}
	return d
}

func benchmark(b *testing.B, run func(Demand, Constraints, Options) (Schedule, error), d Demand, c Constraints, o Options) {
	b.Helper()
	var s Schedule
	for b.Loop() {
		var err error
		if s, err = run(d, c, o); err != nil {
			b.Fatal(err)
		}
	}
	r, err := Evaluate(s, d, c)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(s.Slots)), "slots")
	b.ReportMetric(float64(r.DeliveredBytes())/float64(d.Total()), "delivered/demand")
}

func BenchmarkBvN64Dense(b *testing.B) {
	c := hybrid64()
	benchmark(b, BvN, dense64(c), c, Options{})
}

func BenchmarkBvN64DenseBestCount(b *testing.B) {
	c := hybrid64()
	benchmark(b, BvN, dense64(c), c, Options{BestCount: true})
}

func BenchmarkBvN64Skewed(b *testing.B) {
	c := hybrid64()
	benchmark(b, BvN, skewed64(c), c, Options{})
}

// BenchmarkBvN64Full runs the decomposition to the end: no gap and no
// minimum slot put no bound on the number of configurations.
func BenchmarkBvN64Full(b *testing.B) {
	c := hybrid64()
	c.Delta, c.MinSlot = 0, 0
	benchmark(b, BvN, dense64(c), c, Options{})
}

func BenchmarkSolstice64Dense(b *testing.B) {
	c := hybrid64()
	benchmark(b, Solstice, dense64(c), c, Options{})
}

func BenchmarkSolstice64DenseBestCount(b *testing.B) {
	c := hybrid64()
	benchmark(b, Solstice, dense64(c), c, Options{BestCount: true})
}

func BenchmarkSolstice64Skewed(b *testing.B) {
	c := hybrid64()
	benchmark(b, Solstice, skewed64(c), c, Options{})
}

func BenchmarkSolstice64Full(b *testing.B) {
	c := hybrid64()
	c.Delta, c.MinSlot = 0, 0
	benchmark(b, Solstice, dense64(c), c, Options{})
}

func BenchmarkRoundRobin64(b *testing.B) {
	c := hybrid64()
	for b.Loop() {
		if _, err := RoundRobin(c); err != nil {
			b.Fatal(err)
		}
	}
}
