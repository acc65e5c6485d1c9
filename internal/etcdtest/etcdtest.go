// Package etcdtest runs Debian's etcd-server on loopback for one test, for
// the tests of the etcd lease backend and of the commands that use it.
// Standard library and internal/proctest only.
package etcdtest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"testbed/internal/proctest"
)

// Start runs etcd on free loopback ports in a temporary directory and
// kills it when the test ends; it returns the client endpoint (host:port).
// It skips, saying why, where etcd is not installed (.ci/run installs it).
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd not installed (apt-get install etcd-server): the etcd lease backend is not tested here")
	}
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}
	client, peer := free(), free()
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--name", "t", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "t="+peer, "--log-outputs", "stderr")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Tied to the test binary: etcd ends with it however it ends (a
	// -timeout runs no cleanup).
	if err := proctest.Start(t, cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	return strings.TrimPrefix(client, "http://")
}
