package host

import (
	"bytes"
	"context"
	"os"
	"os/user"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/internal/sshdtest"
	"testbed/transport"
)

// The driver tests run against a real OpenSSH server (internal/sshdtest):
// Debian's openssh-server, started per test on a free 127.0.0.1 port with a
// host key and an authorized client key made for the test, as the current
// user. HOME in the sessions is a directory of the test, so the driver's
// default install directory (~/.testbed/bin) is exercised without touching
// the real home.

type testSSHD struct{ *sshdtest.Server }

// startSSHD starts an OpenSSH server for one test and stops it at cleanup;
// the test skips, saying why, when sshd is missing. A test that installs
// or starts the agent at its default place in the home directory, or
// stops the server, has a server of its own.
func startSSHD(t *testing.T) *testSSHD {
	t.Helper()
	return &testSSHD{sshdtest.Start(t, sshdtest.Options{})}
}

// sharedSSHD is one server for the tests of this binary that need none of
// their own: they keep their files in directories of their own (never the
// agent's default places in the home directory), each opens its own
// connections, and none stops the server. A server start is some 0.1 s of
// CPU (sshd, its watchdog, the keys); TestMain stops it after the tests.
func sharedSSHD(t *testing.T) *testSSHD {
	t.Helper()
	s, skip, err := shared.Server()
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &testSSHD{s}
}

var shared sshdtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	os.Exit(code)
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
		t.Fatalf("open: %v\n%s", err, d.Log())
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
	d := sharedSSHD(t)
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
