package rail

import (
	"math"
	"sort"

	"testbed/experiments/stats"
)

// SpoolPoint is one fibre length's line-rate test.
type SpoolPoint struct {
	LengthM float64
	Sent    int64
	Lost    int64
}

func (p SpoolPoint) lper() float64 { return float64(p.Lost) / float64(p.Sent) }

// Reach is how far a transceiver type runs at one LPER bound.
type Reach struct {
	Bound float64 `json:"bound"`
	// ReachM is the estimate (null: the spools do not say).
	ReachM *float64 `json:"reach_m"`
	// LowM and HighM bracket it: the longest spool shorter than HighM
	// whose 95% upper bound meets the bound, and the first spool whose LPER
	// is above it (null: none).
	LowM  *float64 `json:"low_m"`
	HighM *float64 `json:"high_m"`
	// Method: interpolated (log LPER linear in length between the spool
	// before HighM, which lost frames, and HighM), extrapolated (the spool
	// before HighM lost nothing: log LPER extended down from HighM and the
	// next lossy spool, kept within the bracket), bracketed (no slope to
	// use: LowM), beyond (no spool's LPER is above the bound) or below
	// (the shortest one's is).
	Method string `json:"method"`
}

// ReachAt estimates the length at which the LPER crosses bound from
// spools of one transceiver type and fibre (any order). Near its cliff a
// link's LPER grows about exponentially with length (the eye closes, the
// BER's Gaussian tail rises: RAIL Fig. 11b), so log LPER is interpolated
// linearly in length. A spool that lost nothing meets the bound only if
// its 95% Wilson upper bound does: too short a test says nothing of 1e-8.
func ReachAt(points []SpoolPoint, bound float64) Reach {
	ps := append([]SpoolPoint(nil), points...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].LengthM < ps[j].LengthM })
	r := Reach{Bound: bound}
	j := -1
	for i, p := range ps {
		if p.Sent > 0 && p.lper() > bound {
			j = i
			break
		}
	}
	f := func(v float64) *float64 { return &v }
	switch {
	case len(ps) == 0:
		r.Method = "no spools"
		return r
	case j < 0:
		r.Method, r.LowM = "beyond", f(ps[len(ps)-1].LengthM)
		return r
	case j == 0:
		r.Method, r.HighM = "below", f(ps[0].LengthM)
		return r
	}
	hi := ps[j]
	r.HighM = f(hi.LengthM)
	for _, p := range ps[:j] {
		if _, up := stats.Wilson(p.Lost, p.Sent, stats.Z95); p.Sent > 0 && up <= bound {
			r.LowM = f(p.LengthM)
		}
	}
	lb := math.Log10(bound)
	if lo := ps[j-1]; lo.Lost > 0 {
		a, b := math.Log10(lo.lper()), math.Log10(hi.lper())
		r.ReachM, r.Method = f(lo.LengthM+(lb-a)/(b-a)*(hi.LengthM-lo.LengthM)), "interpolated"
		return r
	}
	if j+1 < len(ps) && ps[j+1].Sent > 0 && ps[j+1].lper() > hi.lper() {
		nx := ps[j+1]
		slope := (math.Log10(nx.lper()) - math.Log10(hi.lper())) / (nx.LengthM - hi.LengthM)
		v := math.Min(hi.LengthM, hi.LengthM-(math.Log10(hi.lper())-lb)/slope)
		if r.LowM != nil {
			v = math.Max(*r.LowM, v)
		}
		r.ReachM, r.Method = f(v), "extrapolated"
		return r
	}
	r.ReachM, r.Method = r.LowM, "bracketed"
	return r
}
