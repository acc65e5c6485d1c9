package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLeaseRefusesSecondHolderAndSaysWho(t *testing.T) {
	dir := t.TempDir()
	l1 := NewLeaser(dir, time.Hour, nil)
	got, err := l1.Acquire("lab", "alice", "run-1", map[string]string{"voa1": "tcp://x:5025", "tg1": "http://y"})
	if err != nil {
		t.Fatal(err)
	}
	l2 := NewLeaser(dir, time.Hour, nil)
	_, err = l2.Acquire("lab", "bob", "run-2", map[string]string{"tg0": "http://z", "voa1": "tcp://x:5025"})
	var held *LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("second acquire: %v, want LeaseHeldError", err)
	}
	if !strings.Contains(err.Error(), "alice") || !strings.Contains(err.Error(), "run-1") {
		t.Errorf("error does not say who holds it: %v", err)
	}
	// All or nothing: bob's lease on tg0 must not linger.
	files, _ := filepath.Glob(filepath.Join(dir, "leases", "lab-tg0-*"))
	if len(files) != 0 {
		t.Errorf("partial lease left behind: %v", files)
	}
	l1.Release(got)
	if _, err := l2.Acquire("lab", "bob", "run-2", map[string]string{"voa1": "tcp://x:5025"}); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

func TestLeaseTakesOverStale(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := NewLeaser(dir, time.Minute, nil)
	old.Now = func() time.Time { return now }
	if _, err := old.Acquire("lab", "alice", "run-1", map[string]string{"voa1": "a"}); err != nil {
		t.Fatal(err)
	}

	// Still valid and the process is alive: refused.
	fresh := NewLeaser(dir, time.Minute, nil)
	fresh.Now = func() time.Time { return now.Add(30 * time.Second) }
	if _, err := fresh.Acquire("lab", "bob", "run-2", map[string]string{"voa1": "a"}); err == nil {
		t.Fatal("valid lease was taken over")
	}
	// TTL passed: taken over.
	fresh.Now = func() time.Time { return now.Add(2 * time.Minute) }
	if _, err := fresh.Acquire("lab", "bob", "run-2", map[string]string{"voa1": "a"}); err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
}

func TestLeaseTakesOverDeadProcess(t *testing.T) {
	dir := t.TempDir()
	a := NewLeaser(dir, time.Hour, nil)
	if _, err := a.Acquire("lab", "alice", "run-1", map[string]string{"voa1": "a"}); err != nil {
		t.Fatal(err)
	}
	b := NewLeaser(dir, time.Hour, nil)
	b.alive = func(pid int) bool { return pid != os.Getpid() } // the holder "died"
	if _, err := b.Acquire("lab", "bob", "run-2", map[string]string{"voa1": "a"}); err != nil {
		t.Fatalf("dead holder's lease not taken over: %v", err)
	}
}

func TestLeaseKeysSeparateLabsAndAddresses(t *testing.T) {
	if leaseKey("lab", "voa1", "tcp://a:1") == leaseKey("lab", "voa1", "tcp://b:1") {
		t.Error("two instruments at different addresses share a lease")
	}
	if strings.ContainsAny(leaseKey("lab/../x", "v 1", "a"), "/ ") {
		t.Error("lease key is not a safe file name")
	}
}
