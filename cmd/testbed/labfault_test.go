package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"testbed/internal/proctest"
	"testbed/simlab/wire"
)

// A lab up started with a fault: a run rides over one garbled reply (the
// driver retries its read), the fault control endpoint then makes the
// attenuator drop every connection and a run fails as an infrastructure
// error naming it; clearing the faults makes the lab whole again.
func TestLabUpFaultsFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "lab.yaml")
	up := exec.Command(testbedBin, "lab", "up", "--inventory-out", inv, "--seed", "9", "--fault", "voa1=garbage:1")
	stdout, _ := up.StdoutPipe()
	if err := proctest.Start(t, up); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Process.Kill(); up.Wait() })
	sc := bufio.NewScanner(stdout)
	var control string
	ready := false
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "fault control: "); ok {
			control = strings.Fields(rest)[0]
		}
		if strings.HasPrefix(sc.Text(), "inventory written to") {
			ready = true
			break
		}
	}
	if !ready || !strings.HasPrefix(control, "http://127.0.0.1:") {
		t.Fatalf("lab up never said it was ready (control %q)", control)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if got, err := controlFromInventory(inv); err != nil || got != control {
		t.Errorf("inventory header names control %q (%v), lab up printed %q", got, err, control)
	}
	pending := func() map[string][]string {
		t.Helper()
		resp, err := http.Get(control + "/faults")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p map[string][]string
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := pending(); strings.Join(p["voa1"], " ") != "garbage:1" {
		t.Fatalf("pending after --fault voa1=garbage:1: %v", p)
	}
	runs, state := dirs(t)
	sweep := func() (int, string) {
		run := exec.Command(testbedBin, append([]string{"exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
			"--set", "links=l10g"}, quick[2:]...)...) // l10g runs through voa1
		out, err := run.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return run.ProcessState.ExitCode(), string(out)
	}
	if code, out := sweep(); code != 0 {
		t.Fatalf("run over one garbled reply: exit %d\n%s", code, out)
	}
	if p := pending(); len(p["voa1"]) != 0 {
		t.Errorf("the garbled reply was never sent: still pending %v", p["voa1"])
	}

	lab := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(testbedBin, append([]string{"lab", "fault", "--inventory", inv}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("lab fault %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := lab("voa1=drop:always"); !strings.Contains(out, "voa1\tdrop:always") {
		t.Errorf("lab fault voa1=drop:always printed %q", out)
	}
	code, out := sweep()
	if code != exitInfra || !strings.Contains(out, "voa1") {
		t.Errorf("run against a voa1 that drops every connection: exit %d (want %d), naming voa1?\n%s", code, exitInfra, out)
	}
	lab("--clear")
	if p := pending(); len(p["voa1"]) != 0 {
		t.Errorf("after lab fault --clear: %v", p)
	}
	if code, out := sweep(); code != 0 {
		t.Errorf("run after the faults were cleared: exit %d\n%s", code, out)
	}
	up.Process.Signal(syscall.SIGINT)
	if err := up.Wait(); err != nil {
		t.Errorf("lab up did not stop cleanly on SIGINT: %v", err)
	}
}

// fakeTarget is a lab's fault injectors without a lab.
type fakeTarget map[string]*wire.Faults

func (f fakeTarget) FaultDevices() []string {
	return sortedKeys(map[string][]string{"a": nil, "b": nil})
}
func (f fakeTarget) Faults(device string) *wire.Faults { return f[device] }

func TestFaultControlRefusesWhatItCannotDo(t *testing.T) {
	tg := fakeTarget{"a": {}, "b": {}}
	url, stop, err := serveFaultControl("127.0.0.1:0", tg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	post := func(ct, body string) int {
		resp, err := http.Post(url+"/faults", ct, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		ct, body string
		want     int
	}{
		{"application/json", `{"device":"a","fault":"delay:5ms:2"}`, 200},
		{"text/plain", `{"device":"a","fault":"drop"}`, 415},
		{"application/json", `{"device":"zz","fault":"drop"}`, 404},
		{"application/json", `{"device":"a","fault":"melt"}`, 400},
		{"application/json", `{"device":"a","fault":"drop","x":1}`, 400},
	} {
		if got := post(c.ct, c.body); got != c.want {
			t.Errorf("POST %s %s: %d, want %d", c.ct, c.body, got, c.want)
		}
	}
	if p := tg["a"].Pending(); len(p) != 1 || p[0].String() != "delay:5ms:2" {
		t.Errorf("pending %v", p)
	}
	req, _ := http.NewRequest(http.MethodDelete, url+"/faults?device=a", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(tg["a"].Pending()) != 0 {
		t.Error("DELETE left faults")
	}
	for _, bad := range []string{"0.0.0.0:0", "192.0.2.1:80", "localhost"} {
		if _, _, err := serveFaultControl(bad, tg, slog.Default()); err == nil {
			t.Errorf("control bound to %s", bad)
		}
	}
	if _, err := parseFaultFlag("drop:3"); err == nil {
		t.Error("a fault without a device accepted")
	}
}
