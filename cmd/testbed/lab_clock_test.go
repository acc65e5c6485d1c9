package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// lab up --clock takes sim or real, and real does not go with another
// time scale.
func TestLabUpClockFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clock", "wall"}, `--clock "wall": expected sim or real`},
		{[]string{"--clock", "real", "--time-scale", "50"}, "--clock real runs the traffic generator at 1 simulated second per second; --time-scale 50"},
	} {
		args := append([]string{"lab", "up", "--inventory-out", filepath.Join(dir, "lab.yaml")}, c.args...)
		code, _, errOut := testbedRun(t, args...)
		if code != exitBadInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %s; want %q", c.args, code, errOut, c.want)
		}
	}
}
