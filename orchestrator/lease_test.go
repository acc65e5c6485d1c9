package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func targets(kv ...string) []LeaseTarget {
	var out []LeaseTarget
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, LeaseTarget{Device: kv[i], Address: kv[i+1]})
	}
	return out
}

func TestLeaseRefusesSecondHolderAndSaysWho(t *testing.T) {
	dir := t.TempDir()
	l1 := NewLeaser(dir, time.Hour, nil)
	got, err := l1.Acquire("lab", "alice", "run-1", targets("voa1", "tcp://x:5025", "tg1", "http://y"))
	if err != nil {
		t.Fatal(err)
	}
	l2 := NewLeaser(dir, time.Hour, nil)
	_, err = l2.Acquire("lab", "bob", "run-2", targets("tg0", "http://z", "voa1", "tcp://x:5025"))
	var held *LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("second acquire: %v, want LeaseHeldError", err)
	}
	if !strings.Contains(err.Error(), "alice") || !strings.Contains(err.Error(), "run-1") {
		t.Errorf("error does not say who holds it: %v", err)
	}
	// All or nothing: bob's lease on tg0 must not linger.
	files, _ := filepath.Glob(filepath.Join(dir, "leases", "http_z*"))
	if len(files) != 0 {
		t.Errorf("partial lease left behind: %v", files)
	}
	l1.Release(got)
	if _, err := l2.Acquire("lab", "bob", "run-2", targets("voa1", "tcp://x:5025")); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// Two inventories that name one instrument differently (another lab name,
