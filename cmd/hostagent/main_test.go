package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"testbed/hostagent"
	"testbed/internal/proctest"
)

// built is the command built once for the tests that run it as a
// binary (a link is more than a second of CPU): in a directory TestMain
// makes and removes.
var built struct {
	dir  string
	once sync.Once
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostagent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	built.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildAgent builds the command as it is shipped (CGO_ENABLED=0), once
// for every test that asks; the tests only run it.
func buildAgent(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		bin := filepath.Join(built.dir, "hostagent")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestStaticBinaryVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildAgent(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "hostagent "+hostagent.Version+"\n"; got != want {
		t.Errorf("--version: %q, want %q", got, want)
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary has a program interpreter: not static")
			}
		}
	}
}

func TestServeBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("stops the agent with SIGTERM")
	}
	bin := buildAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token-file", writeToken(t, "tok\n"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := proctest.Start(t, cmd); err != nil { // it ends with this binary
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (stderr: %s)", err, stderr.String())
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok || !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("first line %q: want \"listening 127.0.0.1:PORT\"", line)
	}

	c := hostagent.NewClient(&http.Client{Transport: &hostagent.BearerTransport{Token: "tok"}}, "http://"+addr)
	v, err := c.Version(ctx)
	if err != nil || v.Version != hostagent.Version {
		t.Fatalf("version: %+v %v", v, err)
	}
	srv, err := c.StartFCTServer(ctx, hostagent.FCTServerRequest{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.RunFCT(ctx, hostagent.FCTRunRequest{Target: srv.Listen, Trials: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if st.Summary == nil || st.Summary.Count != 2000 {
		t.Fatalf("run: %+v", st)
	}
	samples, err := c.FCTSamples(ctx, st.ID)
	if err != nil || len(samples) != 2000 {
		t.Fatalf("samples: %d, %v", len(samples), err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the deferred wait
		if err != nil {
			t.Errorf("exit after SIGTERM: %v (stderr: %s)", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not stop on SIGTERM")
	}
}

func TestRunArguments(t *testing.T) {
	loose, empty := writeToken(t, "tok"), writeToken(t, " \n")
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args     []string
		code     int
		stdout   string
		stderrOn string
	}{
		{[]string{"--version"}, 0, "hostagent " + hostagent.Version + "\n", ""},
		{nil, 2, "", "usage"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--listen", "0.0.0.0:0"}, 1, "", "loopback address only"},
		{[]string{"serve", "--listen", "10.1.2.3:80"}, 1, "", "loopback address only"},
		{[]string{"serve", "--listen", "example.org:80"}, 1, "", "loopback address only"},
		{[]string{"serve", "--listen", "nonsense"}, 1, "", "--listen"},
		{[]string{"serve", "--log-level", "loud"}, 1, "", "--log-level"},
		{[]string{"serve", "extra"}, 1, "", "unexpected arguments"},
		{[]string{"serve"}, 1, "", "--token-file is required"},
		{[]string{"serve", "--token-file", filepath.Join(t.TempDir(), "none")}, 1, "", "token file"},
		{[]string{"serve", "--token-file", loose}, 1, "", "only its owner can read"},
		{[]string{"serve", "--token-file", empty}, 1, "", "empty"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		if code != tc.code || out.String() != tc.stdout || !strings.Contains(errb.String(), tc.stderrOn) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, mentioning %q", tc.args, code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderrOn)
		}
	}
	for _, ok := range []string{"127.0.0.1:0", "[::1]:0", "localhost:8080", "127.3.4.5:1"} {
		if err := checkLoopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// serve stops when its context ends, printing the address first.
func TestServeInProcess(t *testing.T) {
	tokFile := writeToken(t, "run-token-1\n")
	ctx, cancel := context.WithCancel(context.Background())
	var errb bytes.Buffer
	done := make(chan error, 1)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() {
		done <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--token-file", tokFile}, pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening 127.0.0.1:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	authed := &http.Client{Transport: &hostagent.BearerTransport{Token: "run-token-1"}}
	if _, err := hostagent.NewClient(authed, "http://"+addr).Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Without the token, or with another one, nothing is served.
	for _, hc := range []*http.Client{nil, {Transport: &hostagent.BearerTransport{Token: "run-token-2"}}} {
		var ae *hostagent.APIError
		if _, err := hostagent.NewClient(hc, "http://"+addr).Version(context.Background()); !errors.As(err, &ae) || ae.Status != 401 || ae.Kind != hostagent.KindUnauthorized {
			t.Errorf("without the run's token: %v, want a 401 unauthorized", err)
		}
	}
	// The file is read on every request: a new run's token replaces the old.
	if err := os.WriteFile(tokFile, []byte("run-token-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := hostagent.NewClient(&http.Client{Transport: &hostagent.BearerTransport{Token: "run-token-2"}}, "http://"+addr).Version(context.Background()); err != nil {
		t.Errorf("after the token file changed: %v", err)
	}
	if _, err := hostagent.NewClient(authed, "http://"+addr).Version(context.Background()); err == nil {
		t.Error("the replaced token is still accepted")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// writeToken writes a token file as the driver's agent-start does (0600).
func writeToken(t *testing.T, tok string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
