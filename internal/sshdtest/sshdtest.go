// Package sshdtest starts a real OpenSSH server for a test: Debian's
// openssh-server on a free 127.0.0.1 port, with a host key and an
// authorized client key made for the test and a config of its own (no PAM,
// no strict modes), as the current user, HOME in the sessions a directory
// of the test. Drivers that speak to devices over SSH run their shell
// scripts through it, so a real shell executes every one of them.
package sshdtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"testbed/internal/proctest"
)

// Server is a running sshd.
type Server struct {
	Addr       string // ssh://user@127.0.0.1:port
	HostPort   string
	Dir        string // the test's directory: keys, config
	Home       string // HOME of the sessions
	KnownHosts string
	KeyFile    string
	PID        int // the listening sshd's, also its process group's
	log        *buffer
}

// Log is what sshd wrote on its stderr.
func (s *Server) Log() string { return s.log.String() }

// Options of a server.
type Options struct {
	// Env is set in every session (sshd_config SetEnv), beside HOME and
	// SSHDTEST_PID_FILE (the sshd's pid file).
	Env map[string]string
}

type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Path finds sshd; the caller skips, saying why, when it is missing (.ci/run
// installs openssh-server).
func Path() (string, error) {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("sshd is not installed (Debian: apt-get install openssh-server)")
}

// WriteKey writes a new ed25519 private key to path and returns its public
// key.
// PyEndsWithSSHD is Python for a stand-in a test starts over SSH that
// outlives its session, as a real agent or bf_switchd does, so that it
// does not outlive the test: a test binary stopped by -timeout (or killed)
// runs no cleanup, but its sshd ends with it (internal/proctest). The
// code ends the process once the sshd whose pid the Python expression pid
// gives is gone (nothing is watched where pid cannot be read), and after
// 10 minutes at most, longer than any test. It is written at the top
// level of a script that imports os, threading and time, and holds no
// single quote, so it can sit in a shell's python3 -c '...'.
func PyEndsWithSSHD(pid string) string {
	return `
threading.Timer(600, os._exit, (0,)).start()
def sshd_gone(pid):
    try:
        st = open("/proc/%d/stat" % pid).read()
    except OSError:
        return True
    return st[st.rindex(")") + 2] in "ZX"
def watch(pid):
    while not sshd_gone(pid):
        time.sleep(0.2)
    os._exit(0)
try:
    threading.Thread(target=watch, args=(` + pid + `,), daemon=True).start()
except (KeyError, OSError, ValueError):
    pass
`
}

func WriteKey(t TB, path string) ssh.PublicKey { return writeKey(t, path) }

func writeKey(t TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TB is what Start needs of its caller: a *testing.T, whose test the
// server lives for, or a *Shared, for a server a whole test binary shares.
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Failed() bool
	Logf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

var _ TB = (*testing.T)(nil)

// Start starts a server for one test and stops it at cleanup; it ends
// with the test binary too, however the binary ends (internal/proctest:
// a -timeout runs no cleanup). The sessions' processes that leave its
// process group are the caller's. It skips the test when sshd is missing.
func Start(t TB, o Options) *Server {
	t.Helper()
	bin, err := Path()
	if err != nil {
		t.Skipf("no OpenSSH server: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd running as root needs its privilege separation directory,
		// which the system's service would have created.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Skipf("sshd as root needs /run/sshd: %v", err)
		}
	}
	dir := t.TempDir()
	s := &Server{Dir: dir, Home: filepath.Join(dir, "home"), KnownHosts: filepath.Join(dir, "known_hosts"), KeyFile: filepath.Join(dir, "client_key"), log: &buffer{}}
	if err := os.Mkdir(s.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	hostPub := writeKey(t, filepath.Join(dir, "host_key"))
	clientPub := writeKey(t, s.KeyFile)
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
	}
	// A stand-in daemon a session starts, which leaves the sshd's
	// process group as the real one does, finds the sshd by its pid file
	// and can end itself once it is gone (SSHDTEST_PID_FILE).
	env := "HOME=" + s.Home + " SSHDTEST_PID_FILE=" + filepath.Join(dir, "sshd.pid")
	for k, v := range o.Env {
		if strings.ContainsAny(k+v, " \"\n") {
			t.Fatalf("sshdtest: environment %s=%q: no spaces, quotes or newlines", k, v)
		}
		env += " " + k + "=" + v
	}
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %[2]s/host_key
PidFile %[2]s/sshd.pid
AuthorizedKeysFile %[2]s/authorized_keys
UsePAM no
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
X11Forwarding no
PrintMotd no
PrintLastLog no
MaxSessions 20
MaxStartups 50
SetEnv %[3]s
LogLevel ERROR
`, port, dir, env)
		cfgPath := filepath.Join(dir, "sshd_config")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-D", "-e", "-f", cfgPath)
		cmd.Stderr = s.log
		// In a process group of its own, tied to the test binary: it
		// ends when the binary ends, however it ends (a -timeout runs
		// no cleanup, a SIGKILL nothing at all).
		if err := proctest.Start(t, cmd); err != nil {
			t.Fatalf("start sshd: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		s.HostPort = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := waitListening(s.HostPort, exited); err != nil {
			cmd.Process.Kill()
			if attempt < 3 && strings.Contains(s.log.String(), "already in use") {
				continue
			}
			t.Fatalf("sshd did not start: %v\n%s", err, s.log.String())
		}
		pid := cmd.Process.Pid
		s.PID = pid
		t.Cleanup(func() {
			// The listener; the sessions' processes are the caller's
			// (started in their own groups by nohup'd scripts).
			syscall.Kill(-pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				syscall.Kill(-pid, syscall.SIGKILL)
				<-exited
			}
			if t.Failed() {
				t.Logf("sshd log:\n%s", s.log.String())
			}
		})
		break
	}
	s.Addr = fmt.Sprintf("ssh://%s@%s", u.Username, s.HostPort)
	line := knownhosts.Line([]string{knownhosts.Normalize(s.HostPort)}, hostPub)
	if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

func freePort(t TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreePort is a port on 127.0.0.1 nothing listens on now.
func FreePort(t TB) int { return freePort(t) }

// waitListening asks until addr accepts, the server exits, or 15 s pass.
func waitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(15 * time.Second)
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("sshd exited: %v", err)
		case <-time.After(wait):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s", addr)
		}
	}
}
