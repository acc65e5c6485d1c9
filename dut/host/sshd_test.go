package host

import (
	"bytes"
	"context"
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

	"testbed/transport"
)

// The driver tests run against a real OpenSSH server: Debian's
// openssh-server, started per test on a free 127.0.0.1 port with a host key
// and an authorized client key made for the test, a config of its own (no
// PAM, no strict modes, no sftp subsystem), as the current user. HOME in
// the sessions is a directory of the test (sshd_config SetEnv), so the
// driver's default install directory (~/.testbed/bin) is exercised without
// touching the real home.

var (
	sshdOnce sync.Once
	sshdBin  string
	sshdErr  error
)

// sshdPath finds sshd, installing openssh-server with apt-get when it is
// missing and the test runs as root; otherwise the caller skips.
func sshdPath() (string, error) {
	sshdOnce.Do(func() {
		find := func() string {
			for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
				if _, err := os.Stat(p); err == nil {
					return p
				}
			}
			if p, err := exec.LookPath("sshd"); err == nil {
				if abs, err := filepath.Abs(p); err == nil {
					return abs
				}
			}
			return ""
		}
		if sshdBin = find(); sshdBin != "" {
			return
		}
		apt, err := exec.LookPath("apt-get")
		if err != nil || os.Geteuid() != 0 {
			sshdErr = errors.New("sshd is not installed and cannot be (needs root and apt-get): apt-get install openssh-server")
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		install := func() ([]byte, error) {
			c := exec.CommandContext(ctx, apt, "-o", "DPkg::Lock::Timeout=120", "install", "-y", "-q", "openssh-server")
			c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			return c.CombinedOutput()
		}
		out, err := install()
		if err != nil {
			if o, uerr := exec.CommandContext(ctx, apt, "-o", "DPkg::Lock::Timeout=120", "update", "-q").CombinedOutput(); uerr != nil {
				out = append(out, o...)
			} else {
				out, err = install()
			}
		}
		if sshdBin = find(); sshdBin == "" {
			sshdErr = fmt.Errorf("apt-get install openssh-server failed (%v): %s", err, lastLines(string(out), 5))
		}
	})
	return sshdBin, sshdErr
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

type testSSHD struct {
	Addr       string // ssh://user@127.0.0.1:port
	HostPort   string
	Dir        string
	Home       string
	KnownHosts string
	KeyFile    string
	stderr     *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeKey(t *testing.T, path string) ssh.PublicKey {
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

// startSSHD starts an OpenSSH server for one test and stops it at cleanup.
func startSSHD(t *testing.T) *testSSHD {
	t.Helper()
	bin, err := sshdPath()
	if err != nil {
		t.Skipf("no OpenSSH server for the host driver tests: %v", err)
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
	d := &testSSHD{Dir: dir, Home: filepath.Join(dir, "home"), KnownHosts: filepath.Join(dir, "known_hosts"), KeyFile: filepath.Join(dir, "client_key"), stderr: &syncBuffer{}}
	if err := os.Mkdir(d.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	hostPub := writeKey(t, filepath.Join(dir, "host_key"))
	clientPub := writeKey(t, d.KeyFile)
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
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
SetEnv HOME=%[3]s
LogLevel ERROR
`, port, dir, d.Home)
		cfgPath := filepath.Join(dir, "sshd_config")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-D", "-e", "-f", cfgPath)
		cmd.Stderr = d.stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start sshd: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		d.HostPort = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := waitListening(d.HostPort, exited); err != nil {
			cmd.Process.Kill()
			if attempt < 3 && strings.Contains(d.stderr.String(), "already in use") {
				continue
			}
			t.Fatalf("sshd did not start: %v\n%s", err, d.stderr.String())
		}
		t.Cleanup(func() {
			// The listener and every session process of this server.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
			if t.Failed() {
				t.Logf("sshd log:\n%s", d.stderr.String())
			}
		})
		break
	}
	d.Addr = fmt.Sprintf("ssh://%s@%s", u.Username, d.HostPort)
	line := knownhosts.Line([]string{knownhosts.Normalize(d.HostPort)}, hostPub)
	if err := os.WriteFile(d.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

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

// options are driver options for this server; the transcript goes to the
// test log when the test fails.
func (d *testSSHD) options(t *testing.T, name string) Options {
	var buf syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("transcript of %s:\n%s", name, buf.String())
		}
	})
	return Options{
		Name:       name,
		SSH:        transport.SSHOptions{KnownHosts: d.KnownHosts, KeyFile: d.KeyFile},
		Timeout:    20 * time.Second,
		Transcript: transport.NewTranscript(&buf),
	}
}

// open connects a driver to the server and closes it at cleanup.
func (d *testSSHD) open(t *testing.T, name string, edit ...func(*Options)) *Host {
	t.Helper()
	o := d.options(t, name)
	for _, e := range edit {
		e(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := Open(ctx, d.Addr, o)
	if err != nil {
		t.Fatalf("open: %v\n%s", err, d.stderr.String())
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSSHDHarness(t *testing.T) {
	d := startSSHD(t)
	h := d.open(t, "h1")
	r, err := h.Run(testCtx(t), `echo "$HOME"; id -un`)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	u, _ := user.Current()
	if len(lines) != 2 || lines[0] != d.Home || lines[1] != u.Username {
		t.Fatalf("session sees %q, want HOME %s and user %s", r.Stdout, d.Home, u.Username)
	}
}
