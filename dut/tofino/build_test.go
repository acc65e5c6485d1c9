package tofino_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
)

// Building uploads the sources, checks them by hash, installs the program
// under its name, and run_switchd.sh can then start it.
func TestBuildProgramInstallsWhatSwitchdRuns(t *testing.T) {
	lab := startLab(t)
	sw := open(t, lab, "sw1", 20*time.Second)
	ctx := context.Background()
	src := lg.Sources()
	files := map[string][]byte{"lg_test.p4": src[lg.MainFile(lg.ProgramSender)], "common/headers.p4": src["common/headers.p4"]}
	b, err := sw.BuildProgram(ctx, "lg_test", "lg_test.p4", files)
	if err != nil {
		t.Fatal(err)
	}
	if b.SourceSHA256 != tofino.SourceHash(files) || !strings.HasSuffix(b.Conf, "/lg_test.conf") {
		t.Errorf("build: %+v", b)
	}
	if err := sw.StartSwitchd(ctx, "lg_test"); err != nil {
		t.Fatalf("start the built program: %v", err)
	}
	if p, err := sw.Program(ctx); err != nil || p != "lg_test" {
		t.Errorf("switchd runs %q (%v)", p, err)
	}

	// A missing include fails the build with the compiler's message.
	delete(files, "common/headers.p4")
	_, err = sw.BuildProgram(ctx, "lg_broken", "lg_test.p4", files)
	if err == nil || !strings.Contains(err.Error(), `cannot open include file "common/headers.p4"`) {
		t.Errorf("missing include: %v", err)
	}
	if _, err := sw.BuildProgram(ctx, "lg_test", "nope.p4", files); err == nil || !strings.Contains(err.Error(), "not among the sources") {
		t.Errorf("missing main: %v", err)
	}
	if _, err := sw.BuildProgram(ctx, "lg;rm", "lg_test.p4", files); err == nil || !strings.Contains(err.Error(), "program name") {
		t.Errorf("bad name: %v", err)
	}
}

func TestSourcesHoldBothPrograms(t *testing.T) {
	src := lg.Sources()
	for _, p := range []string{lg.MainFile(lg.ProgramSender), lg.MainFile(lg.ProgramReceiver), "common/headers.p4"} {
		if len(src[p]) == 0 {
			t.Errorf("embedded sources lack %s (have %d files)", p, len(src))
		}
	}
}
