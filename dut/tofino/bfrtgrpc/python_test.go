package bfrtgrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lg "testbed/p4/linkguardian"
)

// sdePython finds a Python 3 with Debian's grpcio, protobuf and
// grpc-tools (installed by .ci/run), or skips saying what is missing.
// It looks once per test binary (a Python start importing grpc each).
func sdePython(t *testing.T) string {
	t.Helper()
	sdeOnce.py.Do(func() { sdePy, sdePySkip = findSDEPython() })
	if sdePySkip != "" {
		t.Skip(sdePySkip)
	}
	return sdePy
}

var (
	sdeOnce struct{ py, client sync.Once }
	// sdePy is the Python sdePython found, or sdePySkip why none.
	sdePy, sdePySkip string
	// sdeDir is the directory sdeClient made (TestMain removes it), or
	// sdeErr why it could not.
	sdeDir string
	sdeErr error
)

func findSDEPython() (path, skip string) {
	var tried []string
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-c", "import grpc, google.protobuf, grpc_tools.protoc, six").CombinedOutput()
		if err == nil {
			return path, ""
		}
		tried = append(tried, path+": "+strings.TrimSpace(lastLine(string(out))))
	}
	return "", fmt.Sprintf("the SDE's Python BF Runtime client needs python3 with grpc, protobuf, grpc_tools and six (Debian: python3-grpcio python3-protobuf python3-grpc-tools python3-six; .ci/run installs them): %s", strings.Join(tried, "; "))
}

