package tofino_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"testbed/dut/tofino"
	"testbed/internal/proctest"
	"testbed/internal/sshdtest"
	lg "testbed/p4/linkguardian"
	"testbed/transport"
)

// The driver's shell scripts (switchd-start, agent-token, agent-install,
// agent-start, ddm, identity, switchd-status) run here in a real shell,
// behind a real OpenSSH server, against an SDE directory whose
// run_switchd.sh and run_bfshell.sh are stand-ins that record what they
// were asked and do what the SDE's do: run_switchd.sh starts a daemon
// named bf_switchd that serves bfshell's port, and run_bfshell.sh -b hands
// the agent's path to that daemon, which runs the agent (over the stand-in
// bfrt of agent/fake_bfrt.py) with the daemon's environment, as bf_switchd
// runs bfrt_python. pkill, pgrep and sudo are stand-ins too (in the
// sessions' PATH): they record, and touch only this test's daemon, so
// tests running side by side on one machine leave each other alone.

type sde struct {
	srv         *sshdtest.Server
	dir, bin    string
	home        string // the SSH user's HOME
	rootHome    string // HOME under the sudo stand-in
	bfshellPort int
	agentPort   int
}

// realPython is the interpreter's own path (a shim on PATH may need an
// environment the stand-ins do not keep): the one the agent's tests start,
// found once per test binary (tofino.Python).
func realPython(t *testing.T) string {
	t.Helper()
	return tofino.Python(t)
}

// reservePort binds a socket to a port of 127.0.0.1 the kernel picks,
// with opt (SO_REUSEADDR or SO_REUSEPORT) set, and holds it without
// listening until the test ends. While it is held the port is this test's:
// the kernel gives it to no outgoing connection and to no bind of port 0,
// and refuses any other bind to it except one with the same option (with
// SO_REUSEPORT, of the same user) that is not over a listener; the daemon
// or agent of the test binds it so and listens. The bfshell port is held
// with SO_REUSEPORT, which the stand-in bf_switchd sets, and which a
// server that picked the port itself (a Go listener, sshd: SO_REUSEADDR)
// cannot bind over; the agent's port with SO_REUSEADDR, the option the
// agent's own server sets (allow_reuse_address), so that the agent runs
// as it does on a switch.
func reservePort(t *testing.T, opt int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 1); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*unix.SockaddrInet4).Port
}

