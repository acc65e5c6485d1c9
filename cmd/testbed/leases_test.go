package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/internal/etcdtest"
	"testbed/orchestrator"
)

// startEtcd runs etcd on loopback for one test, or skips saying why.
func startEtcd(t *testing.T) string { return etcdtest.Start(t) }

// On etcd leases: a held device refuses a run (exit 4, naming the holder),
// lab leases lists the holder by the inventory's name, --wait says who
// holds it and gives up after --wait-timeout, and a forced release lets
// the next run through.
func TestEtcdLeasesFromTheCommandLine(t *testing.T) {
	ep := startEtcd(t)
	lab, inv := startLab(t, 7)
	runs, state := dirs(t)
	leases := "etcd://" + ep + "/cli"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, _ := orchestrator.ParseLeasesURL(leases)
	var store *orchestrator.EtcdLeases
	var err error
	for ctx.Err() == nil {
		if store, err = orchestrator.NewEtcdLeases(ctx, cfg, 2*time.Second, nil); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d, _ := lab.Inventory().Device("voa1")
	held, err := store.Acquire(ctx, orchestrator.LeaseRequest{Lab: "other", Owner: "someone-else", RunID: "run-x",
		Devices: []orchestrator.LeaseTarget{{Device: "attenuator-a", Address: d.Address}}})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	base := append([]string{"exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state, "--leases", leases}, quick...)

	code, _, errOut := testbedRun(t, base...)
	if code != exitInfra || !strings.Contains(errOut, "someone-else") {
		t.Fatalf("exit %d, want %d naming the holder: %s", code, exitInfra, errOut)
	}
	t.Setenv("TESTBED_LEASES", leases)
	code, out, errOut := testbedRun(t, "lab", "leases", "--inventory", inv)
	if code != exitOK || !strings.Contains(out, "voa1") || !strings.Contains(out, "someone-else") || !strings.Contains(out, "run-x") {
		t.Fatalf("lab leases: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = testbedRun(t, append(base, "--wait", "--wait-timeout", "700ms")...)
	if code != exitInfra || !strings.Contains(errOut, "held by someone-else") || !strings.Contains(errOut, "place 1 in its queue") {
		t.Fatalf("--wait-timeout: exit %d, want %d saying who holds it and the place: %s", code, exitInfra, errOut)
	}
	code, _, errOut = testbedRun(t, "lab", "leases", "release", "voa1", "--inventory", inv)
	if code != exitBadInput {
		t.Fatalf("release without --force: exit %d %s", code, errOut)
	}
	code, out, errOut = testbedRun(t, "lab", "leases", "release", "voa1", "--inventory", inv, "--force")
	if code != exitOK || !strings.Contains(out, "run-x") {
		t.Fatalf("release --force: exit %d\n%s%s", code, out, errOut)
	}
	select {
	case <-held.Lost():
	case <-ctx.Done():
		t.Fatal("the holder was not told its lease was taken")
	}
	code, _, errOut = testbedRun(t, append(base, "--wait")...)
	if code != exitOK {
		t.Fatalf("after the release: exit %d %s", code, errOut)
	}
}

// With file leases (the default) lab leases lists the lease files, and a
// forced release removes one and records it.
func TestFileLeasesFromTheCommandLine(t *testing.T) {
	_, state := dirs(t)
	held, err := orchestrator.NewLeaser(state, time.Hour, nil).Acquire("lab", "someone-else", "run-x",
		[]orchestrator.LeaseTarget{{Device: "voa1", Address: "tcp://10.0.0.21:5025"}})
	if err != nil || len(held) != 1 {
		t.Fatal(err)
	}
	code, out, errOut := testbedRun(t, "lab", "leases", "--state-dir", state, "--output", "json")
	if code != exitOK || !strings.Contains(out, `"run_id": "run-x"`) || !strings.Contains(out, `"waiters": []`) {
		t.Fatalf("lab leases: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = testbedRun(t, "lab", "leases", "release", "tcp://10.0.0.21:5025", "--force", "--state-dir", state)
	if code != exitOK || !strings.Contains(out, "released tcp://10.0.0.21:5025, held by someone-else (run run-x)") {
		t.Fatalf("release: exit %d\n%s%s", code, out, errOut)
	}
	rec, err := os.ReadFile(filepath.Join(state, "leases", "released.log"))
	if err != nil || !strings.Contains(string(rec), `"by":`) || !strings.Contains(string(rec), "run-x") {
		t.Errorf("forced release not recorded: %s %v", rec, err)
	}
	if code, out, _ := testbedRun(t, "lab", "leases", "--state-dir", state); code != exitOK || !strings.Contains(out, "no device is leased") {
		t.Errorf("after the release: exit %d %s", code, out)
	}
}
