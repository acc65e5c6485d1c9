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
