package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/instruments/voa"
)

// `testbed voa home` against a running simulated lab: the DD-100 (voa2),
// set to 7.5 dB by a motor that lost 200 steps on the way (it reports
// 7.50 dB, the stepper stands at 5.70), is homed over its serial line,
// its count found 200 steps off, and set back to where it now truly
// stands at 7.5 dB (or, with --stay, left at home, 0 dB); the N77xx (no home sensor), a limit above
// 0 dB and a device error on H (Error-5, the home sensor) are refused
// with the right exit codes and messages.
func TestVOAHome(t *testing.T) {
	lab, inv := startLab(t, 3)
	_, state := dirs(t)
	d, _ := lab.Inventory().Device("voa2")
	dev, err := voa.Open(context.Background(), "ozoptics-dd100", d.Address, voa.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The motor loses 200 steps on its way to 7.5 dB: the device counts,
	// and reports, 7.50 dB where the stepper stands 200 steps short.
	lab.Faults("voa2").SlipNext(200)
	if err := dev.SetAttenuation(context.Background(), 1, 7.5); err != nil {
		t.Fatal(err)
	}
	dev.Close()
	physical := func() float64 {
		v, _ := lab.World().VOA("voa2")
		return v.Channels[0].Attenuation()
	}
	if p := physical(); math.Abs(p-(7.5-200/(4060/36.5))) > 0.01 {
		t.Fatalf("after the slip the stepper stands at %g dB", p)
	}
	home := func(args ...string) (int, []homeResult, string) {
		code, out, errOut := testbedRun(t, append([]string{"voa", "home", "--inventory", inv, "--state-dir", state, "-o", "json"}, args...)...)
		var rows []homeResult
		if code == exitOK || code == exitFailed {
			if err := json.Unmarshal([]byte(out), &rows); err != nil {
				t.Fatalf("%v: %s %s", err, out, errOut)
			}
		}
		return code, rows, errOut
	}
	code, rows, errOut := home("voa2")
	if code != exitOK || len(rows) != 1 || rows[0] != (homeResult{VOA: "voa2", DiffSteps: 200, BeforeDB: 7.5, AfterDB: 7.5}) || physical() != 7.5 {
		t.Fatalf("home voa2: exit %d %+v %s; stands at %g dB", code, rows, errOut, physical())
	}
	code, rows, errOut = home("voa2", "--stay")
	if code != exitOK || len(rows) != 1 || rows[0] != (homeResult{VOA: "voa2", BeforeDB: 7.5, AfterDB: 0}) || physical() != 0 {
		t.Fatalf("home voa2 --stay: exit %d %+v %s; stands at %g dB", code, rows, errOut, physical())
	}
	if code, _, errOut := home("voa1"); code != exitBadInput || !strings.Contains(errOut, "voa1: its driver keysight-n77xx has no home sensor") {
		t.Errorf("home an N77xx: exit %d, %s", code, errOut)
	}
	if code, _, errOut := home("sw1"); code != exitBadInput || !strings.Contains(errOut, "device sw1 is a switch, not an attenuator") {
		t.Errorf("home a switch: exit %d, %s", code, errOut)
	}
	lab.Faults("voa2").FailNext(5, "home sensor")
	code, rows, _ = home("voa2")
	if code != exitFailed || len(rows) != 1 || !strings.Contains(rows[0].Error, "H: device error 5 (home sensor)") {
		t.Errorf("Error-5 on H: exit %d, %+v", code, rows)
	}
	data, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	limited := filepath.Join(t.TempDir(), "limited.yaml")
	text := strings.Replace(string(data), "min_db: 0\n            max_db: 55\n        safe_state:\n            attenuation_db: 0", "min_db: 3\n            max_db: 55\n        safe_state:\n            attenuation_db: 5", 1)
	if text == string(data) {
		t.Fatalf("voa2's limits not found in the lab's inventory:\n%s", data)
	}
	if err := os.WriteFile(limited, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := testbedRun(t, "voa", "home", "voa2", "--inventory", limited, "--state-dir", state); code != exitBadInput ||
		!strings.Contains(errOut, "limited.yaml:") || !strings.Contains(errOut, "devices.voa2.limits: voa2: homing runs the attenuator to 0 dB, below its limits.min_db 3.00 dB") {
		t.Errorf("home below the limits: exit %d, %s", code, errOut)
	}
}
