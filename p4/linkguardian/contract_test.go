package linkguardian

import (
	"math"
	"testing"
	"time"
)

func TestCopiesEq2(t *testing.T) {
	// §4.1: target 1e-8 gives 1, 1, 2 copies at 1e-5, 1e-4, 1e-3.
	for actual, want := range map[float64]int{1e-5: 1, 1e-4: 1, 1e-3: 2, 1e-2: 3, 5e-2: 6} {
		got, err := Copies(1e-8, actual)
		if err != nil || got != want {
			t.Errorf("Copies(1e-8, %g) = %d, %v; want %d", actual, got, err, want)
		}
		// The effective loss actual^(N+1) meets the target; one copy fewer would not.
		if eff := math.Pow(actual, float64(got+1)); eff > 1e-8*(1+1e-9) {
			t.Errorf("%g: %d copies give %g > target", actual, got, eff)
		}
		if got > 1 && math.Pow(actual, float64(got)) <= 1e-8 {
			t.Errorf("%g: %d copies are more than needed", actual, got)
		}
	}
	if _, err := Copies(0, 1e-3); err == nil {
		t.Error("target 0 accepted")
	}
}

func TestThresholdsMatchThePaper(t *testing.T) {
	for _, c := range []struct {
		bps      float64
		resumeKB float64
	}{{25e9, 40}, {100e9, 37}} {
		tf, err := FlightResume(c.bps)
		if err != nil {
			t.Fatal(err)
		}
		pause, resume := Thresholds(tf)
		if kb := float64(resume*CellBytes) / 1000; math.Abs(kb-c.resumeKB) > 1.0 {
			t.Errorf("%gG: resume %d cells = %.1f KB, paper %g KB", c.bps/1e9, resume, kb, c.resumeKB)
		}
		if pause-resume != 2*MTUCells() || MTUCells() != 20 {
			t.Errorf("%gG: hysteresis %d cells, want 2 MTU = 40 cells", c.bps/1e9, pause-resume)
		}
	}
	// A longer flight needs a higher resume threshold.
	_, a := Thresholds(time.Microsecond)
	_, b := Thresholds(2 * time.Microsecond)
	if b <= a {
		t.Error("resume threshold does not grow with t_flight_resume")
	}
}

func TestAckNoTimeoutAndDropTable(t *testing.T) {
	if d, _ := AckNoTimeout(25e9); d != 7500*time.Nanosecond {
		t.Errorf("25G: %v", d)
	}
	if d, _ := AckNoTimeout(100e9); d != 7*time.Microsecond {
		t.Errorf("100G: %v", d)
	}
	if _, err := AckNoTimeout(10e9); err == nil {
		t.Error("unmeasured speed accepted silently")
	}
	if n := DropTableEntries(1e-3); n != 1048 {
		t.Errorf("DropTableEntries(1e-3) = %d", n)
	}
}

// The loopback port's figures of docs/linkguardian.md (the Tx buffer, part
// 4): a 1518 B frame's copy takes 1543 B of the 100G port, 123.44 ns, and
// its original 1541 B of a 100G link, 123.28 ns, so copies back to back
// outrun the port at 100G; at 25G an original takes four times as long
// and the port keeps up; the artifact's 124 ns a frame keeps it up at 100G.
func TestTxLoopbackCopyAgainstItsOriginal(t *testing.T) {
	copyNs, orig100, orig25 := TxLoopbackCopyNs(1518), ProtectedFrameNs(1518, 100e9), ProtectedFrameNs(1518, 25e9)
	if math.Abs(copyNs-123.44) > 1e-9 || math.Abs(orig100-123.28) > 1e-9 {
		t.Errorf("copy %.4f ns on the loopback port, original %.4f ns at 100G: want 123.44 and 123.28", copyNs, orig100)
	}
	if !(copyNs > orig100) || !(copyNs < orig25) || !(copyNs < 124) {
		t.Errorf("copy %.2f ns against originals of %.2f ns (100G), %.2f ns (25G) and the artifact's 124 ns", copyNs, orig100, orig25)
	}
}
