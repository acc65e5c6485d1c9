package host

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"testbed/internal/sshdtest"
	"testbed/transport"
)

func TestHostKeyMismatchRefused(t *testing.T) {
	d := sharedSSHD(t)
	dir := t.TempDir()
	// A known_hosts that names another key for this server.
	other := filepath.Join(dir, "other_key")
	pub := sshdtest.WriteKey(t, other)
	kh := filepath.Join(dir, "known_hosts_other")
	if err := os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(d.HostPort)}, pub)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := d.options(t, "h1")
	o.SSH.KnownHosts = kh
	_, err := Open(testCtx(t), d.Addr, o)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		t.Fatalf("open with a wrong host key: %v, want a knownhosts.KeyError naming the known key", err)
	}
	if !strings.HasPrefix(err.Error(), "h1: ") {
		t.Errorf("error %q does not name the host", err)
	}
	// A server known_hosts does not list at all is refused too.
	empty := filepath.Join(dir, "known_hosts_empty")
	os.WriteFile(empty, nil, 0o600)
	o.SSH.KnownHosts = empty
	if _, err := Open(testCtx(t), d.Addr, o); !errors.As(err, &ke) || len(ke.Want) != 0 {
		t.Fatalf("open of an unknown host: %v, want a knownhosts.KeyError", err)
	}
	// The right key gets in.
	h := d.open(t, "h1")
	if _, err := h.Run(testCtx(t), "true"); err != nil {
		t.Fatal(err)
	}
}

