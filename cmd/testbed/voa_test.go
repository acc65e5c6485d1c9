package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/instruments/voa"
	"testbed/inventory"
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

// A step-loss fault given as lab up's --fault (voa2=slip:200, the DD-100
// of the default bench) makes the next motion lose 200 steps: set to
// 7.5 dB over its serial line, the attenuator reports 7.5 dB where its
// stepper stands 200 steps short; voa home finds the count 200 steps off
// and sets it truly to 7.5 dB, and a second home finds nothing off. The
// fault control endpoint takes the same spec (lab fault), and a bad spec
// or a slip on a device without a stepper is refused at exit 2, from
// either.
func TestVOAHomeFindsASlipFault(t *testing.T) {
	_, state := dirs(t)
	for spec, want := range map[string]string{
		"voa2=slip:x":    `fault "slip:x": slip needs the steps a motion loses`,
		"voa2=slip:0":    `fault "slip:0": slip needs the steps a motion loses`,
		"voa1=slip:200":  "--fault voa1: fault slip:200:1: the device has no stepper motor",
		"voa2=slip:20:0": `fault "slip:20:0": count 0`,
	} {
		code, _, errOut := testbedRun(t, "lab", "up", "--fault", spec, "--inventory-out", filepath.Join(t.TempDir(), "lab.yaml"))
		if code != exitBadInput || !strings.Contains(errOut, want) {
			t.Errorf("--fault %s: exit %d, %s; want exit %d and %q", spec, code, errOut, exitBadInput, want)
		}
	}
	inv := filepath.Join(t.TempDir(), "lab.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	ended := make(chan int, 1)
	go func() {
		var errOut bytes.Buffer
		code := run(ctx, []string{"lab", "up", "--seed", "3", "--fault", "voa2=slip:200", "--inventory-out", inv}, pw, &errOut)
		pw.CloseWithError(fmt.Errorf("lab up ended (exit %d): %s", code, errOut.String()))
		ended <- code
	}()
	t.Cleanup(func() { cancel(); <-ended })
	sc := bufio.NewScanner(pr)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "inventory written to") {
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	lab, err := inventory.Load(inv)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := lab.Device("voa2")
	set := func(dB float64) {
		t.Helper()
		dev, err := voa.Open(context.Background(), "ozoptics-dd100", d.Address, voa.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		if err := dev.SetAttenuation(context.Background(), 1, dB); err != nil {
			t.Fatal(err)
		}
	}
	home := func() homeResult {
		t.Helper()
		code, out, errOut := testbedRun(t, "voa", "home", "voa2", "--inventory", inv, "--state-dir", state, "-o", "json")
		var rows []homeResult
		if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 {
			t.Fatalf("voa home: exit %d, %s %s", code, out, errOut)
		}
		return rows[0]
	}
	set(7.5)
	if r := home(); r != (homeResult{VOA: "voa2", DiffSteps: 200, BeforeDB: 7.5, AfterDB: 7.5}) {
		t.Errorf("home after the slip: %+v; want 200 steps off, 7.5 dB before and after", r)
	}
	if r := home(); r != (homeResult{VOA: "voa2", BeforeDB: 7.5, AfterDB: 7.5}) {
		t.Errorf("home again: %+v; want nothing off", r)
	}
	ctl, err := controlFromInventory(inv)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := testbedRun(t, "lab", "fault", "voa1=slip:100", "--lab-control", ctl); code != exitBadInput || !strings.Contains(errOut, "voa1: fault slip:100:1: the device has no stepper motor") {
		t.Errorf("lab fault voa1=slip:100 (an N77xx): exit %d, %s; want exit %d naming voa1", code, errOut, exitBadInput)
	}
	if code, _, errOut := testbedRun(t, "lab", "fault", "voa2=slip:100", "--lab-control", ctl); code != exitOK {
		t.Fatalf("lab fault voa2=slip:100: exit %d, %s", code, errOut)
	}
	set(3)
	if r := home(); r != (homeResult{VOA: "voa2", DiffSteps: -100, BeforeDB: 3, AfterDB: 3}) {
		t.Errorf("home after lab fault's slip on a move down: %+v; want 100 steps off the other way", r)
	}
}