// TestMain removes the directory of the SDE's client that the tests
// share (sdeClient).
func TestMain(m *testing.M) {
	code := m.Run()
	if sdeDir != "" {
		os.RemoveAll(sdeDir)
	}
	os.Exit(code)
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// The SDE's own Python client (testdata/bfrt_grpc: client.py and
// info_parse.py from open-p4studio, stubs generated here from the same
// bfruntime.proto) against the simulated switch: it subscribes, reads the
// bf-rt.json, binds, writes and reads a table entry and a register; the
// SSH path of the same switch then reads what it wrote.
func TestSDEPythonClient(t *testing.T) {
	py := sdePython(t)
	dir, pkg := sdeClient(t, py, "sde_client.py")

	lab := startLab(t)
	ctx := context.Background()
	sw := open(t, lab, "sw1", nil)
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	sw.Close() // the Python client binds the program
	d, _ := lab.Inventory().Device("sw1")
	addr := strings.TrimPrefix(d.Address, "tcp://")
	reg := "SwitchEgress." + lg.RegSeqNo
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, py, filepath.Join(dir, "sde_client.py"), addr, lg.ProgramSender, lg.TableLinkProtect, lg.KeyEgressPort, "140", "SwitchEgress."+lg.ActionProtect,
		lg.ParamDummyPktMaxCount+"=3", lg.ParamBlockingMode+"=1", "--", reg, "7", "4242")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir+string(os.PathListSeparator)+pkg, "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sde_client.py: %v\n%s", err, stderr.String())
	}
	var got struct {
		Program string   `json:"program"`
		Tables  []string `json:"tables"`
		Entries []struct {
			Key    map[string]int64 `json:"key"`
			Action string           `json:"action"`
			Data   map[string]int64 `json:"data"`
		} `json:"entries"`
		Register []int64 `json:"register"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sde_client.py printed %q: %v\n%s", out, err, stderr.String())
	}
	if got.Program != lg.ProgramSender {
		t.Errorf("program %q", got.Program)
	}
	for _, want := range []string{"pipe." + lg.TableLinkProtect, "pipe." + reg, "$PORT", "$PORT_STAT", "tf1.pktgen.app_cfg", "tf1.tm.counter.queue"} {
		if !contains(got.Tables, want) {
			t.Errorf("the client's bf-rt info has no table %s", want)
		}
	}
	if len(got.Entries) != 1 || got.Entries[0].Key[lg.KeyEgressPort] != 140 || got.Entries[0].Action != "SwitchEgress."+lg.ActionProtect ||
		got.Entries[0].Data[lg.ParamDummyPktMaxCount] != 3 || got.Entries[0].Data[lg.ParamBlockingMode] != 1 {
		t.Errorf("the client read back %+v", got.Entries)
	}
	if len(got.Register) != 4 || got.Register[0] != 4242 {
		t.Errorf("the client read the register back as %v (one value per pipe, pipe 0's written)", got.Register)
	}
	// What the SDE's client wrote is the switch's state: the SSH path reads it.
	other := openSSH(t, lab, "sw1")
	if err := other.EnsureAgent(ctx); err != nil {
		t.Fatal(err)
	}
	es, err := other.Entries(ctx, lg.TableLinkProtect)
	if err != nil || len(es) != 1 || es[0].Key[lg.KeyEgressPort] != 140 || es[0].Data[lg.ParamDummyPktMaxCount] != 3 {
		t.Errorf("over SSH the table holds %+v %v", es, err)
	}
	v, err := other.ReadRegister(ctx, reg, 7)
	if err != nil || v[0] != 4242 {
		t.Errorf("over SSH the register reads %v %v", v, err)
	}
}

// sdeClient puts the SDE's Python client package (testdata/bfrt_grpc,
// with stubs generated from bfruntime.proto) and testdata's script in a
// directory: the script runs from there with PYTHONPATH dir and pkg. The
// directory is made once per test binary and shared by the tests, which
// only read it (the stubs are generated by two runs of grpc_tools.protoc,
// some 0.5 s of CPU each); TestMain removes it.
func sdeClient(t *testing.T, py, script string) (dir, pkg string) {
	t.Helper()
	sdeOnce.client.Do(func() { sdeDir, sdeErr = makeSDEClient(py) })
	if sdeErr != nil {
		t.Fatal(sdeErr)
	}
	dir = sdeDir
	pkg = filepath.Join(dir, "bfrt_grpc")
	if _, err := os.Stat(filepath.Join(dir, script)); err != nil {
		t.Fatalf("the SDE client's script: %v", err)
	}
	return dir, pkg
}

func makeSDEClient(py string) (dir string, err error) {
	dir, err = os.MkdirTemp("", "bfrtgrpc-sde-client-")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
			dir = ""
		}
	}()
	pkg := filepath.Join(dir, "bfrt_grpc")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return dir, err
	}
	copyTo := func(to, from string) error {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	}
	for _, f := range []string{"__init__.py", "client.py", "info_parse.py"} {
		if err := copyTo(filepath.Join(pkg, f), filepath.Join("testdata", "bfrt_grpc", f)); err != nil {
			return dir, err
		}
	}
	// The scripts run from dir: Python puts a script's folder first on its
	// path, and the package there is the one with the generated stubs.
	for _, f := range []string{"sde_client.py", "sde_warm_init.py"} {
		if err := copyTo(filepath.Join(dir, f), filepath.Join("testdata", f)); err != nil {
			return dir, err
		}
	}
	protoDir, err := filepath.Abs("../../../internal/bfrtpb/proto")
	if err != nil {
		return dir, err
	}
	gen := func(out string, args ...string) error {
		cmd := exec.Command(py, append([]string{"-m", "grpc_tools.protoc", "-I", protoDir, "-I", "testdata/proto", "--python_out=" + out}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v\n%s", cmd.Args, err, b)
		}
		return nil
	}
	if err := gen(pkg, "--grpc_python_out="+pkg, "bfruntime.proto"); err != nil {
		return dir, err
	}
	return dir, gen(dir, "google/rpc/status.proto", "google/rpc/code.proto")
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// The SDE's own Python client runs a warm init in two calls against the
// simulated switch (testdata/sde_warm_init.py): VERIFY_AND_WARM_INIT_BEGIN
// with the receiver's build while the sender runs, a register written
// between, WARM_INIT_END; its client waits for WARM_INIT_STARTED and
// WARM_INIT_FINISHED on its stream as it does against bf_switchd, the
// register reads back after the END, and a second END is refused
// UNAVAILABLE, as ConfigManager::warmInitEnd refuses it
// (bf_rt_server_mgr.cpp:624-627).
func TestSDEPythonClientWarmInit(t *testing.T) {
	py := sdePython(t)
	dir, pkg := sdeClient(t, py, "sde_warm_init.py")
	lab := startLab(t)
	ctx := context.Background()
	sw := open(t, lab, "sw1", nil)
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	sw.Close()
	d, _ := lab.Inventory().Device("sw1")
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, py, filepath.Join(dir, "sde_warm_init.py"), strings.TrimPrefix(d.Address, "tcp://"), d.Options["artifacts"],
		lg.ProgramReceiver, lg.RegExpectedSeqNo, "5", "31337")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir+string(os.PathListSeparator)+pkg, "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sde_warm_init.py: %v\n%s", err, stderr.String())
	}
	var got struct {
		Begin, End bool
		Program    string
		Register   []int64
		Again      string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sde_warm_init.py printed %q: %v\n%s", out, err, stderr.String())
	}
	if !got.Begin || !got.End || got.Program != lg.ProgramReceiver {
		t.Errorf("WARM_INIT_STARTED seen %v, WARM_INIT_FINISHED seen %v, program between %q", got.Begin, got.End, got.Program)
	}
	if len(got.Register) != 4 || got.Register[0] != 31337 {
		t.Errorf("after the END the register reads %v", got.Register)
	}
	if !strings.HasPrefix(got.Again, "UNAVAILABLE: Already warm_init_finished") {
		t.Errorf("a second WARM_INIT_END: %q", got.Again)
	}
}
