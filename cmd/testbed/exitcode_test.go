package main

import (
	"errors"
	"testing"

	"testbed/experiments/suite"
	"testbed/orchestrator"
	"testbed/results"
)

// A dirty lab exits 6 however the run ended: a script that checks for 6
// must not miss a failed run whose cleanup failed.
func TestDirtyLabExits6WhateverTheStatus(t *testing.T) {
	dirty := []string{"voa1: restore voa1 channel 1: timeout"}
	for _, c := range []struct {
		res  orchestrator.RunResult
		want int
	}{
		{orchestrator.RunResult{Status: results.StatusOK}, exitOK},
		{orchestrator.RunResult{Status: results.StatusFailed, Reason: "loss above bound"}, exitFailed},
		{orchestrator.RunResult{Status: results.StatusFailed, Reason: "infrastructure: x", Err: &orchestrator.InfraError{Op: "x", Err: errors.New("y")}}, exitInfra},
		{orchestrator.RunResult{Status: results.StatusAborted}, exitAborted},
		{orchestrator.RunResult{Status: results.StatusAborted, Unrestored: dirty}, exitNotRestored},
		{orchestrator.RunResult{Status: results.StatusFailed, Reason: "could not restore 1 device setting(s)", Unrestored: dirty}, exitNotRestored},
		{orchestrator.RunResult{Status: results.StatusFailed, Reason: "infrastructure: x", Unrestored: dirty}, exitNotRestored},
	} {
		if got := runExitCode(&c.res); got != c.want {
			t.Errorf("%s %q unrestored %d: exit %d, want %d", c.res.Status, c.res.Reason, len(c.res.Unrestored), got, c.want)
		}
	}
	rep := &suite.Report{Entries: []*suite.EntryResult{{Class: suite.ClassOK}, {Class: suite.ClassFailed, NotRestored: true}, {Class: suite.ClassAborted}}}
	if got := suiteExitCode(rep); got != exitNotRestored {
		t.Errorf("suite with a dirty entry: exit %d, want %d", got, exitNotRestored)
	}
}
