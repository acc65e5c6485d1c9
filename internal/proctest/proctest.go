// Package proctest starts a long-lived process for a test (a server, a
// daemon, the command under test left running) so that it cannot outlive
// the test binary: a binary stopped by -timeout runs no cleanups, and one
// killed outright (SIGKILL) runs nothing at all. Standard library only.
package proctest

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// watchdog runs as sh -c's script. It starts a watcher in the background,
// then becomes the command (exec: same pid, standard input, output,
// signals and process group). The watcher holds the read end of a pipe
// on fd 3 whose only write end this process holds (close-on-exec, so no
// other child inherits it). When this process ends, however it ends, the
// kernel closes the write end and the watcher's read sees end of file:
// it sends SIGTERM to its process group (the command's, which it shares)
// and SIGKILL to whatever is left once the command is gone or after 5 s.
// The watcher ignores SIGTERM; a process group lives as long as one of
// its members does, so its id cannot have gone to another process.
const watchdog = `( trap '' TERM
  read -r _ <&3
  kill -TERM 0
  i=0
  while kill -0 $$ 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
  kill -KILL 0 ) </dev/null >/dev/null 2>&1 &
exec "$@" 3<&-`

// GraceSeconds is how long the command has between SIGTERM and SIGKILL
// once its test binary is gone (50 waits of 0.1 s in watchdog).
const GraceSeconds = 5

// Scope is what a command is started for: a test (testing.TB), or
// something a whole test binary holds (sshdtest.Shared) whose Cleanup
// runs when the package's TestMain ends it.
type Scope interface {
	Helper()
	Cleanup(func())
}

// Start starts cmd in a process group of its own, tied to this process:
// when this process ends, however it ends, or when t's cleanups run (the
// test's end; after the cleanups the caller registers later), the group
// gets SIGTERM, and SIGKILL once the command is gone or GraceSeconds have
// passed. cmd.Process is the command itself (its pid and signals are the
// caller's to use, and its Wait the caller's to call). Processes that
// leave the group (setsid, setpgid) are not reached. cmd must not have
// ExtraFiles (fd 3 is the tie).
func Start(t Scope, cmd *exec.Cmd) error {
	t.Helper()
	if cmd.Err != nil {
		return cmd.Err
	}
	if len(cmd.ExtraFiles) > 0 {
		return errors.New("proctest: a tied command takes no ExtraFiles")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Args = append([]string{"sh", "-c", watchdog, "proctest", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = sh
	cmd.ExtraFiles = []*os.File{r}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return err
	}
	// The cleanup holds the write end: the tie does not end before the
	// test does (a write end collected as garbage would close it).
	t.Cleanup(func() { w.Close() })
	return nil
}

// Gone reports whether pid no longer runs: it does not exist, or it is a
// zombie no one has reaped yet (the init of a container may not reap).
func Gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
