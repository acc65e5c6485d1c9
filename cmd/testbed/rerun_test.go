package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/results"
)

func TestRerunReproducesSeededSweep(t *testing.T) {
	t.Parallel()
	orig := sweepBundle(t, "13")
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "rerun", orig, "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("rerun: exit %d\n%s", code, errOut)
	}
	rerun := lastLine(out)
	if !strings.HasPrefix(rerun, runs) {
		t.Fatalf("last line %q is not the new bundle", rerun)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("a rerun by the same build warns:\n%s", errOut)
	}
	var a, b results.Manifest
	readJSON(t, filepath.Join(orig, "manifest.json"), &a)
	readJSON(t, filepath.Join(rerun, "manifest.json"), &b)
	if b.Seed != 13 || b.Recipe != a.Recipe || b.Labels[LabelRerunOf] != a.RunID || !b.Lab.Simulated {
		t.Errorf("rerun manifest: seed %d recipe %+v labels %v simulated %v", b.Seed, b.Recipe, b.Labels, b.Lab.Simulated)
	}
	if b.RunID == a.RunID {
		t.Errorf("the rerun reused the run id")
	}

	// results diff: every metric within tolerance (here: equal), and the
	// provenance the same.
	code, out, errOut = testbedRun(t, "results", "diff", orig, rerun, "--output", "json")
	if code != exitOK {
		t.Fatalf("diff: exit %d\n%s\n%s", code, out, errOut)
	}
	var d results.DiffReport
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if !d.Identical || len(d.Metrics) == 0 {
		t.Errorf("rerun did not reproduce: identical %v, %d metrics", d.Identical, len(d.Metrics))
	}
	for _, m := range d.Metrics {
		if m.Changed() {
			t.Errorf("metric %s: %v -> %v (%s)", m.Path, m.A, m.B, m.Status)
		}
	}
	for _, p := range d.ProvenanceChanged() {
		t.Errorf("provenance %s: %q -> %q", p.Field, p.A, p.B)
	}

	// The packed archive reruns the same.
	archive := filepath.Join(t.TempDir(), "orig.tar.gz")
	if code, _, errOut := testbedRun(t, "results", "pack", orig, "--out", archive); code != exitOK {
		t.Fatalf("pack: %s", errOut)
	}
	code, out, errOut = testbedRun(t, "exp", "rerun", archive, "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("rerun of the archive: exit %d\n%s", code, errOut)
	}
	if code, out, _ := testbedRun(t, "results", "diff", orig, lastLine(out)); code != exitOK || !strings.Contains(out, "IDENTICAL") {
		t.Errorf("archive rerun differs: exit %d\n%s", code, out)
	}
}

