package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// An inventory with an option key its device's driver does not take
// (line 9, column 7), and a device whose driver this build lacks (which
// a twin leaves out, and every other command refuses).
const typoLab = `version: 1
name: t
devices:
  voa1:
    kind: voa
    driver: ozoptics-dd100
    address: "serial:///dev/ttyUSB0"
    options:
      travel_tme: 30s
  sw1:
    kind: switch
    driver: tofino-bfrt
    address: "ssh://root@127.0.0.1:1"
`

// The commands with an --inventory flag that only look names and
// addresses up in it (or, lab fault, the control address in its header)
// and open no device: a driver's option does nothing there, and a lab's
// leases must be listable and releasable whatever its file says.
var inventoryNotRunHere = map[string]bool{
	"testbed lab fault":          true,
	"testbed lab leases":         true,
	"testbed lab leases release": true,
	"testbed serve":              true,
	"testbed exp rerun":          true, // runs through exp run's check: TestRerunChecksTheInventory
}

// Every command that opens the devices of an --inventory file (or starts
// their emulators) refuses an option key the device's driver does not
// take before it opens anything, at the key's line (exit 2), as a run
// does. Each command with an --inventory flag is either run here or
// named in inventoryNotRunHere, so a new one is looked at.
func TestCommandsThatOpenDevicesCheckTheInventory(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "lab.yaml")
	if err := os.WriteFile(inv, []byte(typoLab), 0o600); err != nil {
		t.Fatal(err)
	}
	runs, state := dirs(t)
	twin := filepath.Join(dir, "twin.yaml")
	cases := map[string][]string{
		"testbed exp run":       {"exp", "run", "attenuation-sweep", "--runs-dir", runs},
		"testbed lab up":        {"lab", "up", "--inventory-out", twin},
		"testbed lab recover":   {"lab", "recover"},
		"testbed monitor":       {"monitor", "--polls", "1"},
		"testbed switch deploy": {"switch", "deploy", "sw1"},
		"testbed voa home":      {"voa", "home", "voa1"},
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.LocalFlags().Lookup("inventory") != nil && cases[c.CommandPath()] == nil && !inventoryNotRunHere[c.CommandPath()] {
			t.Errorf("%s takes --inventory: check it as a run does (checkedInventory) and add it here, or name it in inventoryNotRunHere", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	for path, args := range cases {
		// A command that goes past the check (lab up serves its twin
		// until interrupted) is stopped by the deadline and fails.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var o, e bytes.Buffer
		code := run(ctx, append(args, "--inventory", inv, "--state-dir", state), &o, &e)
		cancel()
		errOut := e.String()
		if code != exitBadInput || !strings.Contains(errOut, "lab.yaml:9:7: devices.voa1.options.travel_tme: unknown option") {
			t.Errorf("%s: exit %d, %s; want exit %d naming lab.yaml:9:7", path, code, errOut, exitBadInput)
		}
	}
	if _, err := os.Stat(twin); err == nil {
		t.Error("lab up wrote a twin's inventory for a refused inventory")
	}
}
