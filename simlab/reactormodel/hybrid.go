package reactormodel

import "fmt"

// The two ToRs of §5.4.
const (
	ToRHybrid  = "hybrid"  // REACToR: circuits plus an EPS
	ToRCircuit = "circuit" // a pure circuit switch
)

// HybridPoint is one point of §5.4's Figs. 10 and 11.
type HybridPoint struct {
	ToR string
	// EPSGbps is the hybrid's EPS rate per host (0 for the circuit ToR).
	EPSGbps float64
	// LargeShare is the large flow's share of each host's demand;
	// SmallFlows is the number of small flows sharing the rest.
	LargeShare float64
	SmallFlows int
	// GoodputFraction is what the ToR delivered of the offered demand.
	GoodputFraction float64
	// Configurations is the number of configurations per period the
	// scheduler chose (in the last measured period).
	Configurations int
}

// Hybrid54 runs one point of §5.4 on Section54's ToR: tor is ToRHybrid with
// an EPS of epsRate b/s per host, or ToRCircuit; every host sends a large
// flow of the given share of its link and small flows sharing the rest
// (Skewed). It measures three periods after two of warm-up.
func Hybrid54(tor string, epsRate, share float64, small int, seed uint64) (HybridPoint, error) {
	pt := HybridPoint{ToR: tor, EPSGbps: epsRate / 1e9, LargeShare: share, SmallFlows: small}
	switch tor {
	case ToRHybrid:
		if !(epsRate > 0) {
			return pt, fmt.Errorf("hybrid ToR with an EPS of %g b/s, expected a positive rate", epsRate)
		}
	case ToRCircuit:
		epsRate, pt.EPSGbps = 0, 0
	default:
		return pt, fmt.Errorf("ToR %q, expected %q or %q", tor, ToRHybrid, ToRCircuit)
	}
	if !(share >= 0 && share <= 1) || small < 0 || (share < 1 && small == 0) {
		return pt, fmt.Errorf("large share %g with %d small flows, expected a share in [0, 1] and small flows to carry the rest", share, small)
	}
	p := Section54(epsRate)
	p.Seed = seed
	p.NoSlotRecords = true
	r, err := Run(p, Skewed(p.Hosts, p.LinkRate, share, small), 2, 3)
	if err != nil {
		return pt, fmt.Errorf("%s ToR, share %g, %d small flows: %w", tor, share, small, err)
	}
	pt.GoodputFraction = r.GoodputFraction
	if len(r.Periods) > 0 {
		pt.Configurations = len(r.Periods[len(r.Periods)-1].Schedule.Slots)
	}
	return pt, nil
}
