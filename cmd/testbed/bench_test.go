package main

import (
	"path/filepath"
	"strings"
	"testing"

	"testbed/results"
)

// exp run --bench runs on a built-in bench other than the default, and a
// rerun of its bundle starts that bench again: the seeded run reproduces.
func TestRunAndRerunOnABench(t *testing.T) {
	t.Parallel()
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "run", "rail-stretch", "--bench", "rail-stretch", "--seed", "5",
		"--set", "seconds=0.02", "--set", "margin_step_db=0", "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	orig := lastLine(out)
	var a results.Manifest
	readJSON(t, filepath.Join(orig, "manifest.json"), &a)
	if a.Lab.Name != "rail-stretch" || !a.Lab.Simulated {
		t.Fatalf("ran on lab %q (simulated %v)", a.Lab.Name, a.Lab.Simulated)
	}
	code, out, errOut = testbedRun(t, "exp", "rerun", orig, "--runs-dir", runs, "--state-dir", state)
	if code != exitOK || !strings.Contains(errOut, "built-in bench rail-stretch") {
		t.Fatalf("rerun: exit %d\n%s", code, errOut)
	}
	code, out, errOut = testbedRun(t, "results", "diff", orig, lastLine(out))
	if code != exitOK || !strings.Contains(out, "IDENTICAL") {
		t.Errorf("rerun did not reproduce: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := testbedRun(t, "exp", "run", "rail-stretch", "--bench", "nope", "--runs-dir", runs, "--state-dir", state); code != exitBadInput || !strings.Contains(errOut, `no built-in bench "nope"`) {
		t.Errorf("unknown bench: exit %d\n%s", code, errOut)
	}
}