func writeExec(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func startSDE(t *testing.T) *sde {
	t.Helper()
	py := realPython(t)
	agentDir, err := filepath.Abs("agent")
	if err != nil {
		t.Fatal(err)
	}
	// The ports are the test's from the start (reservePort): a port
	// picked free and bound later by the daemon or the agent could be
	// taken meanwhile by another process (an outgoing connection's
	// ephemeral port, another test's server).
	s := &sde{bfshellPort: reservePort(t, unix.SO_REUSEPORT), agentPort: reservePort(t, unix.SO_REUSEADDR)}
	// The stand-ins need their paths before the server's sessions get
	// their PATH: a directory of the test that the server's directory
	// does not know yet.
	root := t.TempDir()
	s.bin, s.dir, s.rootHome = filepath.Join(root, "bin"), filepath.Join(root, "sde"), filepath.Join(root, "roothome")
	s.srv = sshdtest.Start(t, sshdtest.Options{Env: map[string]string{"PATH": s.bin + ":/usr/bin:/bin"}})
	s.home = s.srv.Home
	if err := os.MkdirAll(s.rootHome, 0o755); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(s.dir, "calls.log")
	pidFile := filepath.Join(s.dir, "switchd.pid")
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "bfshell.port"), []byte(strconv.Itoa(s.bfshellPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	record := `echo "$(basename "$0") $* | uid=$(id -u) home=$HOME sde=${SDE-} token_file=${TESTBED_AGENT_TOKEN_FILE-} agent_port=${TESTBED_AGENT_PORT-} program=${TESTBED_PROGRAM-} cpu_iface=${TESTBED_CPU_IFACE-}" >> ` + calls + "\n"
	writeExec(t, filepath.Join(s.dir, "run_switchd.sh"), "#!/bin/bash\n"+record+`[ "$1" = "-p" ] && [ -n "$2" ] || { echo "usage: run_switchd.sh -p <program>" >&2; exit 1; }
[ -n "$SDE" ] || { echo "run_switchd.sh: SDE is not set" >&2; exit 1; }
d=$(cd "$(dirname "$0")" && pwd)
exec "$d/install/bin/bf_switchd" --install-dir "$d/install" --conf-file "$d/install/share/p4/targets/tofino/$2.conf" --background
`)
	writeExec(t, filepath.Join(s.dir, "run_bfshell.sh"), "#!/bin/bash\n"+record+`d=$(cd "$(dirname "$0")" && pwd)
case "$1" in
-b) req="exec $2" ;;
-f) req="file $2" ;;
*) echo "usage: run_bfshell.sh -b <script> | -f <file>" >&2; exit 1 ;;
esac
exec 3<>/dev/tcp/127.0.0.1/$(cat "$d/bfshell.port") || { echo "bfshell: cannot connect to bf_switchd" >&2; exit 1; }
echo "$req" >&3
cat <&3
`)
	// The daemon: its name is bf_switchd (pgrep -x finds it), it serves
	// bfshell's port, and runs an agent script it is handed as
	// bfrtcli.start_bfrt runs a -b script, in its own environment. It
	// outlives the SSH session that starts it, as bf_switchd does, so the
	// test's cleanup kills it, and it ends itself with the test's sshd
	// (sshdtest.PyEndsWithSSHD) where no cleanup runs.
	writeExec(t, filepath.Join(s.dir, "install", "bin", "bf_switchd"), "#!"+py+`
import os, socket, sys, threading, time
`+sshdtest.PyEndsWithSSHD(strconv.Itoa(s.srv.PID))+`
d = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, `+strconv.Quote(agentDir)+`)
sys.dont_write_bytecode = True
import fake_bfrt
conf = sys.argv[sys.argv.index("--conf-file") + 1]
prog = os.path.basename(conf)[:-len(".conf")]
with open(os.path.join(d, "calls.log"), "a") as f:
    f.write("bf_switchd %s | uid=%d home=%s token_file=%s agent_port=%s program=%s cpu_iface=%s\n" % (
        " ".join(sys.argv[1:]), os.getuid(), os.environ.get("HOME", ""), os.environ.get("TESTBED_AGENT_TOKEN_FILE", ""),
        os.environ.get("TESTBED_AGENT_PORT", ""), os.environ.get("TESTBED_PROGRAM", ""), os.environ.get("TESTBED_CPU_IFACE", "")))
with open(os.path.join(d, "switchd.pid"), "w") as f:
    f.write(str(os.getpid()))
bfrt = fake_bfrt.FakeBfrt(program=prog)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # over the test's reservation
try:
    srv.bind(("127.0.0.1", int(open(os.path.join(d, "bfshell.port")).read())))
except OSError as e:
    with open(os.path.join(d, "calls.log"), "a") as f:
        f.write("bf_switchd bind failed: %s\n" % e)
    raise
srv.listen(16)

def session(c):
    line = c.makefile("r").readline().strip()
    if line.startswith("exec "):
        ns = {"__name__": "bfrtcli", "bfrt": bfrt}
        exec("def start_bfrt(udf):\n    exec(open(udf).read())\n", ns)
        try:
            ns["start_bfrt"](line[5:])
        except BaseException:
            import traceback
            with open(os.path.join(d, "calls.log"), "a") as f:
                f.write("bf_switchd agent failed: " + traceback.format_exc().replace("\n", " / ") + "\n")
        finally:
            c.close()
    elif line.startswith("file "):
        out = []
        for l in open(line[5:]):
            if l.startswith("get-ddm "):
                out.append("bf-sde.bf_pltfm.qsfp> " + l)
                out += ["Channel %d:  -2.%d0dBm  -1.50dBm  6.50mA\n" % (i, i) for i in range(1, 5)]
        c.sendall("".join(out).encode())
        c.close()
    else:
        c.close()

while True:
    c, _ = srv.accept()
    threading.Thread(target=session, args=(c,), daemon=True).start()
`)
	writeExec(t, filepath.Join(s.bin, "pgrep"), "#!/bin/bash\n"+record+`[ "$*" = "-x bf_switchd" ] || [ "$*" = "-a -x bf_switchd" ] || { echo "pgrep stand-in: $*" >&2; exit 2; }
pid=$(cat `+pidFile+` 2>/dev/null) && kill -0 "$pid" 2>/dev/null || exit 1
# a process killed but not yet reaped (a zombie) is gone
[ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" != Z ] || exit 1
[ "$1" = "-a" ] && echo "$pid $(tr '\0' ' ' < /proc/$pid/cmdline)"
exit 0
`)
	writeExec(t, filepath.Join(s.bin, "pkill"), "#!/bin/bash\n"+record+`[ "$*" = "-x bf_switchd" ] || { echo "pkill stand-in: $*" >&2; exit 2; }
pid=$(cat `+pidFile+` 2>/dev/null) && kill "$pid" 2>/dev/null
`)
	// sudo -n: refuses when sudo.refuse exists (no NOPASSWD rule), lists
	// with -l, and otherwise runs the command with a fresh environment
	// and root's HOME, as env_reset does, plus the VAR=value given.
	writeExec(t, filepath.Join(s.bin, "sudo"), "#!/bin/bash\n"+record+`[ "$1" = "-n" ] || { echo "sudo stand-in: expected -n" >&2; exit 1; }
shift
[ -e `+filepath.Join(root, "sudo.refuse")+` ] && { echo "sudo: a password is required" >&2; exit 1; }
if [ "$1" = "-l" ]; then echo "$2"; exit 0; fi
envs=()
while [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
exec env -i PATH="$PATH" HOME=`+s.rootHome+` USER=root "${envs[@]}" "$@"
`)
	t.Cleanup(func() {
		// The daemon this test's scripts started (by its pid, never by name).
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(calls)
			t.Logf("calls:\n%s", b)
			for _, f := range []string{"switchd.log", "agent.log"} {
				b, _ := os.ReadFile(filepath.Join(s.home, ".testbed", f))
				t.Logf("%s:\n%s", f, b)
			}
		}
	})
	return s
}

func (s *sde) open(t *testing.T, edit func(*tofino.Options)) *tofino.Switch {
	t.Helper()
	o := tofino.Options{SSH: transport.SSHOptions{KnownHosts: s.srv.KnownHosts, KeyFile: s.srv.KeyFile}, SDE: s.dir,
		AgentPort: s.agentPort, BfshellPort: s.bfshellPort, Timeout: 20 * time.Second, StartTimeout: time.Minute}
	if edit != nil {
		edit(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sw, err := tofino.Open(ctx, s.srv.Addr, o)
	if err != nil {
		t.Fatalf("open: %v\n%s", err, s.srv.Log())
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

// calls are the lines the stand-ins recorded that start with prefix.
func (s *sde) calls(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, "calls.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func lastCall(t *testing.T, s *sde, prefix string) string {
	t.Helper()
	c := s.calls(t, prefix)
	if len(c) == 0 {
		t.Fatalf("no %q call recorded", prefix)
	}
	return c[len(c)-1]
}

// Without privilege, as the SSH user: every script runs in a real shell,
// the daemon gets the agent's settings in its environment (the token
// file by its absolute path), the agent it runs answers through the SSH
// tunnel, and the platform CLI's diagnostics come back.
func TestScriptsRunInARealShell(t *testing.T) {
	s := startSDE(t)
	sw := s.open(t, func(o *tofino.Options) { o.CPUIface = "ens1" })
	ctx := context.Background()
	id, err := sw.Identity(ctx)
	if err != nil || !strings.Contains(id.Model, "(") {
		t.Fatalf("identity %+v: %v", id, err)
	}
	if p, err := sw.Program(ctx); err != nil || p != "" {
		t.Fatalf("program before any start: %q %v", p, err)
	}
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	if p, err := sw.Program(ctx); err != nil || p != lg.ProgramSender {
		t.Errorf("program: %q %v, want %s", p, err, lg.ProgramSender)
	}
	tokenFile := filepath.Join(s.home, ".testbed", "agent_token")
	want := fmt.Sprintf("| uid=%d home=%s sde=%s token_file=%s agent_port=%d program=sender cpu_iface=ens1", os.Getuid(), s.home, s.dir, tokenFile, s.agentPort)
	if c := lastCall(t, s, "run_switchd.sh -p sender "); !strings.HasSuffix(c, want) {
		t.Errorf("run_switchd.sh was asked %q, want the environment %q", c, want)
	}
	if c := lastCall(t, s, "bf_switchd "); !strings.Contains(c, "--conf-file "+s.dir+"/install/share/p4/targets/tofino/sender.conf") || !strings.Contains(c, "token_file="+tokenFile) {
		t.Errorf("bf_switchd started as %q", c)
	}
	if c := lastCall(t, s, "run_bfshell.sh -b "); !strings.HasPrefix(c, "run_bfshell.sh -b "+filepath.Join(s.home, ".testbed", "testbed_agent.py")+" |") {
		t.Errorf("run_bfshell.sh was asked %q", c)
	}
	if st, err := os.Stat(tokenFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file %s: %v %v, want mode 0600", tokenFile, st, err)
	}
	if b, err := os.ReadFile(filepath.Join(s.home, ".testbed", "testbed_agent.py")); err != nil || string(b) != string(tofino.AgentScript) {
		t.Errorf("installed agent differs from the driver's (%v)", err)
	}
	// The agent over the tunnel: a port, a mirror session.
	if err := sw.AddPort(ctx, 136, 100, "rs528"); err != nil {
		t.Fatal(err)
	}
	m := tofino.MirrorSession{ID: 0x108, Direction: "EGRESS", Port: lg.RecircPort, Queue: 1, MaxPktLen: 16384, Enabled: true}
	if err := sw.AddMirror(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, err := sw.Mirror(ctx, m.ID); err != nil || got != m {
		t.Errorf("mirror session through the real agent: %+v %v", got, err)
	}
	lanes, err := sw.Transceiver(ctx, 3)
	if err != nil || len(lanes) != 4 || lanes[1].RxDBm != -2.2 {
		t.Errorf("transceiver: %+v %v", lanes, err)
	}
	if c := lastCall(t, s, "run_bfshell.sh -f "); !strings.Contains(c, "uid=") {
		t.Errorf("run_bfshell.sh -f was asked %q", c)
	}
	// A restart stops the daemon (pkill) and waits for it to be gone.
	old, _ := os.ReadFile(filepath.Join(s.dir, "switchd.pid"))
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(filepath.Join(s.dir, "switchd.pid")); string(now) == string(old) {
		t.Errorf("the daemon was not restarted (pid %s)", now)
	}
	if n := len(s.calls(t, "pkill -x bf_switchd")); n != 2 {
		t.Errorf("pkill asked %d times, want 2", n)
	}
	if len(s.calls(t, "sudo ")) != 0 {
		t.Errorf("sudo asked without the sudo privilege: %q", s.calls(t, "sudo "))
	}
}

// With privilege sudo the daemon is stopped and started through sudo -n,
// which resets the environment and gives root's HOME: the agent's
// settings reach it on sudo's command line and the token is found by its
// absolute path. Without a NOPASSWD rule the start fails at once, saying so.
func TestSudoPrivilege(t *testing.T) {
	s := startSDE(t)
	sw := s.open(t, func(o *tofino.Options) { o.Privilege = tofino.PrivilegeSudo })
	ctx := context.Background()
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"sudo -n -l " + s.dir + "/run_switchd.sh", "sudo -n pkill -x bf_switchd", "sudo -n -l " + s.dir + "/run_bfshell.sh"} {
		if len(s.calls(t, prefix)) == 0 {
			t.Errorf("no %q", prefix)
		}
	}
	tokenFile := filepath.Join(s.home, ".testbed", "agent_token")
	if c := lastCall(t, s, "bf_switchd "); !strings.Contains(c, "home="+s.rootHome+" ") || !strings.Contains(c, "token_file="+tokenFile+" ") {
		t.Errorf("bf_switchd under sudo: %q, want root's home and the token by its path", c)
	}
	if h, err := sw.Hello(ctx); err != nil || h.Program != lg.ProgramReceiver {
		t.Errorf("hello: %+v %v", h, err)
	}
	// No rule: a clear error, no daemon started.
	if err := os.WriteFile(filepath.Join(filepath.Dir(s.dir), "sudo.refuse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := len(s.calls(t, "run_switchd.sh"))
	sw2 := s.open(t, func(o *tofino.Options) { o.Privilege = tofino.PrivilegeSudo })
	err := sw2.StartSwitchd(ctx, lg.ProgramSender)
	if err == nil || !strings.Contains(err.Error(), "NOPASSWD") {
		t.Errorf("start without a sudoers rule: %v, want an error naming NOPASSWD", err)
	}
	if len(s.calls(t, "run_switchd.sh")) != n {
		t.Errorf("run_switchd.sh ran although sudo refused")
	}
	// A privilege the driver does not know is refused when opening.
	ctx2, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := tofino.Open(ctx2, s.srv.Addr, tofino.Options{Privilege: "doas"}); err == nil || !strings.Contains(err.Error(), "privilege") {
		t.Errorf("privilege doas: %v", err)
	}
}

// A daemon someone else started, by hand and as another user's HOME,
// without the agent's settings: the agent the driver starts in it finds
// the run's token beside itself.
func TestAgentInADaemonStartedBySomeoneElse(t *testing.T) {
	s := startSDE(t)
	other := filepath.Join(filepath.Dir(s.dir), "operator")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(s.dir, "run_switchd.sh"), "-p", lg.ProgramSender)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + other, "SDE=" + s.dir, "TESTBED_AGENT_PORT=" + strconv.Itoa(s.agentPort)}
	if err := proctest.Start(t, cmd); err != nil { // it ends with this binary
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sw := s.open(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := transport.Poll(ctx, func() (bool, error) {
		p, err := sw.Program(ctx)
		return p == lg.ProgramSender, err
	}); err != nil {
		t.Fatalf("the operator's daemon never ran: %v", err)
	}
	if c := lastCall(t, s, "bf_switchd "); !strings.Contains(c, "token_file= ") {
		t.Fatalf("the operator's daemon has a token file: %q", c)
	}
	if err := sw.EnsureAgent(ctx); err != nil {
		t.Fatalf("agent in the operator's daemon: %v", err)
	}
	if h, err := sw.Hello(ctx); err != nil || h.Program != lg.ProgramSender {
		t.Errorf("hello: %+v %v", h, err)
	}
}

// The stand-in bf_switchd outlives the SSH session that starts it, as the
// daemon does; a test binary killed or stopped by -timeout runs no cleanup
// to kill it, but its sshd goes with it (internal/proctest), and the
// stand-in ends itself once that sshd is gone. Here the sshd is killed as
// the binary's death would end it, and the stand-in must go within a
// bound (it looks every 0.2 s; the bound is for a loaded machine). Fails
// with the stand-in's watch taken out (its 10-minute timer is the only
// other end).
func TestStandInSwitchdEndsWithTheSSHD(t *testing.T) {
	s := startSDE(t)
	sw := s.open(t, nil)
	if err := sw.StartSwitchd(context.Background(), lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "switchd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || proctest.Gone(pid) {
		t.Fatalf("stand-in bf_switchd pid %q: %v, or gone", b, err)
	}
	syscall.Kill(-s.srv.PID, syscall.SIGKILL) // the sshd's group, as its watcher kills it
	deadline := time.Now().Add(30 * time.Second)
	for !proctest.Gone(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !proctest.Gone(pid) {
		t.Errorf("the stand-in bf_switchd (pid %d) still runs 30 s after the sshd was killed", pid)
	}
}
