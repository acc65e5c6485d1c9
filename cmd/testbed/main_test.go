package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"testbed/internal/browsertest"
	"testbed/internal/proctest"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
)

// testbedBin is the testbed command for the tests that need a real process
// (signals, lab up).
var testbedBin string

// asCommandEnv, set to 1, makes the test binary run the testbed command's
// main instead of the tests: without the race detector the test binary
// holds the same command, so it serves as testbedBin and no second binary
// is linked (a go build of the command, some 3 s of CPU, at every go test).
const asCommandEnv = "TESTBINARY_RUNS_TESTBED"

func TestMain(m *testing.M) {
	if os.Getenv(asCommandEnv) == "1" {
		main()
	}
	dir, err := os.MkdirTemp("", "testbed-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// No test writes leases to the host-wide directory: a test that gives
	// no --state-dir gets this one (subprocesses inherit it).
	os.Setenv("TESTBED_STATE_DIR", filepath.Join(dir, "state"))
	if testbedBin, err = commandBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The browser tests' tabs share one headless browser, closed here.
	code := browsertest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// commandBinary gives the testbed command the tests run as a process: this
// test binary itself (asCommandEnv, inherited by every process the tests
// start), or, under the race detector, the command built without it, as a
// user runs it (a recipe run under the detector takes many times the CPU;
// what is concurrent in the command is raced in-process).
func commandBinary(dir string) (string, error) {
	if !raceDetector {
		if err := os.Setenv(asCommandEnv, "1"); err != nil {
			return "", err
		}
		return os.Executable()
	}
	if bin, err := cachedCommand(); err == nil {
		return bin, nil
	}
	bin := filepath.Join(dir, "testbed")
	out, err := exec.Command("go", "build", "-ldflags=-w", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build: %v\n%s", err, out)
	}
	return bin, nil
}

// cachedCommand is the command as go run links it, from the build cache:
// go run keeps the executables it links there (go build -o links again
// every time, 3-4 s of CPU), so the command is linked once for its
// sources however often the tests run. go run -exec echo prints the
// executable's path instead of running it; a path gone once go run has
// ended was a fresh link, cached by it: the second go run finds it there.
func cachedCommand() (string, error) {
	for range 2 {
		out, err := exec.Command("go", "run", "-ldflags=-w", "-exec", "echo", ".").Output()
		if err != nil {
			return "", err
		}
		bin := strings.TrimSpace(string(out))
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
			return bin, nil
		}
	}
	return "", fmt.Errorf("go run left no executable in the build cache")
}

// testbedRun runs the CLI in-process.
func testbedRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func dirs(t *testing.T) (runs, state string) {
	d := t.TempDir()
	return filepath.Join(d, "runs"), filepath.Join(d, "state")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// A quick sweep: two links, coarse steps, small budgets.
var quick = []string{"--set", "links=l10g,l25g-rs", "--set", "step_db=1", "--set", "fine_step_db=0.25", "--set", "max_seconds=0.5"}

func TestSweepOnSimulatedLabWritesVerifiedBundle(t *testing.T) {
	runs, state := dirs(t)
	args := append([]string{"exp", "run", "attenuation-sweep", "--runs-dir", runs, "--state-dir", state, "--seed", "7"}, quick...)
	code, out, errOut := testbedRun(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	bundle := lastLine(out)
	if !strings.HasPrefix(bundle, runs) {
		t.Fatalf("last line %q is not the bundle path", bundle)
	}
	rep, err := results.Verify(bundle)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	var m results.Manifest
	readJSON(t, filepath.Join(bundle, "manifest.json"), &m)
	if m.Status != results.StatusOK || m.Seed != 7 || !m.Lab.Simulated || len(m.Devices) != 2 {
		t.Fatalf("manifest: status %s seed %d simulated %v devices %d", m.Status, m.Seed, m.Lab.Simulated, len(m.Devices))
	}
	csv, err := os.ReadFile(filepath.Join(bundle, "data", "loss_vs_attenuation.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(csv), "link,transceiver,fec,attenuation_db,rx_power_dbm,frames_tx,frames_rx_ok,frames_lost,loss_rate,loss_rate_low,loss_rate_high") {
		t.Fatalf("csv header: %s", strings.SplitN(string(csv), "\n", 2)[0])
	}
	for _, dev := range []string{"voa1", "tg1"} {
		if fi, err := os.Stat(filepath.Join(bundle, "transcripts", dev+".log")); err != nil || fi.Size() == 0 {
			t.Errorf("transcript of %s missing or empty: %v", dev, err)
		}
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "--quiet", "-c", "SHA256SUMS")
		cmd.Dir = bundle
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum -c: %v\n%s", err, out)
		}
	}
	// results show and verify through the CLI.
	if code, out, _ := testbedRun(t, "results", "verify", bundle); code != exitOK || !strings.Contains(out, "OK") {
		t.Errorf("results verify: exit %d: %s", code, out)
	}
	if code, out, _ := testbedRun(t, "results", "show", bundle); code != exitOK || !strings.Contains(out, "attenuation-sweep") || !strings.Contains(out, "loss_cliff_db") {
		t.Errorf("results show: exit %d: %s", code, out)
	}
}

func TestSameSeedSameSummary(t *testing.T) {
	summary := func(seed string) string {
		runs, state := dirs(t)
		args := append([]string{"exp", "run", "attenuation-sweep", "--runs-dir", runs, "--state-dir", state, "--seed", seed}, quick...)
		code, out, errOut := testbedRun(t, args...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		b, err := os.ReadFile(filepath.Join(lastLine(out), "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		csv, _ := os.ReadFile(filepath.Join(lastLine(out), "data", "loss_vs_attenuation.csv"))
		return string(b) + string(csv)
	}
	a, b, c := summary("11"), summary("11"), summary("12")
	if a != b {
		t.Errorf("same seed, different results:\n%s\n---\n%s", a, b)
	}
	if a == c {
		t.Errorf("different seeds gave identical frame counts; the seed does not reach the model")
	}
}

func TestDryRunPrintsPlanAndChecksLimits(t *testing.T) {
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "run", "attenuation-sweep", "--dry-run", "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"devices touched: tg1, voa1, voa2", "voa1 ch1.attenuation=0 dB", "voa2 ch1.attenuation=20 dB", "link l100g"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(runs); !os.IsNotExist(err) {
		t.Errorf("dry run wrote a bundle directory")
	}
	// The simulated N7764A's inventory limits stop at 40 dB.
	code, _, errOut = testbedRun(t, "exp", "run", "attenuation-sweep", "--dry-run", "--set", "stop_db=45")
	if code != exitBadInput || !strings.Contains(errOut, "outside the limits") || !strings.Contains(errOut, "voa1") {
		t.Errorf("limit violation: exit %d: %s", code, errOut)
	}
	code, _, errOut = testbedRun(t, "exp", "run", "attenuation-sweep", "--dry-run", "--set", "links=nope")
	if code != exitBadInput || !strings.Contains(errOut, `no link "nope"`) {
		t.Errorf("unknown link: exit %d: %s", code, errOut)
	}
}

func TestListAndShow(t *testing.T) {
	code, out, _ := testbedRun(t, "exp", "list")
	if code != 0 || !strings.Contains(out, "attenuation-sweep") {
		t.Fatalf("exp list: %d %s", code, out)
	}
	code, out, _ = testbedRun(t, "exp", "show", "attenuation-sweep")
	if code != 0 || !strings.Contains(out, "step_db") || !strings.Contains(out, "dB") {
		t.Fatalf("exp show: %d %s", code, out)
	}
	code, out, _ = testbedRun(t, "exp", "show", "attenuation-sweep", "--output", "json")
	var v struct {
		Params []orchestrator.ParamSpec `json:"params"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Params) == 0 {
		t.Fatalf("exp show json: %d %s", code, out)
	}
	if code, _, errOut := testbedRun(t, "exp", "show", "nope"); code != exitBadInput || !strings.Contains(errOut, "unknown recipe") {
		t.Errorf("unknown recipe: %d %s", code, errOut)
	}
}

func TestLabShowBench(t *testing.T) {
	code, out, _ := testbedRun(t, "lab", "show-bench")
	if code != 0 {
		t.Fatalf("lab show-bench: %d %s", code, out)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(p)
	if err != nil {
		t.Fatalf("the printed bench does not load: %v", err)
	}
	if d, ok := inv.Device("voa1"); !ok || d.Driver != "keysight-n77xx" {
		t.Errorf("printed bench: voa1 %+v", d)
	}
	// --output json prints the same document as JSON, not the YAML.
	code, out, errOut := testbedRun(t, "lab", "show-bench", "rail-stretch", "--output", "json")
	var doc struct {
		Name    string                    `json:"name"`
		Devices map[string]map[string]any `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Name != "rail-stretch" || len(doc.Devices) == 0 {
		t.Errorf("show-bench --output json: exit %d, %v: %.200s %s", code, err, out, errOut)
	}
	if code, _, errOut := testbedRun(t, "lab", "show-bench", "nope"); code != exitBadInput || !strings.Contains(errOut, `"nope"`) {
		t.Errorf("unknown bench: %d %s", code, errOut)
	}
}

// startLab starts a simulated lab in the test process and writes its inventory.
func startLab(t *testing.T, seed uint64) (*simlab.Lab, string) {
	t.Helper()
	lab, err := simlab.StartDefault(simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	data, err := lab.Inventory().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return lab, path
}

// liveRun is the testbed binary running a sweep, its progress readable line by line.
type liveRun struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  *bufio.Scanner
	log    strings.Builder
}

func startRun(t *testing.T, args ...string) *liveRun {
	t.Helper()
	r := &liveRun{cmd: exec.Command(testbedBin, args...)}
	r.cmd.Stdout = &r.stdout
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	r.lines = bufio.NewScanner(stderr)
	return r
}

// each calls fn on every progress line until fn returns false or the run ends.
func (r *liveRun) each(fn func(line string) bool) {
	for r.lines.Scan() {
		r.log.WriteString(r.lines.Text() + "\n")
		if !fn(r.lines.Text()) {
			return
		}
	}
}

// measured reports whether a progress line is a measured point.
func measured(line string) bool { return strings.Contains(line, " dB: loss ") }

func assertRested(t *testing.T, lab *simlab.Lab) {
	t.Helper()
	for _, name := range []string{"voa1", "voa2"} {
		v, _ := lab.World().VOA(name)
		for i, ch := range v.Channels {
			if got := ch.Target(); got != 0 {
				t.Errorf("%s channel %d left at %.2f dB, want its resting 0 dB", name, i+1, got)
			}
		}
	}
}

func TestInterruptedSweepRestoresLabAndLeavesAbortedBundle(t *testing.T) {
	lab, inv := startLab(t, 3)
	runs, state := dirs(t)
	r := startRun(t, "exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
		"--set", "max_seconds=2", "--set", "links=l10g,l25g,l100g")
	// Wait by asking: interrupt once the sweep has measured a few points.
	seen := 0
	r.each(func(line string) bool {
		if measured(line) {
			if seen++; seen == 5 {
				r.cmd.Process.Signal(syscall.SIGINT)
			}
		}
		return true
	})
	err := r.cmd.Wait()
	if code := r.cmd.ProcessState.ExitCode(); code != exitAborted {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitAborted, r.log.String())
	}
	bundle := lastLine(r.stdout.String())
	var m results.Manifest
	readJSON(t, filepath.Join(bundle, "manifest.json"), &m)
	if m.Status != results.StatusAborted || !strings.Contains(m.Reason, "interrupt") {
		t.Errorf("manifest status %s reason %q", m.Status, m.Reason)
	}
	if m.Progress == nil || m.Progress.StepsDone == 0 || m.Progress.StepsDone >= m.Progress.StepsTotal {
		t.Errorf("progress does not say how far it got: %+v", m.Progress)
	}
	if rep, err := results.Verify(bundle); err != nil || !rep.OK {
		t.Errorf("aborted bundle does not verify: %v %+v", err, rep)
	}
	assertRested(t, lab)
}

func TestDeviceErrorFailsRunAndRestores(t *testing.T) {
	lab, inv := startLab(t, 4)
	runs, state := dirs(t)
	// The third setting the attenuator receives raises a device error.
	lab.Faults("voa1").FailNext(-222, "Data out of range")
	code, out, errOut := testbedRun(t, append([]string{"exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state}, quick...)...)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailed, errOut)
	}
	if !strings.Contains(errOut, "-222") {
		t.Errorf("device error not surfaced: %s", errOut)
	}
	bundle := lastLine(out)
	var m results.Manifest
	readJSON(t, filepath.Join(bundle, "manifest.json"), &m)
	if m.Status != results.StatusFailed || !strings.Contains(m.Reason, "Data out of range") {
		t.Errorf("manifest status %s reason %q", m.Status, m.Reason)
	}
	if rep, _ := results.Verify(bundle); !rep.OK {
		t.Errorf("failed bundle does not verify: %+v", rep)
	}
	assertRested(t, lab)
}

// The lease is on the instrument, not on its inventory name: a run of
// another inventory (another lab name, another device name) that holds the
// same address keeps this run off it.
func TestLeasedDeviceRefusesSecondRun(t *testing.T) {
	lab, inv := startLab(t, 5)
	runs, state := dirs(t)
	d, _ := lab.Inventory().Device("voa1")
	held, err := orchestrator.NewLeaser(state, time.Hour, nil).Acquire("a-copy-named-otherwise", "someone-else", "run-x",
		[]orchestrator.LeaseTarget{{Device: "attenuator-a", Address: strings.Replace(d.Address, "127.0.0.1", "localhost", 1)}})
	if err != nil || len(held) != 1 {
		t.Fatal(err)
	}
	code, _, errOut := testbedRun(t, append([]string{"exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state}, quick...)...)
	if code != exitInfra || !strings.Contains(errOut, "someone-else") {
		t.Fatalf("exit %d, want %d naming the holder: %s", code, exitInfra, errOut)
	}
}

func TestNoSecretReachesTheBundle(t *testing.T) {
	lab, _ := startLab(t, 6)
	const envSecret, fileSecret = "hunter2-env-Zq81", "hunter2-file-Xy77"
	t.Setenv("TB_VOA_PASSWORD", envSecret)
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(fileSecret+"\n"), 0o600)
	inv := lab.Inventory()
	voa1, _ := inv.Device("voa1")
	tg1, _ := inv.Device("tg1")
	data, _ := inv.Marshal()
	// Reference both secrets from the inventory.
	text := strings.Replace(string(data), "address: "+voa1.Address, "address: "+voa1.Address+"\n        credentials:\n            password_env: TB_VOA_PASSWORD", 1)
	text = strings.Replace(text, "address: "+tg1.Address, "address: "+tg1.Address+"\n        credentials:\n            password_file: "+pwFile, 1)
	path := filepath.Join(t.TempDir(), "lab.yaml")
	os.WriteFile(path, []byte(text), 0o644)
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, append([]string{"exp", "run", "attenuation-sweep", "--inventory", path, "--runs-dir", runs, "--state-dir", state,
		"--set", "links=l25g-rs"}, quick[2:]...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s\ninventory:\n%s", code, errOut, text)
	}
	bundle := lastLine(out)
	manifest, _ := os.ReadFile(filepath.Join(bundle, "manifest.json"))
	if !strings.Contains(string(manifest), "TB_VOA_PASSWORD") {
		t.Errorf("manifest lost the credential reference")
	}
	filepath.Walk(bundle, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, s := range []string{envSecret, fileSecret} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s contains a secret", p)
			}
		}
		return nil
	})
}

func TestInventoryCheck(t *testing.T) {
	_, inv := startLab(t, 8)
	code, out, errOut := testbedRun(t, "inventory", "check", inv)
	if code != exitOK || !strings.Contains(out, "Keysight Technologies N7764A") || !strings.Contains(out, "DD-100-MC") {
		t.Fatalf("inventory check: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = testbedRun(t, "inventory", "check", "--offline", inv)
	if code != exitOK || !strings.Contains(out, "offline") {
		t.Fatalf("offline check: exit %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nname: x\ndevices:\n  v:\n    kind: voa\n    driver: nosuch\n    address: tcp://127.0.0.1:1\n"), 0o644)
	code, _, errOut = testbedRun(t, "inventory", "check", "--offline", bad)
	if code != exitBadInput || !strings.Contains(errOut, "bad.yaml:6") || !strings.Contains(errOut, "nosuch") {
		t.Fatalf("bad driver: exit %d: %s", code, errOut)
	}
	// Secrets outside credentials: refused with the line, the field and
	// the reference form, never repeated.
	os.WriteFile(bad, []byte("version: 1\nname: x\ndevices:\n  tg:\n    kind: trafficgen\n    driver: otg\n    address: http://admin:hunter2@127.0.0.1:1\n    options: {api_token: hunter2}\n"), 0o644)
	code, _, errOut = testbedRun(t, "inventory", "check", "--offline", bad)
	for _, want := range []string{"bad.yaml:7:14: devices.tg.address", "bad.yaml:8:15: devices.tg.options.api_token", "password_env: VAR"} {
		if code != exitBadInput || !strings.Contains(errOut, want) || strings.Contains(errOut, "hunter2") {
			t.Errorf("secrets in the inventory: exit %d, want %q, and no secret:\n%s", code, want, errOut)
		}
	}
}

func TestLabUpServesAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "lab.yaml")
	up := exec.Command(testbedBin, "lab", "up", "--inventory-out", inv, "--seed", "9")
	stdout, _ := up.StdoutPipe()
	if err := proctest.Start(t, up); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Process.Kill(); up.Wait() })
	sc := bufio.NewScanner(stdout)
	ready := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "inventory written to") {
			ready = true
			break
		}
	}
	if !ready {
		t.Fatal("lab up never said it was ready")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	runs, state := dirs(t)
	run := exec.Command(testbedBin, append([]string{"exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
		"--set", "links=l100g"}, quick[2:]...)...)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("run against lab up: %v\n%s", err, out)
	}
	up.Process.Signal(syscall.SIGINT)
	if err := up.Wait(); err != nil {
		t.Errorf("lab up did not stop cleanly on SIGINT: %v", err)
	}
}

// lab up --inventory starts a twin of a lab that is not the default bench;
// a recipe runs on it through the inventory lab up wrote.
func TestLabUpTwinOfAnInventory(t *testing.T) {
	dir := t.TempDir()
	src, twin := filepath.Join(dir, "mylab.yaml"), filepath.Join(dir, "twin.yaml")
	os.WriteFile(src, []byte(`version: 1
name: mylab
devices:
  va:
    kind: voa
    driver: keysight-n77xx
    address: tcp://192.0.2.1:5025
    channels: 1
  tg:
    kind: trafficgen
    driver: otg
    address: https://192.0.2.2
    ports: {t: eth1, r: eth2}
  leaf1:
    kind: switch
    driver: arista-eos
    address: ssh://admin@192.0.2.3
links:
  - name: f1
    a: {device: tg, port: t}
    b: {device: tg, port: r}
    transceiver: 25GBASE-SR
    fec: rs528
    voa: {device: va, channel: 1}
`), 0o644)
	up := exec.Command(testbedBin, "lab", "up", "--inventory", src, "--inventory-out", twin, "--seed", "3")
	stdout, _ := up.StdoutPipe()
	var stderr bytes.Buffer
	up.Stderr = &stderr
	if err := proctest.Start(t, up); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Process.Kill(); up.Wait() })
	sc := bufio.NewScanner(stdout)
	ready := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "inventory written to") {
			ready = true
			break
		}
	}
	if !ready {
		up.Process.Kill()
		up.Wait()
		t.Fatalf("lab up never said it was ready: %s", stderr.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	runs, state := dirs(t)
	out, err := exec.Command(testbedBin, "exp", "run", "attenuation-sweep", "--inventory", twin, "--runs-dir", runs, "--state-dir", state,
		"--set", "links=f1", "--set", "step_db=1", "--set", "fine_step_db=0", "--set", "max_seconds=0.5").CombinedOutput()
	if err != nil {
		t.Fatalf("run against the twin: %v\n%s", err, out)
	}
	up.Process.Signal(syscall.SIGINT)
	if err := up.Wait(); err != nil {
		t.Errorf("lab up did not stop cleanly on SIGINT: %v", err)
	}
	if !strings.Contains(stderr.String(), "leaf1 (driver arista-eos)") {
		t.Errorf("lab up did not name the device it left out: %s", stderr.String())
	}
}

func TestParamsFileAndEnvironmentConfiguration(t *testing.T) {
	dir := t.TempDir()
	params := filepath.Join(dir, "p.yaml")
	os.WriteFile(params, []byte("links: [l25g-rs]\nstep_db: 2\nmax_seconds: 0.2\nfine_step_db: 0\n"), 0o644)
	t.Setenv("TESTBED_RUNS_DIR", filepath.Join(dir, "from-env"))
	t.Setenv("TESTBED_STATE_DIR", filepath.Join(dir, "state"))
	code, out, errOut := testbedRun(t, "exp", "run", "attenuation-sweep", "--params", params, "--set", "stop_db=6", "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Bundle string `json:"bundle"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Status != "ok" || !strings.HasPrefix(res.Bundle, filepath.Join(dir, "from-env")) {
		t.Fatalf("json result %q: %v", out, err)
	}
	var m results.Manifest
	readJSON(t, filepath.Join(res.Bundle, "manifest.json"), &m)
	src := map[string]string{}
	for _, p := range m.Params {
		src[p.Name] = p.Source
	}
	if src["step_db"] != "file" || src["stop_db"] != "set" || src["start_db"] != "default" {
		t.Errorf("parameter sources not recorded: %v", src)
	}
	os.WriteFile(params, []byte("# a bad value, on line 3\nstop_db: 6\nstep_db: fast\n"), 0o644)
	code, _, errOut = testbedRun(t, "exp", "run", "attenuation-sweep", "--params", params, "--dry-run")
	if code != exitBadInput || !strings.Contains(errOut, "p.yaml:3: parameter step_db") {
		t.Errorf("bad params file: exit %d: %s", code, errOut)
	}
}

func TestSecondInterruptReportsWhatWasNotRestored(t *testing.T) {
	lab, inv := startLab(t, 13)
	runs, state := dirs(t)
	r := startRun(t, "exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
		"--set", "links=l10g", "--set", "max_seconds=2")
	seen := 0
	r.each(func(line string) bool {
		switch {
		case measured(line):
			if seen++; seen == 3 {
				// From now on the attenuator never answers: its restore will hang.
				lab.Faults("voa1").StallNext(1000)
				r.cmd.Process.Signal(syscall.SIGINT)
			}
		case strings.Contains(line, "stopping at the next safe point"):
			time.AfterFunc(300*time.Millisecond, func() { r.cmd.Process.Signal(syscall.SIGINT) })
		}
		return true
	})
	r.cmd.Wait()
	// Not 3, which says the lab was restored: 6, aborted and NOT restored.
	if code := r.cmd.ProcessState.ExitCode(); code != exitNotRestored {
		t.Fatalf("exit %d, want %d\n%s", code, exitNotRestored, r.log.String())
	}
	if !strings.Contains(r.log.String(), "NOT RESTORED: voa1: restore voa1 channel 1") {
		t.Fatalf("the unrestored channel was not reported:\n%s", r.log.String())
	}
	var m results.Manifest
	readJSON(t, filepath.Join(lastLine(r.stdout.String()), "manifest.json"), &m)
	failed := false
	for _, c := range m.Cleanup {
		failed = failed || (!c.OK && c.Device == "voa1")
	}
	if m.Status != results.StatusAborted || !failed || m.LabRestored == nil || *m.LabRestored || !strings.Contains(m.Reason, "lab NOT restored") {
		t.Errorf("manifest: status %s (%s), lab_restored %v, cleanup %+v", m.Status, m.Reason, m.LabRestored, m.Cleanup)
	}
	// The undo that failed stays in voa1's journal: once the attenuator
	// answers again, lab recover puts the channel back.
	lab.Faults("voa1").Reset()
	code, out, errOut := testbedRun(t, "lab", "recover", "--inventory", inv, "--state-dir", state)
	if code != exitOK || !strings.Contains(out, "restore voa1 channel 1") || !strings.Contains(out, "restored") {
		t.Fatalf("lab recover: exit %d\n%s%s", code, out, errOut)
	}
	assertRested(t, lab)
}

// A run killed with SIGKILL leaves its changes on the devices; its undo
// journal survives it, and lab recover (or the next run) replays it.
func TestKilledRunIsUndoneByLabRecover(t *testing.T) {
	lab, inv := startLab(t, 22)
	runs, state := dirs(t)
	r := startRun(t, "exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
		"--set", "links=l10g", "--set", "max_seconds=2")
	seen := 0
	r.each(func(line string) bool {
		if measured(line) {
			if seen++; seen == 3 {
				r.cmd.Process.Kill()
				return false
			}
		}
		return true
	})
	r.cmd.Wait()
	v, _ := lab.World().VOA("voa1")
	left := false
	for _, ch := range v.Channels {
		left = left || ch.Target() != 0
	}
	if !left {
		t.Fatal("the killed run left no channel changed: nothing to recover")
	}
	code, out, errOut := testbedRun(t, "lab", "recover", "--inventory", inv, "--state-dir", state)
	if code != exitOK || !strings.Contains(out, "voa1") || strings.Contains(out, "NOT RESTORED") {
		t.Fatalf("lab recover: exit %d\n%s%s", code, out, errOut)
	}
	assertRested(t, lab)
	code, out, _ = testbedRun(t, "lab", "recover", "--inventory", inv, "--state-dir", state)
	if code != exitOK || !strings.Contains(out, "nothing to recover") {
		t.Errorf("second recover: exit %d: %s", code, out)
	}
}

func TestKilledRunLeavesReadableIncompleteBundleAndStaleLeases(t *testing.T) {
	_, inv := startLab(t, 21)
	runs, state := dirs(t)
	r := startRun(t, "exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
		"--set", "links=l10g", "--set", "max_seconds=2")
	seen := 0
	r.each(func(line string) bool {
		if measured(line) {
			if seen++; seen == 4 {
				r.cmd.Process.Kill() // no chance to clean up or finalize
				return false
			}
		}
		return true
	})
	r.cmd.Wait()
	bundles, _ := filepath.Glob(filepath.Join(runs, "*"))
	if len(bundles) != 1 {
		t.Fatalf("bundles: %v", bundles)
	}
	rd, err := results.Open(bundles[0])
	if err != nil || !rd.Incomplete || len(rd.Tables) != 1 || rd.Tables[0].Rows < 4 || rd.Events == 0 {
		t.Fatalf("killed run's bundle: %v %+v", err, rd)
	}
	if rep, _ := results.Verify(bundles[0]); rep.OK || !strings.Contains(strings.Join(rep.Problems, " "), "never finalized") {
		t.Fatalf("verify: %+v", rep)
	}
	// The dead run's leases are stale: the next run takes them over, saying so.
	code, out, errOut := testbedRun(t, append([]string{"exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
		"--log-level", "warn"}, quick...)...)
	if code != exitOK || !strings.Contains(errOut, "taking over stale lease") {
		t.Fatalf("second run: exit %d\n%s", code, errOut)
	}
	// ... and first undoes what the dead run left, recording it.
	var m results.Manifest
	readJSON(t, filepath.Join(lastLine(out), "manifest.json"), &m)
	if len(m.Recovered) == 0 || m.Recovered[0].FromRun == "" || !m.Recovered[0].OK {
		t.Errorf("the next run's manifest does not record the recovery: %+v", m.Recovered)
	}
}

func TestConfigFileIsRead(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("testbed.yaml", []byte("runs_dir: from-config\nstate_dir: state\n"), 0o644)
	code, out, errOut := testbedRun(t, append([]string{"exp", "run", "attenuation-sweep", "--set", "links=l25g-rs"}, quick[2:]...)...)
	if code != exitOK || !strings.HasPrefix(lastLine(out), "from-config/") {
		t.Fatalf("./testbed.yaml not used: exit %d, bundle %q\n%s", code, lastLine(out), errOut)
	}
	// A flag still wins over the file.
	code, out, _ = testbedRun(t, append([]string{"exp", "run", "attenuation-sweep", "--runs-dir", "from-flag", "--set", "links=l25g-rs"}, quick[2:]...)...)
	if code != exitOK || !strings.HasPrefix(lastLine(out), "from-flag/") {
		t.Fatalf("flag did not win: %q", lastLine(out))
	}
	os.WriteFile("bad.yaml", []byte("runs_dir: [\n"), 0o644)
	if code, _, errOut := testbedRun(t, "--config", "bad.yaml", "exp", "list"); code != exitBadInput || !strings.Contains(errOut, "bad.yaml") {
		t.Fatalf("bad config: exit %d %s", code, errOut)
	}
}

// A recipe whose plan touches no device runs without starting the
// simulated lab.
func TestDevicelessRecipeStartsNoLab(t *testing.T) {
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "run", "rail-topology", "--runs-dir", runs, "--state-dir", state,
		"--set", "links_file=../../experiments/rail/examples/rail-clos-lab.csv")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "simulated lab up") {
		t.Errorf("the simulated lab was started:\n%s", errOut)
	}
	if rep, err := results.Verify(lastLine(out)); err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}
