package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/orchestrator"
)

// `testbed switch deploy` against a running simulated lab: both programs
// on both switches, checked by hash; a non-switch device and a held lease
// are refused with the right exit codes.
func TestSwitchDeploy(t *testing.T) {
	lab, inv := startLab(t, 8)
	_, state := dirs(t)
	code, out, errOut := testbedRun(t, "switch", "deploy", "sw1", "sw2", "--inventory", inv, "--state-dir", state, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []struct {
		Switch, Program, Conf, Error string
		SourceSHA256                 string `json:"source_sha256"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 4 {
		t.Fatalf("rows: %+v", rows)
	}
	for _, r := range rows {
		if r.Error != "" || !strings.HasSuffix(r.Conf, "/"+r.Program+".conf") || len(r.SourceSHA256) != 64 || r.SourceSHA256 != rows[0].SourceSHA256 {
			t.Errorf("%+v", r)
		}
	}
	if code, _, errOut := testbedRun(t, "switch", "deploy", "voa1", "--inventory", inv, "--state-dir", state); code != exitBadInput || !strings.Contains(errOut, "not a switch") {
		t.Errorf("deploy on a VOA: exit %d, %s", code, errOut)
	}
	if code, _, errOut := testbedRun(t, "switch", "deploy", "sw1", "--program", "router", "--inventory", inv, "--state-dir", state); code != exitBadInput || !strings.Contains(errOut, "expected sender, receiver, timestamp, stardust_fa, stardust_fe or ecmp") {
		t.Errorf("unknown program: exit %d, %s", code, errOut)
	}
	code, out, errOut = testbedRun(t, "switch", "deploy", "sw1", "--program", "timestamp", "--inventory", inv, "--state-dir", state, "-o", "json")
	if code != exitOK || !strings.Contains(out, "/timestamp.conf") {
		t.Errorf("deploy timestamp: exit %d, %s %s", code, out, errOut)
	}
	code, out, errOut = testbedRun(t, "switch", "deploy", "sw1", "--program", "stardust_fa,stardust_fe", "--inventory", inv, "--state-dir", state, "-o", "json")
	if code != exitOK || !strings.Contains(out, "/stardust_fa.conf") || !strings.Contains(out, "/stardust_fe.conf") {
		t.Errorf("deploy stardust: exit %d, %s %s", code, out, errOut)
	}
	code, out, errOut = testbedRun(t, "switch", "deploy", "sw1", "--program", "ecmp", "--inventory", inv, "--state-dir", state, "-o", "json")
	if code != exitOK || !strings.Contains(out, "/ecmp.conf") {
		t.Errorf("deploy ecmp: exit %d, %s %s", code, out, errOut)
	}
	d, _ := lab.Inventory().Device("sw2")
	held, err := orchestrator.NewLeaser(state, time.Hour, nil).Acquire(lab.Inventory().Name, "someone-else", "run-x", []orchestrator.LeaseTarget{{Device: "sw2", Address: d.Address}})
	if err != nil {
		t.Fatal(err)
	}
	defer orchestrator.NewLeaser(state, time.Hour, nil).Release(held)
	if code, _, errOut := testbedRun(t, "switch", "deploy", "sw2", "--inventory", inv, "--state-dir", state); code != exitInfra || !strings.Contains(errOut, "someone-else") {
		t.Errorf("held lease: exit %d, %s", code, errOut)
	}
}

// A deploy checks its inventory's drivers before it opens anything: an
// option key the switch's driver does not take is refused at its line,
// as a run and `inventory check` refuse it (the address is never dialled).
func TestSwitchDeployChecksTheInventory(t *testing.T) {
	_, state := dirs(t)
	inv := filepath.Join(t.TempDir(), "lab.yaml")
	const text = `version: 1
name: t
devices:
  sw1:
    kind: switch
    driver: tofino-bfrt
    address: "ssh://root@127.0.0.1:1"
    options:
      start_timout: 3m
`
	if err := os.WriteFile(inv, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := testbedRun(t, "switch", "deploy", "sw1", "--inventory", inv, "--state-dir", state)
	if code != exitBadInput || !strings.Contains(errOut, "lab.yaml:9:7") || !strings.Contains(errOut, `unknown option "start_timout"`) {
		t.Errorf("exit %d, %s; want exit %d naming lab.yaml:9:7 and the unknown option", code, errOut, exitBadInput)
	}
}
