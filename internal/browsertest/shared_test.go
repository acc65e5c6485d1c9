package browsertest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holderEnv, set to a directory, makes TestSharedBrowserOutlivesItsStarterAndEndsUnused
// the process that starts the shared browser there: it prints the
// browser's pid and waits to be killed.
const holderEnv = "BROWSERTEST_HOLD_SHARED"

// The binary that starts the run's shared browser can end first, even by
// SIGKILL (which runs no cleanup): the browser runs on for the others,
// which connect to it and start none. One that connects just after the
// last user has closed keeps it past the idle time; once none has used it
// for the idle time, its watcher ends it, its processes, its profile and
// the run's directory, with no stop run: a make test killed by SIGKILL
// leaves nothing behind.
func TestSharedBrowserOutlivesItsStarterAndEndsUnused(t *testing.T) {
	path, err := HeadlessPath()
	if err != nil {
		t.Skip(err.Error())
	}
	if dir := os.Getenv(holderEnv); dir != "" {
		holdShared(t, path, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "run")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(exe, "-test.run", "^"+t.Name()+"$")
	holder.Env = append(os.Environ(), holderEnv+"="+dir, EnvDir+"=")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	var pid int
	for sc := bufio.NewScanner(out); pid == 0 && sc.Scan(); {
		fmt.Sscanf(sc.Text(), "shared browser %d", &pid)
	}
	if pid == 0 {
		holder.Process.Kill()
		holder.Wait()
		t.Fatal("the holder process did not start the shared browser")
	}
	defer syscall.Kill(-pid, syscall.SIGKILL)

	p := &pool{main: true, dir: dir, idleFor: holderIdle}
	defer p.close()
	square(t, p, "first.html")
	if p.started != 0 || p.connects != 1 || recordedPid(t, dir) != pid {
		t.Errorf("a second binary started %d browsers, connected to %d, the record names pid %d: want none, the holder's (%d)",
			p.started, p.connects, recordedPid(t, dir), pid)
	}
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	square(t, p, "second.html")
	if p.started != 0 {
		t.Errorf("the binary started %d browsers after the shared one's starter was killed, want none", p.started)
	}
	p.close()
	// A binary that comes while the watcher waits out the idle time (it
	// takes DIR/users at once, now that no binary holds it).
	time.Sleep(time.Second)
	q := &pool{main: true, dir: dir, idleFor: holderIdle}
	defer q.close()
	square(t, q, "third.html")
	time.Sleep(holderIdle + 2*time.Second)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the shared browser (pid %d) in use by a binary that came within the idle time ended: %v", pid, err)
	}
	square(t, q, "fourth.html")
	if q.started != 0 {
		t.Errorf("a binary that came within the idle time started %d browsers, want none", q.started)
	}
	q.close()
	// Unused, it ends after the idle time.
	start := time.Now()
	for syscall.Kill(-pid, 0) == nil || exists(dir) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the shared browser's process group %d (or %s) still there %v after its last user", pid, dir, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the unused shared browser and its directory were gone %v after its last user closed", time.Since(start).Round(100*time.Millisecond))
}

// holderIdle is the idle time of the browser TestSharedBrowserOutlivesItsStarterAndEndsUnused shares.
const holderIdle = 4 * time.Second

// square renders a page in p's browser and fails t unless its blue square shows.
func square(t *testing.T, p *pool, name string) {
	t.Helper()
	if _, img, ok := p.render(t, page(t, name, ""), 200, 200, "svg"); !ok || blue(img) != 100*100 {
		t.Fatalf("%s in the shared browser: ok %v, want its square drawn", name, ok)
	}
}

// holdShared is the holder process: it starts the shared browser in dir,
// prints its pid, and waits to be killed.
func holdShared(t *testing.T, path, dir string) {
	p := &pool{main: true, dir: dir, idleFor: holderIdle}
	if _, err := p.browser(path); err != nil {
		t.Fatal(err)
	}
	if p.started != 1 {
		t.Fatalf("the holder started %d browsers, want 1", p.started)
	}
	fmt.Printf("shared browser %d\n", recordedPid(t, dir))
	time.Sleep(2 * time.Minute) // killed before
	// p (its users file) stays reachable, or its finalizer would close the
	// file and let go of the lock.
	p.close()
}

// A shared browser that died is started again by the next binary that
// needs it, and the stop (what make test runs after its tests) ends the
// browser's processes and removes the run's directory.
func TestSharedBrowserThatDiedStartsAgainAndStopEndsIt(t *testing.T) {
	path, err := HeadlessPath()
	if err != nil {
		t.Skip(err.Error())
	}
	dir := filepath.Join(t.TempDir(), "run")
	a := &pool{main: true, dir: dir, idleFor: time.Minute}
	defer a.close()
	if _, err := a.browser(path); err != nil {
		t.Fatal(err)
	}
	first := recordedPid(t, dir)
	defer syscall.Kill(-first, syscall.SIGKILL)
	a.close()
	if a.started != 1 || syscall.Kill(first, 0) != nil {
		t.Fatalf("started %d browsers (want 1), which ended with its binary's close", a.started)
	}
	if err := syscall.Kill(-first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); syscall.Kill(first, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the killed browser %d still runs", first)
		}
	}

	b := &pool{main: true, dir: dir, idleFor: time.Minute}
	defer b.close()
	square(t, b, "again.html")
	second := recordedPid(t, dir)
	defer syscall.Kill(-second, syscall.SIGKILL)
	if b.started != 1 || second == first {
		t.Errorf("after the shared browser (pid %d) died, the next binary started %d (pid %d), want 1 new", first, b.started, second)
	}
	b.close()

	stop := exec.Command("sh", "browser.sh", "stop", dir)
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("browser.sh stop: %v\n%s", err, out)
	}
	if err := syscall.Kill(-second, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after the stop, the shared browser's process group %d: %v, want none", second, err)
	}
	if exists(dir) {
		t.Errorf("after the stop, %s is still there", dir)
	}
}

func recordedPid(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "browser"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	pid, err := strconv.Atoi(lines[min(1, len(lines)-1)])
	if err != nil {
		t.Fatalf("%s: %q: %v", filepath.Join(dir, "browser"), b, err)
	}
	return pid
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// A record left by a browser that died names a pid the kernel may have
// given since to another process group's leader: the stop ends only a
// process running with the recorded profile, and a record whose profile
// is not one under DIR is not read (end would remove it).
func TestStopSparesAProcessThatIsNotTheRecordedBrowser(t *testing.T) {
	dir := t.TempDir()
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- other.Wait() }()
	defer other.Process.Kill() // ended with its test binary at the latest: Wait reaps it
	rec := fmt.Sprintf("ws://127.0.0.1:1/devtools/browser/x\n%d\n%s/profile-1\n", other.Process.Pid, dir)
	if err := os.WriteFile(filepath.Join(dir, "browser"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "browser.sh", "stop", dir).CombinedOutput(); err != nil {
		t.Fatalf("browser.sh stop: %v\n%s", err, out)
	}
	select {
	case err := <-exited:
		t.Fatalf("the stop ended a process that is not the recorded browser: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if exists(dir) {
		t.Errorf("the stop left %s", dir)
	}
	for _, profile := range []string{"/tmp", dir + "/../profile-1", dir + "/x"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "browser"), []byte(fmt.Sprintf("ws://x\n%d\n%s\n", other.Process.Pid, profile)), 0o600)
		if _, err := readRecord(dir); err == nil {
			t.Errorf("a record with profile %s was read", profile)
		}
	}
}
