package reactor_test

import (
	"math"
	"testing"

	"testbed/experiments/reactor"
	"testbed/experiments/recipetest"
	"testbed/results"
)

// §5.3's Fig. 9 on the simulated lab: three flows to rh1, one high at
// first, one more promoted from the EPS to circuits each phase. Every
// number the test expects follows from the paper's settings alone: k high
// flows get k configurations of W/k each, a night of delta each; a
// circuit carries data from the PFC unpause taking effect to the pause
// taking effect (§3.4's delays, on average 0.637 us less than the lit
// time); it is rate-limited to the port rate less what the EPS brings to
// the receiver (§3.3: the low flows, paced at 96 Mb/s on the wire); and
// goodput is TCP/IPv4 with timestamps in 1500-byte packets (1448 of 1538
// bytes on the wire), the low flows' UDP/IPv4 (1472 of 1538).
func TestTimeVaryingSharesFollowFromTheSchedule(t *testing.T) {
	if raceDetector {
		t.Skip("the real-time switch can miss a replacement under the race detector on a loaded machine: make test-long runs it without it, alone (REALTIME)")
	}
	lab := startLab(t, 53)
	var s reactor.TimeVaryingSummary
	// Phases of 20 periods, the default: with phases under about 16
	// periods, the EPS bytes a promoted bulk flow sends before its first
	// circuit are still queued at the receiver's EPS port (which drains at
	// what §3.3's rate limit leaves it) when the next low flow's interval
	// ends, and that flow's last packets arrive after it (docs/reactor.md).
	res := runRecipe(t, lab, reactor.NewTimeVarying(), &s, nil)
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	recipetest.CheckReport(t, res.Dir, "goodput-over-time", "goodput-per-phase")
	checkRestored(t, lab)
	const (
		W     = 1500.0 // us
		night = 30.0
		link  = 10e9
		low   = 96e6
		pfc   = (1.3-1.2)/2 + (2.188-1.014)/2
		tcp   = 1448.0 / 1538
		udp   = 1472.0 / 1538
	)
	if len(s.Phases) != 3 {
		t.Fatalf("%d phases, want 3: %+v", len(s.Phases), s.Phases)
	}
	for k, ph := range s.Phases {
		m := float64(k + 1)
		lows := 3 - m
		rate := link - lows*low
		want := ((W-m*night)/m - pfc) / W * rate * tcp / 1e9
		if len(ph.HighGbps) != k+1 || len(ph.LowGbps) != 2-k {
			t.Fatalf("phase %d: %d high and %d low flows, want %d and %d", k, len(ph.HighGbps), len(ph.LowGbps), k+1, 2-k)
		}
		for i, g := range ph.HighGbps {
			if math.Abs(g-want) > 0.003*want {
				t.Errorf("phase %d: high flow %d at %.4f Gb/s, want %.4f within 0.3%%", k, i, g, want)
			}
		}
		for i, g := range ph.LowGbps {
			if w := low * udp / 1e9; math.Abs(g-w) > 1e-4 {
				t.Errorf("phase %d: low flow %d at %.5f Gb/s, want %.5f", k, i, g, w)
			}
		}
		if ph.Jain < 0.9999 {
			t.Errorf("phase %d: Jain's index %.5f among %v", k, ph.Jain, ph.HighGbps)
		}
	}
	// Promoted mid-period, a flow waits W/2 for the boundary, then for
	// the configurations before its own (the last) and its night; its
	// class is unpaused 1.2 us before the night budget ends and takes
	// 1.2-1.3 us to act. The recipe reaches the real-time switch over
	// REST, so on a loaded machine the schedule can miss the first
	// boundary and take a later one: whole periods later, which the
	// summary counts.
	if len(s.PromotionUS) != 2 {
		t.Fatalf("promotions %v, want two", s.PromotionUS)
	}
	late := 0
	for i, d := range s.PromotionUS {
		k := float64(i + 2)
		want := W/2 + (k-1)*W/k + night
		n := math.Round((d - want) / W)
		late = max(late, int(n))
		if r := d - want - n*W; n < 0 || r < -0.1 || r > 0.2 {
			t.Errorf("promotion %d took %.3f us, want %.1f (+0.1) and whole periods", i, d, want)
		}
	}
	if s.PeriodsLate != late {
		t.Errorf("summary: %d periods late, the promotions %v say %d", s.PeriodsLate, s.PromotionUS, late)
	}
	if late > 0 {
		t.Logf("the switch took a schedule %d periods late (a loaded machine)", late)
	}
	// Fig. 9's time series: every bin of a high flow, its first period
	// excepted, at its phase's share; the receiver's total never above
	// its link.
	rows := readTable(t, res.Dir, "goodput")
	perBin := map[string]float64{}
	for _, r := range rows {
		perBin[r["time_ms"]] += num(t, r["goodput_gbps"])
	}
	for at, g := range perBin {
		if g > link/1e9 {
			t.Errorf("bin at %s ms: %.3f Gb/s received, more than the link", at, g)
		}
	}
	if len(rows) != 3*3*20 {
		t.Errorf("%d rows of goodput, want %d (3 flows, 60 bins)", len(rows), 3*3*20)
	}
}
