package backpressure_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/experiments/backpressure"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
)

func run(t *testing.T, sets ...string) (*orchestrator.RunResult, backpressure.Summary, []map[string]string) {
	t.Helper()
	lab := recipetest.StartLab(t, 21)
	var s backpressure.Summary
	res := recipetest.Run(t, lab, backpressure.New(), 21, &s, nil, sets...)
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if v, _ := lab.World().VOA("voa3"); v != nil && v.Channels[0].Target() != 0 {
		t.Errorf("VOA left at %.2f dB", v.Channels[0].Target())
	}
	return res, s, recipetest.ReadTable(t, res.Dir, "timeseries")
}

// LinkGuardian Fig. 9 with a line-rate flow: the loss costs frames until
// LinkGuardian is on; with backpressure nothing is lost after that and the
// reorder buffer stays near its pause threshold; without it the buffer
// fills, overflows, and delivery suffers. At 100G: there frames arrive as
// fast as the recirculation port drains them, so a tenth of a second
// without backpressure overflows the buffer (at 25G it drains four times
// faster than frames arrive and takes seconds to).
func TestBackpressureKeepsTheReorderBufferInBounds(t *testing.T) {
	res, s, rows := run(t, "links=lg100", "duration_s=0.3", "loss_on_s=0.1", "protect_on_s=0.2", "interval=5ms", "calib_losses=50")
	recipetest.CheckReport(t, res.Dir, "delivered-rate", "reorder-buffer", "sender-queue")
	runs := s.Links["lg100"]
	on, off := runs["on"], runs["off"]
	if len(runs) != 2 {
		t.Fatalf("summary: %+v", s)
	}
	for bp, r := range runs {
		c, l, p := r.Phases[backpressure.PhaseClean], r.Phases[backpressure.PhaseLoss], r.Phases[backpressure.PhaseProtected]
		t.Logf("backpressure %s: clean %.2f/%.2f Gb/s, loss %.2f/%.2f (%d FCS), protected %.2f/%.2f Gb/s, rx buffer %d B, %d pauses, %d timeouts, lost %d of %d (%d while protected)",
			bp, c.SenderRateGbps, c.DeliveredRateGbps, l.SenderRateGbps, l.DeliveredRateGbps, l.FCSErrors, p.SenderRateGbps, p.DeliveredRateGbps,
			p.MaxRxBufferBytes, p.PauseFrames, p.Timeouts, r.FramesLost, r.FramesSent, r.LostWhileProtected)
		if c.FCSErrors != 0 || c.DeliveredRateGbps < 99.6 || c.DeliveredRateGbps > 100 {
			t.Errorf("%s: clean phase %+v", bp, c)
		}
		if l.FCSErrors == 0 || l.DeliveredRateGbps >= l.SenderRateGbps {
			t.Errorf("%s: loss phase loses nothing: %+v", bp, l)
		}
		if p.FCSErrors == 0 {
			t.Errorf("%s: protected phase has no corruption to recover from", bp)
		}
	}
	// With backpressure: nothing lost while protected; the receiver
	// pauses the sender before its buffer passes the pause threshold plus
	// what lands after the pause is sent: the frames the sender sends
	// while the pause crosses back (t_flight_resume, §4) and those already
	// in the receiver's pipeline and on its recirculation loop (a pass
	// each, about 1 us on Tofino), at line rate.
	pOn, pOff := on.Phases[backpressure.PhaseProtected], off.Phases[backpressure.PhaseProtected]
	if on.LostWhileProtected != 0 || pOn.PauseFrames == 0 || on.PauseCells == 0 {
		t.Errorf("backpressure on: %d lost while protected, %d pause frames, threshold %d cells", on.LostWhileProtected, pOn.PauseFrames, on.PauseCells)
	}
	tf, err := lg.FlightResume(100e9)
	if err != nil {
		t.Fatal(err)
	}
	slot := float64((1518+20+lg.HeaderBytes)*8) / 100e9
	inFlight := int64(math.Ceil((tf + 2*time.Microsecond).Seconds() / slot))
	if lim := int64(on.PauseCells)*lg.CellBytes + inFlight*(1518+lg.HeaderBytes); pOn.MaxRxBufferBytes > lim {
		t.Errorf("backpressure on: reorder buffer reached %d B, pause threshold %d cells", pOn.MaxRxBufferBytes, on.PauseCells)
	}
	if off.PauseCells != 0 || pOff.PauseFrames != 0 {
		t.Errorf("backpressure off still pauses: %d cells, %d pause frames", off.PauseCells, pOff.PauseFrames)
	}
	if pOff.MaxRxBufferBytes <= pOn.MaxRxBufferBytes || off.LostWhileProtected <= on.LostWhileProtected || pOff.DeliveredRateGbps >= pOn.DeliveredRateGbps {
		t.Errorf("without backpressure the buffer should overflow and delivery suffer: on %+v, off %+v", pOn, pOff)
	}
	// One row per interval per run, phases in order, by the device clock.
	n := map[string]int{}
	for _, r := range rows {
		n[r["backpressure"]]++
	}
	if n["on"] != 60 || n["off"] != 60 {
		t.Errorf("rows per run: %v, want 60 (0.3 s / 5 ms)", n)
	}
	if rows[0]["phase"] != "clean" || !strings.HasPrefix(rows[0]["time_s"], "0.005") || rows[59]["phase"] != "protected" {
		t.Errorf("first row %v, last %v", rows[0], rows[59])
	}
}

