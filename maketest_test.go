package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// scripts/gotest, which make test runs every go test through, keeps each
// test binary and relinks only one whose package or links changed; two
// packages whose binaries share a name (a/x, b/x) go to separate
// directories; every test runs every time; a failure in any group fails
// the whole.
func TestGotestKeepsEachBinaryAndLinksOnlyWhatChanged(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to run scripts/gotest with")
		}
	}
	script, err := filepath.Abs("scripts/gotest")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(mod, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module gt\n\ngo 1.21\n")
	pkgTest := func(pkg, body string) string {
		return "package " + pkg + "\n\nimport \"testing\"\n\nfunc TestIt(t *testing.T) { " + body + " }\n"
	}
	write("a/x/x.go", "package x\n\nconst A = 1\n")
	write("a/x/x_test.go", pkgTest("x", "t.Log(A)"))
	write("b/x/x.go", "package x\n\nconst B = 1\n")
	write("b/x/x_test.go", pkgTest("x", "t.Log(B)"))
	bins := filepath.Join(t.TempDir(), "bin")
	all := []string{"g1/x.test", "g2/x.test"}

	// go test -x prints each command it runs: a test binary run from
	// bins was found up to date there; one linked again runs from go's
	// work directory before it is kept.
	run := func() (string, error) {
		cmd := exec.Command(script, bins, "-count=1", "-vet=off", "-x", "--", "./a/x", "./b/x")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GO="+goBin, "GOFLAGS=", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	kept := func(out string) map[string]bool {
		m := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			for _, rel := range all {
				if strings.HasPrefix(line, filepath.Join(bins, rel)+" -test.") {
					m[rel] = true
				}
			}
		}
		return m
	}
	ranAll := func(out string) {
		t.Helper()
		for _, p := range []string{"gt/a/x", "gt/b/x"} {
			if !strings.Contains(out, "ok  \t"+p+"\t") || strings.Contains(out, p+"\t(cached)") {
				t.Fatalf("%s did not run:\n%s", p, out)
			}
		}
	}

	out, err := run()
	if err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	ranAll(out)
	for _, rel := range all {
		if _, err := os.Stat(filepath.Join(bins, rel)); err != nil {
			t.Fatalf("the first run kept no %s: %v", rel, err)
		}
	}

	out, err = run()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	ranAll(out)
	k := kept(out)
	for _, rel := range all {
		if !k[rel] {
			t.Errorf("%s linked again with nothing changed:\n%s", rel, out)
		}
	}

	// A change to b/x, which makes its test fail: b/x is linked again
	// (not run stale from bins), a/x is not, and the run fails though
	// the first group passed.
	write("b/x/x.go", "package x\n\nconst B = 2\n")
	write("b/x/x_test.go", pkgTest("x", "t.Fatal(B)"))
	out, err = run()
	if err == nil {
		t.Fatalf("a failing test in the second group passed the run:\n%s", out)
	}
	if !strings.Contains(out, "FAIL\tgt/b/x") || !strings.Contains(out, "ok  \tgt/a/x\t") {
		t.Fatalf("the run did not report each group:\n%s", out)
	}
	k = kept(out)
	if k["g2/x.test"] {
		t.Errorf("b/x changed and its kept binary ran:\n%s", out)
	}
	if !k["g1/x.test"] {
		t.Errorf("a/x linked again though only b/x changed:\n%s", out)
	}
}
