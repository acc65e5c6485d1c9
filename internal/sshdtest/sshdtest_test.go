package sshdtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"testbed/internal/proctest"
)

// The sshd a test started ends with its test binary, however the binary
// ends: a child test binary starts one and is killed with SIGKILL (no
// cleanup runs), and the sshd is gone within a bound (sshd ends on
// SIGTERM at once; the bound is for a loaded machine). Before, it ran in
// a group of its own that only the test's cleanup killed, and stayed.
func TestSSHDEndsWithTheTestBinary(t *testing.T) {
	if os.Getenv("SSHDTEST_CHILD") != "" {
		s := Start(t, Options{})
		fmt.Printf("pid %d\n", s.PID)
		time.Sleep(time.Minute) // the parent kills it at once
		return
	}
	if _, err := Path(); err != nil {
		t.Skipf("no OpenSSH server: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSSHDEndsWithTheTestBinary$", "-test.v")
	cmd.Env = append(os.Environ(), "SSHDTEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, lines := 0, []string{}
	for sc := bufio.NewScanner(out); pid == 0 && sc.Scan(); {
		lines = append(lines, sc.Text())
		if p, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(p)
		}
	}
	if pid <= 0 || proctest.Gone(pid) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child started no sshd (pid %d): %s", pid, strings.Join(lines, "\n"))
	}
	cmd.Process.Kill() // SIGKILL: no cleanup runs
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for !proctest.Gone(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !proctest.Gone(pid) {
		syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatalf("sshd (pid %d) still runs 30 s after its test binary was killed", pid)
	}
}
