package stardustmodel

import (
	"fmt"
	"math/rand/v2"
)

// The Default fabric (16 FAs, 4 FEs, 8 links of 50 Gb/s per FA, 256 B
// cells, 4 KB credits, 3% speed-up, 100 m links) at host loads from 0.5 to
// 1.2 of the port rate, FCI on, 20000 slots each (870 us of fabric time):
// the last-stage links' utilisation, the fabric latency's median, 99.9th
// percentile and maximum, the queue tail, FCI-marked and lost cells.
func Example_fig9() {
	fmt.Println("load  util   p50_us  p999_us  max_us  P(Q>=8)  fci_cells  lost")
	for _, load := range []float64{0.5, 0.7, 0.8, 0.9, 0.95, 1.2} {
		c := Default()
		c.Load = load
		m, err := New(c, rand.New(rand.NewPCG(1, 17)))
		if err != nil {
			panic(err)
		}
		m.Run(20000)
		s := m.S
		fmt.Printf("%.2f  %.3f  %.2f    %.2f     %.2f    %.4f   %9d  %d\n", load, s.Utilisation(),
			s.LatencyQuantile(0.5)*1e6, s.LatencyQuantile(0.999)*1e6, s.LatencyQuantile(1)*1e6,
			s.QueueTail(8), s.FCICells, s.CellsLost)
	}
	// Output:
	// load  util   p50_us  p999_us  max_us  P(Q>=8)  fci_cells  lost
	// 0.50  0.541  1.13    1.35     1.48    0.0000           0  0
	// 0.70  0.757  1.18    1.57     1.78    0.0131           0  0
	// 0.80  0.862  1.22    1.70     1.96    0.0632           0  0
	// 0.90  0.952  1.44    2.87     3.31    0.4844       25710  0
	// 0.95  0.917  1.35    3.09     3.48    0.4050      117847  0
	// 1.20  0.894  1.35    5.14     5.92    0.3733      172347  0
}

// The same fabric where FCI engages, under the Tofino programs'
// proportional FCI law (Config.FCIReaction) instead of the cut law above:
// a credit cancelled per credit's worth of marked cells. It carries more
// at 0.95 and 1.2 but holds the last-stage queues less well: at 1.2 they
// reach their 128 cells and lose some, where the cut law loses none.
func Example_fig9Proportional() {
	fmt.Println("load  util   p50_us  p999_us  max_us  P(Q>=8)  fci_cells  cancelled  lost")
	for _, load := range []float64{0.9, 0.95, 1.2} {
		c := Default()
		c.Load = load
		c.FCIReaction = FCIProportional
		m, err := New(c, rand.New(rand.NewPCG(1, 17)))
		if err != nil {
			panic(err)
		}
		m.Run(20000)
		s := m.S
		fmt.Printf("%.2f  %.3f  %.2f    %.2f     %.2f    %.4f   %9d  %9d  %d\n", load, s.Utilisation(),
			s.LatencyQuantile(0.5)*1e6, s.LatencyQuantile(0.999)*1e6, s.LatencyQuantile(1)*1e6,
			s.QueueTail(8), s.FCICells, s.FCICancelled, s.CellsLost)
	}
	// Output:
	// load  util   p50_us  p999_us  max_us  P(Q>=8)  fci_cells  cancelled  lost
	// 0.90  0.966  1.52    2.96     3.48    0.6171       38181       2327  0
	// 0.95  0.952  1.78    5.22     6.27    0.7715      293762      18293  0
	// 1.20  0.949  1.83    6.66     6.66    0.7867      391745      24422  11042
}
