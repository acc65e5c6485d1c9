package phy

// Spread is the minimum, mean and maximum of a latency over frames, in ns.
type Spread struct{ Min, Mean, Max float64 }

func (s *Spread) add(v float64, n int) {
	if n == 0 || v < s.Min {
		s.Min = v
	}
	if v > s.Max {
		s.Max = v
	}
	s.Mean += (v - s.Mean) / float64(n+1)
}

// HopLatency is what one link costs a switch behind it, measured from the header's first
// bit reaching the receiver: until the header is decoded (what a cut-through switch waits
// for) and until the last byte is (a store-and-forward switch).
type HopLatency struct {
	CutThrough, StoreAndForward Spread
	// Cases counts the frames of each of the paper's Fig. 4 cases.
	Cases map[byte]int
}

// MeasureHop sends n back-to-back frames of size bytes over a fresh link of cfg: each
// frame starts where the previous one's gap ends, so their headers walk through the
// codeword offsets as the traffic places them.
func MeasureHop(cfg LinkConfig, size, n int) (HopLatency, error) {
	l, err := NewLink(cfg)
	if err != nil {
		return HopLatency{}, err
	}
	h := HopLatency{Cases: map[byte]int{}}
	for i := 0; i < n; i++ {
		f, err := l.Send(0, size)
		if err != nil {
			return HopLatency{}, err
		}
		h.CutThrough.add(f.HeaderNs-f.HeaderFirstBitRxNs, i)
		h.StoreAndForward.add(f.LastNs-f.HeaderFirstBitRxNs, i)
		if f.Case != 0 {
			h.Cases[f.Case]++
		}
	}
	return h, nil
}

// PeakToPeak is the spread's jitter.
func (s Spread) PeakToPeak() float64 { return s.Max - s.Min }
