package browsertest

import (
	"context"
	_ "embed" // browser.sh
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// EnvDir names a directory (an absolute path) through which the test
// binaries of one run share one headless browser: make test sets it around
// its go test commands and runs `sh internal/browsertest/browser.sh stop
// DIR` after them. The first binary that needs a browser starts it, in a
// session of its own that outlives the binary, and records how to reach it
// (its DevTools websocket URL, pid and profile) in DIR/browser under a
// flock of DIR/lock; the others connect to it, each with tabs of its own.
// A binary whose shared browser has died starts another. Without EnvDir a
// binary starts a browser of its own, as a package tested alone with go
// test does. A launch of the headless shell is 2.1-2.2 s of CPU with every
// process it starts; make test's test binaries launched one each.
const EnvDir = "TESTBED_TEST_BROWSER_DIR"

// sharedIdle is how long the shared browser runs on once no test binary
// uses it, before its watcher ends it (browser.sh): what is left of a run
// killed before its stop, and longer than the gaps between the binaries
// of make test that use it (a gap longer costs one launch more).
const sharedIdle = 30 * time.Second

// script is browser.sh: the shared browser's watcher, and the stop.
//
//go:embed browser.sh
var script string

// sharedDir is EnvDir's directory, "" where it is unset; an error (and "")
// where it cannot be used: a relative path (each package's tests run in
// their own directory) or no flock command (util-linux) for the watcher.
func sharedDir() (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return "", nil
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s=%s is not an absolute path", EnvDir, dir)
	}
	if _, err := exec.LookPath("flock"); err != nil {
		return "", fmt.Errorf("%s: the shared browser's watcher needs flock (util-linux): %v", EnvDir, err)
	}
	return dir, nil
}

// record is how to reach the shared browser (DIR/browser, a line each).
type record struct {
	url     string // DevTools websocket
	pid     int    // the browser's, its session's and its process group's
	profile string // its user data directory, under DIR
}

// sharedBrowser connects the pool to the browser its dir records, or
// starts one there first: the connection's context (its first tab), and
// the func that closes the tab and the connection, leaving the browser.
func (p *pool) sharedBrowser(path string) (context.Context, func(), error) {
	unlock, err := lockDir(p.dir)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	if p.users == nil {
		// Held until close (or the binary's end, however it ends): the
		// browser's watcher ends it only once no binary holds it.
		f, err := os.OpenFile(filepath.Join(p.dir, "users"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		p.users = f
	}
	if rec, err := readRecord(p.dir); err == nil {
		ctx, cancel, err := connect(rec.url)
		if err == nil {
			return ctx, cancel, nil
		}
		// It died, or does not answer: end what is left of it.
		rec.end()
		os.Remove(filepath.Join(p.dir, "browser"))
	}
	rec, err := p.launchShared(path)
	if err != nil {
		return nil, nil, err
	}
	if err := writeRecord(p.dir, rec); err != nil {
		rec.end()
		return nil, nil, err
	}
	p.started++
	return connect(rec.url)
}

// launchShared starts the browser the run's binaries share: chromium under
// browser.sh's watcher, in a session of its own (chromedp's KeepOpen: not
// ended with this binary or its contexts), with the flags of a binary's
// own browser and a profile under dir.
func (p *pool) launchShared(path string) (record, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return record{}, err
	}
	profile, err := os.MkdirTemp(p.dir, "profile-")
	if err != nil {
		return record{}, err
	}
	idle := strconv.Itoa(max(1, int(p.idleFor.Seconds())))
	wrap := func(cmd *exec.Cmd) {
		cmd.Args = append([]string{"sh", "-c", script, "browsertest-browser", "supervise", p.dir, idle, profile, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = sh
	}
	opts := append(flags(path), chromedp.UserDataDir(profile), chromedp.KeepOpen, remote.WebSocket,
		chromedp.ModifyCmdFunc(wrap), chromedp.WSURLReadTimeout(time.Minute))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser() // the connection; the browser runs on
	if err := chromedp.Do(bctx); err != nil {
		if b := chromedp.FromContext(bctx).Browser; b != nil && b.Process() != nil {
			syscall.Kill(-b.Process().Pid, syscall.SIGKILL)
		}
		os.RemoveAll(profile)
		return record{}, fmt.Errorf("start %s: %w", path, err)
	}
	url, _ := chromedp.KeptOpen(bctx)
	return record{url: url, pid: chromedp.FromContext(bctx).Browser.Process().Pid, profile: profile}, nil
}

// connect opens a connection to the browser at the DevTools websocket url,
// with a tab of its own.
func connect(url string) (context.Context, func(), error) {
	actx, cancelAlloc := remote.NewAllocator(context.Background(), url, remote.NoModifyURL)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	cancel := func() {
		cancelBrowser() // closes the tab
		cancelAlloc()   // and the connection
	}
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("connect to the shared browser at %s: %w", url, err)
	}
	return bctx, cancel, nil
}

// lockDir takes dir's lock (making dir where it is not): the func releases
// it. The watcher of a browser no binary used removes dir under the lock:
// a lock taken on a file since removed is let go, and taken again.
func lockDir(dir string) (func(), error) {
	name := filepath.Join(dir, "lock")
	for {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(name)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return func() { f.Close() }, nil
		}
		f.Close()
	}
}

func readRecord(dir string) (record, error) {
	b, err := os.ReadFile(filepath.Join(dir, "browser"))
	if err != nil {
		return record{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		return record{}, fmt.Errorf("%s: %d lines, want 3", filepath.Join(dir, "browser"), len(lines))
	}
	pid, err := strconv.Atoi(lines[1])
	if err != nil || pid <= 1 {
		return record{}, fmt.Errorf("%s: pid %q", filepath.Join(dir, "browser"), lines[1])
	}
	// The profile is one the binaries made under dir (end removes it).
	if filepath.Dir(lines[2]) != filepath.Clean(dir) || !strings.HasPrefix(filepath.Base(lines[2]), "profile-") {
		return record{}, fmt.Errorf("%s: profile %q is not one under %s", filepath.Join(dir, "browser"), lines[2], dir)
	}
	return record{url: lines[0], pid: pid, profile: lines[2]}, nil
}

// writeRecord writes the record whole (a reader sees the old one or it).
func writeRecord(dir string, r record) error {
	tmp := filepath.Join(dir, "browser.new")
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%s\n%d\n%s\n", r.url, r.pid, r.profile), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "browser"))
}

// end kills what is left of the recorded browser's process group, where
// its leader still runs with the recorded profile (not a pid reused since),
// and removes the profile.
func (r record) end() {
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r.pid)); err == nil &&
		strings.Contains(string(cmdline), "--user-data-dir="+r.profile) {
		syscall.Kill(-r.pid, syscall.SIGKILL)
	}
	os.RemoveAll(r.profile)
}