func TestBackpressureRejectsPhasesOutOfOrder(t *testing.T) {
	lab := recipetest.StartLab(t, 22)
	r := backpressure.New()
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"loss_on_s=3", "protect_on_s=2"}, "loss_on_s <= protect_on_s < duration_s"},
		{[]string{"protect_on_s=9"}, "loss_on_s <= protect_on_s < duration_s"},
		{[]string{"backpressure=maybe"}, "expected on or off"},
		{[]string{"loss_rate=1e-9"}, "not above target_loss"},
		{[]string{"interval=100us", "duration_s=200"}, "polls"},
	} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, c.sets)
		if err == nil {
			_, err = r.Plan(&orchestrator.PlanContext{Lab: lab.Inventory(), Params: params, Simulated: true})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v does not say %q", c.sets, err, c.want)
		}
	}
}

// LinkGuardian Fig. 9 with a TCP flow (§4.2, Appendix B.3): h1 runs
// iperf3 -C dctcp to h2 across lg100 while the recipe switches the loss
// and then LinkGuardian on. Unprotected, the link's losses reach TCP: it
// retransmits and its goodput drops below the lossless one. Protected
// with backpressure, no loss reaches it after the interval in which
// protection came on (segments lost just before are still being resent
// then) and the receiver pauses the sender; without backpressure the
// reorder buffer overflows and TCP retransmits again.
func TestBackpressureWithATCPFlow(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes this run ten times slower: make test runs it without")
	}
	_, s, rows := run(t, "flow=tcp", "cc=dctcp", "links=lg100", "duration_s=1", "loss_on_s=0.3", "protect_on_s=0.6", "interval=100ms", "calib_losses=50")
	runs := s.Links["lg100"]
	if len(runs) != 2 {
		t.Fatalf("summary: %+v", s)
	}
	late := map[string]int64{}
	for _, r := range rows {
		if r["flow"] != "dctcp" {
			t.Fatalf("row %v: not the TCP flow", r)
		}
		at, err := strconv.ParseFloat(r["time_s"], 64)
		if err != nil {
			t.Fatal(err)
		}
		if r["phase"] == backpressure.PhaseProtected && at > 0.75 {
			n, err := strconv.ParseInt(r["retransmits"], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			late[r["backpressure"]] += n
		}
	}
	for bp, r := range runs {
		c, l, p := r.Phases[backpressure.PhaseClean], r.Phases[backpressure.PhaseLoss], r.Phases[backpressure.PhaseProtected]
		t.Logf("backpressure %s: clean %.2f Gb/s (%d retx), loss %.2f Gb/s (%d retx, %d FCS), protected %.2f Gb/s (%d retx, %d from 0.8 s), rx buffer %d B, %d pauses",
			bp, c.DeliveredRateGbps, c.Retransmits, l.DeliveredRateGbps, l.Retransmits, l.FCSErrors, p.DeliveredRateGbps, p.Retransmits, late[bp], p.MaxRxBufferBytes, p.PauseFrames)
		if r.Flow != "tcp" || r.CC != "dctcp" || c.Retransmits != 0 || c.FCSErrors != 0 || c.DeliveredRateGbps < 80 {
			t.Errorf("%s: clean phase %+v", bp, c)
		}
		if l.FCSErrors == 0 || l.Retransmits == 0 || l.DeliveredRateGbps > 0.8*c.DeliveredRateGbps {
			t.Errorf("%s: the unprotected loss did not reach TCP: %+v", bp, l)
		}
		if p.FCSErrors == 0 {
			t.Errorf("%s: protected phase has no corruption to recover from", bp)
		}
	}
	on, off := runs["on"].Phases[backpressure.PhaseProtected], runs["off"].Phases[backpressure.PhaseProtected]
	// Ordered LinkGuardian at 100G and 1e-3 costs the link about a tenth
	// of its rate (copies, pauses; README, Fig. 8): bound it at a quarter.
	if late["on"] != 0 || on.PauseFrames == 0 || on.DeliveredRateGbps < 0.75*runs["on"].Phases[backpressure.PhaseClean].DeliveredRateGbps {
		t.Errorf("with backpressure: %d retransmits from 0.8 s, %d pause frames, %.2f Gb/s", late["on"], on.PauseFrames, on.DeliveredRateGbps)
	}
	if off.PauseFrames != 0 || late["off"] == 0 || off.DeliveredRateGbps > on.DeliveredRateGbps/2 {
		t.Errorf("without backpressure: %d pause frames, %d retransmits from 0.8 s, %.2f Gb/s", off.PauseFrames, late["off"], off.DeliveredRateGbps)
	}
}
