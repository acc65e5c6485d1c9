package rail

import (
	"math"
	"testing"
)

func TestReachAt(t *testing.T) {
	// LPER = 10^((L-500)/5) (1e-6 at 470 m, 1e-3 at 485 m) sampled on
	// 10 m spools, a million frames each.
	pts := []SpoolPoint{}
	for _, l := range []float64{450, 460, 470, 480, 490, 300} {
		p := math.Pow(10, (l-500)/5)
		pts = append(pts, SpoolPoint{LengthM: l, Sent: 1e9, Lost: int64(math.Round(p * 1e9))})
	}
	for _, c := range []struct {
		bound float64
		want  float64
		how   string
	}{{1e-3, 485, "interpolated"}, {1e-6, 470, "interpolated"}, {1e-8, 460, "interpolated"}} {
		r := ReachAt(pts, c.bound)
		if r.ReachM == nil || math.Abs(*r.ReachM-c.want) > 0.5 || r.Method != c.how {
			t.Errorf("bound %g: %+v, want %g m %s", c.bound, r, c.want, c.how)
		}
	}
	// The spools before the cliff lost nothing: the slope of the first two
	// lossy ones carries the estimate down; a million loss-free frames do
	// not show 1e-6 is met, so nothing brackets it from below.
	few := []SpoolPoint{{300, 1e6, 0}, {470, 1e10, 0}, {480, 1e6, 10}, {490, 1e6, 1000}}
	r := ReachAt(few, 1e-6)
	if r.ReachM == nil || math.Abs(*r.ReachM-475) > 0.01 || r.Method != "extrapolated" || *r.LowM != 470 || *r.HighM != 480 {
		t.Errorf("extrapolated: %+v", r)
	}
	// 1e10 loss-free frames meet 1e-9 (upper bound 3.8e-10): the
	// extrapolation (460 m) is kept at or above that spool.
	if r := ReachAt(few, 1e-9); *r.ReachM != 470 || *r.LowM != 470 {
		t.Errorf("kept within the bracket: %+v", r)
	}
	if r := ReachAt(few[1:], 1e-12); r.ReachM == nil || math.Abs(*r.ReachM-445) > 1e-9 || r.LowM != nil {
		t.Errorf("not bracketed below: %+v", r)
	}
	if r := ReachAt(few, 0.5); r.Method != "beyond" || r.ReachM != nil || *r.LowM != 490 {
		t.Errorf("beyond: %+v", r)
	}
	if r := ReachAt([]SpoolPoint{{100, 10, 5}}, 1e-3); r.Method != "below" || *r.HighM != 100 {
		t.Errorf("below: %+v", r)
	}
}