// another device name, another spelling of its address) meet on one lease.
func TestLeaseIsOnThePhysicalDeviceNotItsName(t *testing.T) {
	dir := t.TempDir()
	a := NewLeaser(dir, time.Hour, nil)
	if _, err := a.Acquire("lab-a", "alice", "run-1", targets("voa1", "tcp://127.0.0.1:5025")); err != nil {
		t.Fatal(err)
	}
	b := NewLeaser(dir, time.Hour, nil)
	for _, addr := range []string{"tcp://127.0.0.1:5025", "TCP://localhost:5025", "tcp://[::ffff:127.0.0.1]:5025", "tcp://127.0.0.1:05025", "tcp://localhost.:005025"} {
		_, err := b.Acquire("copy-of-lab-a", "bob", "run-2", targets("attenuator", addr))
		var held *LeaseHeldError
		if !errors.As(err, &held) {
			t.Errorf("%s under another name: %v, want it refused as leased", addr, err)
		}
	}
	// Known serials: another address, the same instrument.
	c := NewLeaser(dir, time.Hour, nil)
	if _, err := c.Acquire("lab", "carol", "run-3", []LeaseTarget{{Device: "sw1", Address: "ssh://admin@10.0.0.5", Serial: "TF123"}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Acquire("lab2", "dave", "run-4", []LeaseTarget{{Device: "tofino", Address: "ssh://root@sw1.lab:22", Serial: "TF123"}})
	var held *LeaseHeldError
	if !errors.As(err, &held) {
		t.Errorf("same serial at another address: %v, want it refused", err)
	}
}

func TestNormalizeAddress(t *testing.T) {
	dev := filepath.Join(t.TempDir(), "ttyUSB0")
	if err := os.WriteFile(dev, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(filepath.Dir(dev), "voa-serial")
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	same := [][]string{
		{"ssh://admin@sw1:22", "ssh://root@SW1", "ssh://sw1"},
		{"http://10.0.0.1", "http://10.0.0.1:80/api/", "HTTP://10.0.0.1:80"},
		{"serial://" + dev + "?baud=9600", "serial://" + link, "serial://" + dev},
		{"tcp://localhost:5025", "tcp://127.0.0.1:5025"},
	}
	for _, group := range same {
		for _, a := range group[1:] {
			if NormalizeAddress(a) != NormalizeAddress(group[0]) {
				t.Errorf("%q -> %q, %q -> %q: want one device", a, NormalizeAddress(a), group[0], NormalizeAddress(group[0]))
			}
		}
	}
	if NormalizeAddress("tcp://a:1") == NormalizeAddress("tcp://b:1") || NormalizeAddress("tcp://a:1") == NormalizeAddress("tcp://a:2") {
		t.Error("different instruments share a key")
	}
	if strings.ContainsAny(leaseFile("serial:../../x y"), "/ ") {
		t.Error("lease file name is not a safe file name")
	}
}

func TestLeaseTakesOverStale(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := NewLeaser(dir, time.Minute, nil)
	old.Now = func() time.Time { return now }
	if _, err := old.Acquire("lab", "alice", "run-1", targets("voa1", "tcp://a:1")); err != nil {
		t.Fatal(err)
	}

	// Still valid and the process is alive: refused.
	fresh := NewLeaser(dir, time.Minute, nil)
	fresh.Now = func() time.Time { return now.Add(30 * time.Second) }
	if _, err := fresh.Acquire("lab", "bob", "run-2", targets("voa1", "tcp://a:1")); err == nil {
		t.Fatal("valid lease was taken over")
	}
	// TTL passed: taken over, and the lease says whose it was.
	fresh.Now = func() time.Time { return now.Add(2 * time.Minute) }
	got, err := fresh.Acquire("lab", "bob", "run-2", targets("voa1", "tcp://a:1"))
	if err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	if got[0].TookOver == nil || got[0].TookOver.RunID != "run-1" {
		t.Errorf("took over %+v, want run-1's lease", got[0].TookOver)
	}
}

func TestLeaseTakesOverDeadProcess(t *testing.T) {
	dir := t.TempDir()
	a := NewLeaser(dir, time.Hour, nil)
	if _, err := a.Acquire("lab", "alice", "run-1", targets("voa1", "tcp://a:1")); err != nil {
		t.Fatal(err)
	}
	b := NewLeaser(dir, time.Hour, nil)
	b.alive = func(pid int) bool { return pid != os.Getpid() } // the holder "died"
	if _, err := b.Acquire("lab", "bob", "run-2", targets("voa1", "tcp://a:1")); err != nil {
		t.Fatalf("dead holder's lease not taken over: %v", err)
	}
}

// Many runs taking over one dead run's lease at once: exactly one wins,
// and no reader ever finds a half-written lease.
func TestLeaseTakeoverRaceHasOneWinner(t *testing.T) {
	dir := t.TempDir()
	a := NewLeaser(dir, time.Hour, nil)
	got, err := a.Acquire("lab", "alice", "run-dead", targets("voa1", "tcp://a:1"))
	if err != nil {
		t.Fatal(err)
	}
	// Make the holder a process that no longer exists.
	dead := *got[0]
	dead.PID = 1 << 30
	b, _ := json.Marshal(dead)
	if err := os.WriteFile(got[0].path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = NewLeaser(dir, time.Hour, nil).Acquire("lab", "racer", fmt.Sprintf("run-%d", i), targets("voa1", "tcp://a:1"))
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		var held *LeaseHeldError
		switch {
		case err == nil:
			wins++
		case !errors.As(err, &held):
			t.Errorf("a racer failed otherwise than finding the device leased: %v", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d racers took over one dead lease, want 1: %v", wins, errs)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "leases", ".tmp-*"))
	if len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

func TestDefaultStateDirFallsBackWithAWarning(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	dir, warning := defaultStateDir(filepath.Join(blocker, "testbed")) // cannot be made: its parent is a file
	if dir != filepath.Join(xdg, "testbed") || !strings.Contains(warning, "other users") {
		t.Errorf("fallback %q, warning %q", dir, warning)
	}
	host := filepath.Join(t.TempDir(), "var-lib-testbed")
	if dir, warning := defaultStateDir(host); dir != host || warning != "" {
		t.Errorf("usable host-wide directory: got %q, %q", dir, warning)
	}
}