// copyBundle copies a bundle directory so a test may edit its manifest.
func copyBundle(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// editManifest changes a bundle's manifest and, like an author editing a
// bundle on purpose, its line of SHA256SUMS, so that the bundle verifies.
func editManifest(t *testing.T, dir string, fn func(m map[string]any)) {
	t.Helper()
	tamperManifest(t, dir, fn)
	sums := filepath.Join(dir, "SHA256SUMS")
	old, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	h := sha256.Sum256(d)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(old), "\n"), "\n") {
		if strings.HasSuffix(l, "  manifest.json") {
			l = hex.EncodeToString(h[:]) + "  manifest.json"
		}
		out = append(out, l)
	}
	if err := os.WriteFile(sums, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tamperManifest changes a bundle's manifest only: it no longer verifies.
func tamperManifest(t *testing.T, dir string, fn func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "manifest.json")
	var m map[string]any
	readJSON(t, p, &m)
	fn(m)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRerunWarnsOfAnotherRecipeVersion(t *testing.T) {
	orig := sweepBundle(t, "14")
	old := copyBundle(t, orig)
	editManifest(t, old, func(m map[string]any) {
		m["recipe"].(map[string]any)["version"] = "0.9.0"
		// A parameter this version no longer has.
		m["params"] = append(m["params"].([]any), map[string]any{"name": "legacy_knob", "value": 3.0, "type": "float", "source": "set"})
	})
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "rerun", old, "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("rerun: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"warning: the bundle ran attenuation-sweep v0.9.0; this build has v", "warning: parameter legacy_knob = 3 is not a parameter"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	var m results.Manifest
	readJSON(t, filepath.Join(lastLine(out), "manifest.json"), &m)
	if m.Recipe.Version == "0.9.0" {
		t.Errorf("the rerun claims the old recipe version")
	}

	// A recipe this build does not have: nothing runs.
	editManifest(t, old, func(m map[string]any) { m["recipe"].(map[string]any)["name"] = "retired-recipe" })
	code, _, errOut = testbedRun(t, "exp", "rerun", old, "--runs-dir", runs, "--state-dir", state)
	if code != exitBadInput || !strings.Contains(errOut, `"retired-recipe"`) {
		t.Errorf("unknown recipe: exit %d: %s", code, errOut)
	}
	// A real lab's bundle whose inventory file is gone.
	editManifest(t, old, func(m map[string]any) {
		m["recipe"].(map[string]any)["name"] = "attenuation-sweep"
		lab := m["lab"].(map[string]any)
		lab["simulated"], lab["name"], lab["inventory_path"] = false, "bench-3", filepath.Join(t.TempDir(), "gone.yaml")
	})
	t.Setenv("TESTBED_INVENTORY", "")
	code, _, errOut = testbedRun(t, "exp", "rerun", old, "--runs-dir", runs, "--state-dir", state)
	if code != exitBadInput || !strings.Contains(errOut, "give --inventory") || !strings.Contains(errOut, "bench-3") {
		t.Errorf("missing inventory: exit %d: %s", code, errOut)
	}
}

func TestRerunVerifiesTheBundleAndItsInventoryPath(t *testing.T) {
	orig := sweepBundle(t, "15")
	runs, state := dirs(t)
	t.Setenv("TESTBED_INVENTORY", "")

	// A tampered bundle is refused before anything runs.
	bad := copyBundle(t, orig)
	tamperManifest(t, bad, func(m map[string]any) { m["seed"] = 16.0 })
	code, out, errOut := testbedRun(t, "exp", "rerun", bad, "--runs-dir", runs, "--state-dir", state)
	if code != exitFailed || !strings.Contains(errOut, "does not verify") || !strings.Contains(errOut, "changed: manifest.json") || out != "" {
		t.Errorf("tampered bundle: exit %d\n%s\n%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(runs); len(entries) != 0 {
		t.Errorf("a tampered bundle was rerun: %d bundles", len(entries))
	}
	// Another file than the manifest, the same.
	bad = copyBundle(t, orig)
	os.WriteFile(filepath.Join(bad, "summary.json"), []byte("{}\n"), 0o644)
	if code, _, errOut := testbedRun(t, "exp", "rerun", bad, "--runs-dir", runs, "--state-dir", state); code != exitFailed || !strings.Contains(errOut, "changed: summary.json") {
		t.Errorf("tampered summary: exit %d: %s", code, errOut)
	}

	// A bundle never finalized (its run crashed) verifies as incomplete
	// only: it reruns, with a warning.
	crashed := copyBundle(t, orig)
	os.Remove(filepath.Join(crashed, "SHA256SUMS"))
	code, out, errOut = testbedRun(t, "exp", "rerun", crashed, "--runs-dir", runs, "--state-dir", state)
	if code != exitOK || !strings.Contains(errOut, "never finalized") {
		t.Errorf("crashed bundle: exit %d\n%s", code, errOut)
	}

	// A bundle beyond a read limit: bad input, naming the flag.
	code, _, errOut = testbedRun(t, "exp", "rerun", orig, "--runs-dir", runs, "--state-dir", state, "--max-entries", "3")
	if code != exitBadInput || !strings.Contains(errOut, "--max-entries") {
		t.Errorf("over the limit: exit %d: %s", code, errOut)
	}

	// A real lab's bundle names an inventory file: not used unless asked.
	real := copyBundle(t, orig)
	invPath := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(invPath, []byte("version: 1\nname: planted\ndevices: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	editManifest(t, real, func(m map[string]any) {
		lab := m["lab"].(map[string]any)
		lab["simulated"], lab["name"], lab["inventory_path"] = false, "bench-4", invPath
	})
	code, _, errOut = testbedRun(t, "exp", "rerun", real, "--runs-dir", runs, "--state-dir", state)
	if code != exitBadInput || !strings.Contains(errOut, "--inventory-from-bundle") || !strings.Contains(errOut, invPath) {
		t.Errorf("inventory path from the bundle: exit %d: %s", code, errOut)
	}
	// Asked: that file is read (and here found broken, which says it was).
	code, _, errOut = testbedRun(t, "exp", "rerun", real, "--inventory-from-bundle", "--runs-dir", runs, "--state-dir", state)
	if code != exitBadInput || !strings.Contains(errOut, "lab.yaml") || strings.Contains(errOut, "--inventory-from-bundle") {
		t.Errorf("--inventory-from-bundle: exit %d: %s", code, errOut)
	}
}
