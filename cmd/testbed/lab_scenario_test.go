package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lab up refuses a scenario naming a link the lab lacks, or a bad value,
// with the file and line.
func TestLabUpScenarioErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"name: x\nimpairments:\n  - kind: dirty_connector\n    link: lg99\n    start: 1m\n    step_db: 2\n", "bad.yaml:3: link \"lg99\" is not a fibre between two switches of this lab"},
		{"name: x\nimpairments:\n  - kind: voa_drift\n    link: lg25\n    db_per_hour: -1\n", "bad.yaml:3: voa_drift needs db_per_hour > 0"},
	} {
		f := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(f, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := testbedRun(t, "lab", "up", "--scenario", f, "--inventory-out", filepath.Join(dir, "lab.yaml"))
		if code != exitBadInput || !strings.Contains(errOut, c.want) {
			t.Errorf("exit %d, %s; want %q", code, errOut, c.want)
		}
	}
}