func TestRunOutputStatusAndStderr(t *testing.T) {
	d := sharedSSHD(t)
	h := d.open(t, "h1")
	ctx := testCtx(t)

	r, err := h.Run(ctx, `echo out; echo warn >&2`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "out\n" || r.Stderr != "warn\n" || r.Status != 0 {
		t.Fatalf("got %+v", r)
	}

	r, err = h.Run(ctx, `echo partial; echo "no such thing" >&2; exit 3`)
	var xe *ExitError
	if !errors.As(err, &xe) {
		t.Fatalf("exit 3: %v, want *ExitError", err)
	}
	if xe.Status != 3 || r.Status != 3 || strings.TrimSpace(xe.Stderr) != "no such thing" || r.Stdout != "partial\n" {
		t.Fatalf("exit error %+v, result %+v", xe, r)
	}
	msg := err.Error()
	for _, want := range []string{"h1:", "exit 3", "exit status 3", "no such thing"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if xe.Command != `echo partial; echo "no such thing" >&2; exit 3` {
		t.Errorf("command %q", xe.Command)
	}
}

func TestRunDeadline(t *testing.T) {
	d := sharedSSHD(t)
	h := d.open(t, "h1")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.Run(ctx, "sleep 29.25; echo not killed")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sleep past the deadline: %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the deadline took %v to act", el)
	}
	if !strings.Contains(err.Error(), "h1:") || !strings.Contains(err.Error(), "sleep 29.25") {
		t.Errorf("error %q does not name host and command", err)
	}
	// Options.Timeout applies when the context has none.
	h2 := d.open(t, "h2", func(o *Options) { o.Timeout = 300 * time.Millisecond })
	if _, err := h2.Run(context.Background(), "sleep 29.5"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sleep past Options.Timeout: %v", err)
	}
	// On the host, the commands are killed soon after (not 30 s later).
	for _, arg := range []string{"29.25", "29.5"} {
		deadline := time.Now().Add(10 * time.Second)
		for sleeping(arg) {
			if time.Now().After(deadline) {
				t.Fatalf("sleep %s still runs on the host after its deadline", arg)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The connection survives.
	if r, err := h.Run(testCtx(t), "echo ok"); err != nil || r.Stdout != "ok\n" {
		t.Fatalf("after a deadline: %+v %v", r, err)
	}
}

// sleeping reports whether a "sleep arg" process runs on this machine.
func sleeping(arg string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == "sleep\x00"+arg+"\x00" && processAlive(atoi(e.Name())) {
			return true
		}
	}
	return false
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func TestUploadChecksummed(t *testing.T) {
	d := sharedSSHD(t)
	h := d.open(t, "h1")
	ctx := testCtx(t)
	dir := t.TempDir()
	// A directory of this test's own in the server's home.
	mine := filepath.Base(filepath.Dir(dir))
	t.Cleanup(func() { os.RemoveAll(filepath.Join(d.Home, mine)) })
	// 1 MiB and a few bytes: 32 of the SSH server's packets, 16 pipe
	// buffers to the host's cat, an odd tail. (3 MiB, beyond the
	// server's 2 MiB window, cost its sshd a second of CPU reallocating
	// its channel buffer; the 7 MB agent TestRealHostagent uploads goes
	// beyond the window.)
	data := make([]byte, 1<<20+17)
	rand.Read(data)
	sum := sha256.Sum256(data)

	got, err := h.Upload(ctx, "~/"+mine+"/up/a b/data.bin", data, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if got != hex.EncodeToString(sum[:]) {
		t.Fatalf("sha256 %s, want %x", got, sum)
	}
	// The host is this machine: look at the file itself.
	p := filepath.Join(d.Home, mine, "up", "a b", "data.bin")
	onDisk, err := os.ReadFile(p)
	if err != nil || sha256.Sum256(onDisk) != sum {
		t.Fatalf("file on the host: %v (%d bytes)", err, len(onDisk))
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(ents))
	}

	// Overwrite an existing file at an absolute path, with another mode.
	abs := filepath.Join(dir, "abs", "f.txt")
	if _, err := h.Upload(ctx, abs, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Upload(ctx, abs, []byte("two\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(abs); string(b) != "two\n" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(abs); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}

	// The script keeps a file whose checksum does not match out of place.
	_, err = h.do(ctx, "upload", opUpload, []byte("three"), abs, abs+".tmp", "0644", strings.Repeat("0", 64))
	var xe *ExitError
	if !errors.As(err, &xe) || !strings.Contains(xe.Stderr, "checksum mismatch") {
		t.Fatalf("mismatching upload: %v", err)
	}
	if b, _ := os.ReadFile(abs); string(b) != "two\n" {
		t.Fatalf("a mismatching upload replaced the file: %q", b)
	}
	if _, err := os.Stat(abs + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}

	if _, err := h.Upload(ctx, "dir/", nil, 0o644); err == nil {
		t.Error("upload to a directory path accepted")
	}
	if _, err := h.Upload(ctx, "x", nil, fs.ModeSetuid|0o755); err == nil {
		t.Error("upload with a non-permission mode bit accepted")
	}
}

// standIn is a stand-in hostagent: a script that prints its version and,
// for "serve", runs a loopback HTTP server answering GET /v1/version and
// printing "listening 127.0.0.1:PORT" first, as the real one does.
func standIn(version string) []byte {
	return []byte(`#!/bin/sh
# Stand-in hostagent for the host driver tests.
case "$1" in
--version) echo "hostagent ` + version + `" ;;
serve) exec python3 -u -c '
import http.server, json, os, stat, sys, threading, time
tokfile = sys.argv[3]  # argv[2] is the binary, which alive() looks for
` + sshdtest.PyEndsWithSSHD(`int(open(os.environ["SSHDTEST_PID_FILE"]).read())`) + `if stat.S_IMODE(os.stat(tokfile).st_mode) & 0o077:
    sys.exit("token file readable by others")
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(tokfile) as f:
            tok = f.read().strip()
        if not tok or self.headers.get("Authorization") != "Bearer " + tok:
            self.send_error(401)
            return
        if self.path != "/v1/version":
            self.send_error(404)
            return
        b = json.dumps({"name": "hostagent", "version": sys.argv[1]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print("listening 127.0.0.1:%d" % s.server_address[1], flush=True)
s.serve_forever()
' ` + version + ` "$0" "$5" ;;
*) echo "usage: hostagent --version | serve --listen ADDR" >&2; exit 2 ;;
esac
`)
}

// killAgentAtCleanup stops an agent a failing test may leave behind.
func killAgentAtCleanup(t *testing.T, h *Host, home string) {
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(home, h.opts.StateDir, "pid"))
		if err != nil {
			return
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func TestInstallAgentOnlyWhenDifferent(t *testing.T) {
	d := startSSHD(t)
	h := d.open(t, "h1")
	ctx := testCtx(t)

	in, err := h.InstallAgent(ctx, AgentBinary{Data: standIn("0.0.1"), Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !in.Replaced || in.Version != "0.0.1" || in.Previous != "" || in.Machine == "" {
		t.Fatalf("first install: %+v", in)
	}
	path := filepath.Join(d.Home, ".testbed", "bin", "hostagent")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed file: %v %v", err, fi)
	}

	// The same binary again: nothing is uploaded.
	in, err = h.InstallAgent(ctx, AgentBinary{Data: standIn("0.0.1"), Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if in.Replaced || in.Version != "0.0.1" || in.Previous != "0.0.1" {
		t.Fatalf("second install: %+v", in)
	}
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatal("the second install rewrote the file")
	}

	// Another version replaces it, from a local file this time.
	local := filepath.Join(d.Dir, "hostagent-0.0.2")
	os.WriteFile(local, standIn("0.0.2"), 0o755)
	in, err = h.InstallAgent(ctx, AgentBinary{Path: local})
	if err != nil {
		t.Fatal(err)
	}
	if !in.Replaced || in.Version != "0.0.2" || in.Previous != "0.0.1" {
		t.Fatalf("upgrade: %+v", in)
	}

	// A binary that does not report the version it is said to have.
	if _, err := h.InstallAgent(ctx, AgentBinary{Data: standIn("0.0.3"), Version: "9.9.9"}); err == nil || !strings.Contains(err.Error(), `"9.9.9"`) {
		t.Fatalf("version mismatch: %v", err)
	}

	// An executable for another machine type is refused before upload.
	other := uint16(183) // EM_AARCH64
	if _, goarch, _ := h.Arch(ctx); goarch == "arm64" {
		other = 62 // EM_X86_64
	}
	before, _ := os.ReadFile(path)
	_, err = h.InstallAgent(ctx, AgentBinary{Data: elfHeader(other)})
	if err == nil || !strings.Contains(err.Error(), "built for linux/") {
		t.Fatalf("foreign ELF: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused binary was installed")
	}

	// An option moves the install directory.
	h2 := d.open(t, "h2", func(o *Options) { o.AgentDir = filepath.Join(d.Dir, "opt", "bin") })
	if _, err := h2.InstallAgent(ctx, AgentBinary{Data: standIn("0.0.1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Dir, "opt", "bin", "hostagent")); err != nil {
		t.Fatal(err)
	}
}

// elfHeader is a minimal little-endian ELF64 executable header for machine.
func elfHeader(machine uint16) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	binary.LittleEndian.PutUint16(h[16:], 2)
	binary.LittleEndian.PutUint16(h[18:], machine)
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64)
	return h
}

func getVersion(t *testing.T, a *Agent) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.BaseURL+"/v1/version", nil)
	resp, err := a.Client.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/version through the SSH connection: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v struct{ Version string }
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
		t.Fatalf("GET /v1/version: %s %s", resp.Status, body)
	}
	return v.Version
}

// processAlive: pid exists and is not a zombie (nothing may reap the
// agent, whose parent was the SSH session).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func TestAgentThroughForwardedChannel(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the stand-in hostagent needs /usr/bin/python3")
	}
	d := startSSHD(t)
	var transcript syncBuffer
	h := d.open(t, "h1", func(o *Options) { o.Transcript = transport.NewTranscript(&transcript) })
	killAgentAtCleanup(t, h, d.Home)
	ctx := testCtx(t)
	if _, err := h.InstallAgent(ctx, AgentBinary{Data: standIn("0.0.1")}); err != nil {
		t.Fatal(err)
	}
	a, err := h.StartAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Started || a.PID <= 0 || !strings.HasPrefix(a.Addr, "127.0.0.1:") {
		t.Fatalf("agent %+v", a)
	}
	if v := getVersion(t, a); v != "0.0.1" {
		t.Fatalf("version %q", v)
	}
	if h.HTTPClient() != a.Client {
		t.Error("HTTPClient is not the agent's client")
	}
	checkToken(t, a, d.Home, h.opts.StateDir, transcript.String())
	if a2, err := h.StartAgent(ctx); err != nil || a2 != a {
		t.Fatalf("second StartAgent: %v %v", a2, err)
	}

	// The agent outlives the SSH session that started it: a second
	// connection finds it running, and leaves it running when it closes.
	h2 := d.open(t, "h1-second")
	b, err := h2.StartAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Started || b.Addr != a.Addr || b.PID != a.PID {
		t.Fatalf("second driver: %+v, want the running agent %+v", b, a)
	}
	// The second driver's token replaced the first's in the running agent.
	if v := getVersion(t, b); v != "0.0.1" {
		t.Fatalf("version through the second driver: %q", v)
	}
	if st := statusWithout(t, a, "Bearer "); st != 401 {
		t.Errorf("the first driver's token after the second's: HTTP %d, want 401", st)
	}
	if err := h2.Close(); err != nil {
		t.Fatal(err)
	}
	if !processAlive(a.PID) {
		t.Fatal("closing a driver that did not start the agent stopped it")
	}
	// It still serves (and still refuses the first driver's old token).
	if st := statusWithout(t, a, "Bearer "); st != 401 {
		t.Fatalf("the agent after the second driver closed: HTTP %d, want 401", st)
	}

	// Replacing the binary stops the old agent; the new one starts.
	if _, err := h.InstallAgent(ctx, AgentBinary{Data: standIn("0.0.2")}); err != nil {
		t.Fatal(err)
	}
	if processAlive(a.PID) {
		t.Fatal("the old agent still runs after its binary was replaced")
	}
	c, err := h.StartAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Started || getVersion(t, c) != "0.0.2" {
		t.Fatalf("new agent %+v", c)
	}

	// Close stops the agent this driver started.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if processAlive(c.PID) {
		t.Fatal("Close did not stop the agent it started")
	}
}

func TestAgentThatExitsIsReported(t *testing.T) {
	d := startSSHD(t)
	h := d.open(t, "h1", func(o *Options) { o.StartTimeout = 10 * time.Second })
	ctx := testCtx(t)
	bad := []byte("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'hostagent 0.0.9'; exit 0; fi\necho 'cannot bind: permission denied' >&2\nexit 1\n")
	if _, err := h.InstallAgent(ctx, AgentBinary{Data: bad}); err != nil {
		t.Fatal(err)
	}
	_, err := h.StartAgent(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot bind: permission denied") || !strings.Contains(err.Error(), "h1:") {
		t.Fatalf("agent that exits: %v, want its log in the error", err)
	}
}

func TestIdentity(t *testing.T) {
	d := sharedSSHD(t)
	h := d.open(t, "h1")
	id, err := h.Identity(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	hn, _ := os.Hostname()
	if !strings.Contains(id.Model, hn) || id.Vendor == "" || id.Firmware == "" {
		t.Fatalf("identity %+v (hostname %s)", id, hn)
	}
}

// checkToken: the agent refuses requests without the run's token or with
// another; the token is in a 0600 file, and neither on the agent's command
// line nor in the transcript.
func checkToken(t *testing.T, a *Agent, home, stateDir, transcript string) {
	t.Helper()
	path := filepath.Join(home, stateDir, "token")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) != 64 {
		t.Fatalf("token %d characters, want 64 hex", len(tok))
	}
	if strings.Contains(transcript, tok) {
		t.Error("the token is in the transcript")
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(a.PID) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cmdline), tok) {
		t.Error("the token is on the agent's command line")
	}
	for _, auth := range []string{"", "Bearer " + strings.Repeat("0", 64), "Bearer " + tok[:32]} {
		if st := statusWithout(t, a, auth); st != 401 {
			t.Errorf("Authorization %q: HTTP %d, want 401", auth, st)
		}
	}
}

// statusWithout asks the agent for its version through the SSH connection
// with the given Authorization header (none when empty) instead of the
// driver's.
func statusWithout(t *testing.T, a *Agent, auth string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: a.DialContext}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.BaseURL+"/v1/version", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/version: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The stand-in agent outlives the SSH session that starts it, as the
// agent does; a test binary killed or stopped by -timeout runs no cleanup
// to kill it, but its sshd goes with it (internal/proctest), and the
// stand-in ends itself once that sshd is gone (SSHDTEST_PID_FILE). Here
// the sshd is killed as the binary's death would end it, and the stand-in
// must go within a bound (it looks every 0.2 s; the bound is for a loaded
// machine). Fails with the stand-in's watch taken out (its 10-minute
// timer is the only other end).
func TestStandInAgentEndsWithTheSSHD(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the stand-in hostagent needs /usr/bin/python3")
	}
	d := startSSHD(t)
	h := d.open(t, "h1")
	killAgentAtCleanup(t, h, d.Home)
	ctx := testCtx(t)
	if _, err := h.InstallAgent(ctx, AgentBinary{Data: standIn("0.0.1")}); err != nil {
		t.Fatal(err)
	}
	a, err := h.StartAgent(ctx)
	if err != nil || !processAlive(a.PID) {
		t.Fatalf("agent %+v: %v", a, err)
	}
	syscall.Kill(-d.PID, syscall.SIGKILL) // the sshd's group, as its watcher kills it
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(a.PID) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if processAlive(a.PID) {
		t.Errorf("the stand-in agent (pid %d) still runs 30 s after the sshd was killed", a.PID)
	}
}
