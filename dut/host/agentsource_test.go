package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestAgentSourceWithoutToolchainUsesPrebuilt(t *testing.T) {
	dir := t.TempDir()
	noGo := filepath.Join(dir, "no-such-go")
	ctx := context.Background()

	_, err := AgentSource{Go: noGo}.Binary(ctx, "arm64")
	if err == nil || !strings.Contains(err.Error(), "no Go toolchain") || !strings.Contains(err.Error(), "hostagent_arm64") {
		t.Fatalf("neither toolchain nor prebuilt: %v", err)
	}
	pre := filepath.Join(dir, "hostagent-arm64")
	os.WriteFile(pre, elfHeader(183), 0o755)
	b, err := AgentSource{Go: noGo, Prebuilt: map[string]string{"arm64": pre}, Version: "1.2.3"}.Binary(ctx, "arm64")
	if err != nil || b.Path != pre || b.Version != "1.2.3" {
		t.Fatalf("prebuilt: %+v %v", b, err)
	}
	_, err = AgentSource{Go: noGo, Prebuilt: map[string]string{"arm64": filepath.Join(dir, "missing")}}.Binary(ctx, "arm64")
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing prebuilt: %v", err)
	}

	// A module without the hostagent's source cannot build it either.
	mod := filepath.Join(dir, "mod")
	os.MkdirAll(mod, 0o755)
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module testbed\n\ngo 1.22\n"), 0o644)
	_, err = AgentSource{ModuleDir: mod, Prebuilt: map[string]string{}}.Binary(ctx, "amd64")
	if err == nil || !strings.Contains(err.Error(), "no cmd/hostagent") || !strings.Contains(err.Error(), "hostagent_amd64") {
		t.Fatalf("module without cmd/hostagent: %v", err)
	}
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/other\n"), 0o644)
	if _, err := (AgentSource{ModuleDir: mod}).Binary(ctx, "amd64"); err == nil || !strings.Contains(err.Error(), `"example.com/other"`) {
		t.Fatalf("another module: %v", err)
	}
}

func TestGOARCHAndELF(t *testing.T) {
	for m, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386", "ppc64le": "ppc64le", "riscv64": "riscv64", "sparc64": ""} {
		if got, ok := GOARCH(m); got != want || ok != (want != "") {
			t.Errorf("GOARCH(%q) = %q %v, want %q", m, got, ok, want)
		}
	}
	for machine, want := range map[uint16]string{62: "amd64", 183: "arm64", 3: "386"} {
		if got, isELF, err := elfGOARCH(elfHeader(machine)); got != want || !isELF || err != nil {
			t.Errorf("ELF machine %d: %q %v %v, want %q", machine, got, isELF, err, want)
		}
	}
	if _, isELF, _ := elfGOARCH([]byte("#!/bin/sh\n")); isELF {
		t.Error("a script taken for ELF")
	}
	if _, isELF, err := elfGOARCH([]byte("\x7fELF\x02")); !isELF || err == nil {
		t.Error("a truncated ELF file accepted")
	}
}

// moduleRoot is the testbed module this test runs in.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	root := filepath.Join(wd, "..", "..")
	if err := isAgentModule(root); err != nil {
		t.Skipf("the hostagent cannot be built here: %v", err)
	}
	return root
}

// tinyModule is a module named testbed whose hostagent only prints its
// version: enough to build, cache and run, quickly and apart from the
// real agent's source.
func tinyModule(t *testing.T, version string) string {
	t.Helper()
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":                 "module testbed\n\ngo 1.22\n",
		"hostagent/doc.go":       "package hostagent\n\n// Version is the agent's version.\nconst Version = \"" + version + "\"\n",
		"cmd/hostagent/main.go":  "package main\n\nimport (\n\t\"os\"\n\n\t\"testbed/hostagent\"\n)\n\nfunc main() { os.Stdout.WriteString(\"hostagent \" + hostagent.Version + \"\\n\") }\n",
		"cmd/hostagent/extra.go": "package main\n",
	}
	for name, body := range files {
		p := filepath.Join(mod, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return mod
}

func TestAgentSourceBuildsAndCaches(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain")
	}
	mod := tinyModule(t, "0.4.2")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src := AgentSource{ModuleDir: mod, CacheDir: t.TempDir(), Prebuilt: map[string]string{runtime.GOARCH: "/nonexistent"}}
	b, err := src.Binary(ctx, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	if arch, isELF, err := elfGOARCH(b.Data); arch != runtime.GOARCH || !isELF || err != nil {
		t.Fatalf("built %q %v %v", arch, isELF, err)
	}
	if b.Version != "0.4.2" || b.Path != filepath.Join(src.CacheDir, "0.4.2", runtime.GOARCH, "hostagent") {
		t.Fatalf("built %s, version %q", b.Path, b.Version)
	}
	if out, err := exec.Command(b.Path).Output(); err != nil || string(out) != "hostagent 0.4.2\n" {
		t.Fatalf("the built binary says %q %v", out, err)
	}
	fi, _ := os.Stat(b.Path)
	b2, err := src.Binary(ctx, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(b2.Path); b2.Path != b.Path || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatal("the second call rebuilt instead of using the cache")
	}
	// A changed source file invalidates the cache entry.
	os.WriteFile(filepath.Join(mod, "cmd", "hostagent", "extra.go"), []byte("package main\n\n// changed\n"), 0o644)
	if _, err := src.Binary(ctx, runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	if fi3, _ := os.Stat(b.Path); fi3.ModTime().Equal(fi.ModTime()) {
		t.Fatal("a stale cache entry was used")
	}
	// A build that fails says so (and does not fall back to a prebuilt).
	os.WriteFile(filepath.Join(mod, "cmd", "hostagent", "extra.go"), []byte("package main\n\nfunc broken( {\n"), 0o644)
	if _, err := src.Binary(ctx, runtime.GOARCH); err == nil || !strings.Contains(err.Error(), "go build ./cmd/hostagent") {
		t.Fatalf("broken source: %v", err)
	}
}

// TestRealHostagent installs the hostagent built from this module through
// the driver and talks to it through the forwarded channel.
func TestRealHostagent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hostagent")
	}
	root := moduleRoot(t)
	d := startSSHD(t)
	h := d.open(t, "h1", func(o *Options) { o.Agent = AgentSource{ModuleDir: root, CacheDir: filepath.Join(d.Dir, "cache")} })
	killAgentAtCleanup(t, h, d.Home)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, in, err := h.EnsureAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := sourceVersion(root)
	if !in.Replaced || in.Version != want || !a.Started {
		t.Fatalf("install %+v, agent %+v", in, a)
	}
	if v := getVersion(t, a); v != want {
		t.Fatalf("the agent says version %q, want %q", v, want)
	}
	// Again from a new driver with the same binary: nothing replaced,
	// the running agent used.
	h2 := d.open(t, "h1-again")
	in2, err := h2.InstallAgent(ctx, AgentBinary{Path: filepath.Join(d.Dir, "cache", want, in.GOARCH, "hostagent"), Version: want})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := h2.StartAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in2.Replaced || a2.Started || a2.Addr != a.Addr {
		t.Fatalf("second ensure: %+v %+v", in2, a2)
	}
}
