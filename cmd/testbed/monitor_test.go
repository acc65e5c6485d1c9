package main

import (
	"context"
	"strconv"
	"time"

	"strings"
	"testbed/dut/tofino"
	"testbed/orchestrator"
	"testing"
)

// `testbed monitor` against a running simulated lab: it opens the switches
// over SSH, polls every switch link's counters and, the links being idle,
// decides nothing; it refuses to serve on a non-loopback address.
func TestMonitorDryRunOnIdleLab(t *testing.T) {
	lab, inv := startLab(t, 21)
	_, state := dirs(t)
	// The lab's switches run their programs, as a monitored lab's do: the
	// monitor never restarts switchd.
	if code, _, errOut := testbedRun(t, "switch", "deploy", "sw1", "sw2", "--inventory", inv, "--state-dir", state); code != exitOK {
		t.Fatalf("deploy: exit %d: %s", code, errOut)
	}
	// Before any program runs the monitor says so once, and how to load
	// them; each port's failing read is warned about once, not every poll.
	_, _, once := testbedRun(t, "monitor", "--inventory", inv, "--dry-run", "--polls", "1", "--interval", "20ms", "--metrics-addr", "")
	_, _, thrice := testbedRun(t, "monitor", "--inventory", inv, "--dry-run", "--polls", "3", "--interval", "20ms", "--metrics-addr", "")
	if strings.Count(thrice, "run no P4 program yet") != 1 || !strings.Contains(thrice, "testbed exp run loss-sweep --inventory "+inv) {
		t.Errorf("programs not loaded, not said once with the way to load them:\n%s", thrice)
	}
	if n1, n3 := strings.Count(once, "counter read failed"), strings.Count(thrice, "counter read failed"); n1 == 0 || n3 != n1 {
		t.Errorf("warnings: %d after one poll, %d after three:\n%s", n1, n3, thrice)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, prog := range map[string]string{"sw1": "sender", "sw2": "receiver"} {
		d, _ := lab.Inventory().Device(name)
		od, err := orchestrator.OpenDevice(ctx, d, nil)
		if err != nil {
			t.Fatal(err)
		}
		sw := od.Driver.(*tofino.Switch)
		err = sw.StartSwitchd(ctx, prog)
		for port, gbps := range map[string]int{"p1": 100, "p2": 25} { // lg100, lg25
			if err == nil {
				n, _ := strconv.Atoi(d.Ports[port])
				err = sw.AddPort(ctx, n, gbps, "none")
			}
		}
		sw.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	code, out, errOut := testbedRun(t, "monitor", "--inventory", inv, "--dry-run", "--polls", "3", "--interval", "20ms", "--metrics-addr", "")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut, "read failed") {
		t.Fatalf("counters not read: %s", errOut)
	}
	if strings.TrimSpace(out) != "" {
		t.Fatalf("idle links gave decisions: %s", out)
	}
	if code, _, errOut := testbedRun(t, "monitor", "--inventory", inv, "--dry-run", "--metrics-addr", "0.0.0.0:0"); code != exitBadInput || !strings.Contains(errOut, "loopback") {
		t.Fatalf("non-loopback metrics: exit %d, %s", code, errOut)
	}
}
