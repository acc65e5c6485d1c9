package proctest

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
)

// childEnv, when set, makes TestTiedProcessesEndWithTheTestBinary the
// child test binary: it starts the tied commands, prints their pids and
// waits to be killed.
const childEnv = "PROCTEST_CHILD"

// A test binary killed with SIGKILL (no cleanup, no deferred call runs)
// leaves none of its tied commands running: one that ends on SIGTERM, and
// one that ignores it (it gets SIGKILL after the grace), with the child it
// started in its group. Fails with the watcher's kills taken out of
// watchdog (all three still run at the deadline).
func TestTiedProcessesEndWithTheTestBinary(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		runChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTiedProcessesEndWithTheTestBinary$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for len(pids) < 3 && sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, n)
		}
	}
	if len(pids) < 3 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child printed %d pids", len(pids))
	}
	for _, p := range pids {
		if Gone(p) {
			t.Fatalf("pid %d gone before the test binary was killed", p)
		}
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	// A bound on correctness, not on speed: the grace is 5 s.
	deadline := time.Now().Add(GraceSeconds*time.Second + 25*time.Second)
	for _, p := range pids {
		for !Gone(p) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !Gone(p) {
			t.Errorf("pid %d still runs %d s after its test binary was killed", p, GraceSeconds+25)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// runChild starts the tied commands, prints their pids, and waits to be
// killed (a minute at most: the parent kills it at once).
func runChild(t *testing.T) {
	term := exec.Command("sleep", "600")
	if err := Start(t, term); err != nil {
		t.Fatal(err)
	}
	// Ignores SIGTERM (as does the sleep it starts), prints that sleep's
	// pid and waits for it.
	stubborn := exec.Command("sh", "-c", `trap '' TERM; sleep 600 & echo "pid $!"; wait`)
	stubborn.Stdout = os.Stdout
	if err := Start(t, stubborn); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("pid %d\npid %d\n", term.Process.Pid, stubborn.Process.Pid)
	time.Sleep(time.Minute)
}
