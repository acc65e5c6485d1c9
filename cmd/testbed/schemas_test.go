package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"testbed/inventory"

	"go.yaml.in/yaml/v3"
)

// debianPython is Debian's interpreter, where python3-pandas and
// python3-jsonschema install (.ci/run installs them); the test skips,
// saying why, where they are missing.
func debianPython(t *testing.T, modules ...string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s missing (Debian: apt-get install python3 %s)", py, strings.Join(debs(modules), " "))
	}
	for _, m := range modules {
		if out, err := exec.Command(py, "-c", "import "+m).CombinedOutput(); err != nil {
			t.Skipf("%s cannot import %s (Debian: apt-get install %s): %s", py, m, strings.Join(debs(modules), " "), out)
		}
	}
	return py
}

func debs(modules []string) []string {
	var out []string
	for _, m := range modules {
		out = append(out, "python3-"+m)
	}
	return out
}

// The JSON Schemas of docs/schemas hold the files they describe: every
// built-in bench as an inventory, and a real run's manifest, summary and
// data package (checked with the jsonschema package, not by us).
func TestSchemasHoldRealFiles(t *testing.T) {
	py := debianPython(t, "jsonschema")
	docs, _ := filepath.Abs(filepath.Join("..", "..", "docs"))
	dir := t.TempDir()
	benches, _ := filepath.Glob(filepath.Join("..", "..", "simlab", "benches", "*.yaml"))
	if len(benches) == 0 {
		t.Fatal("no bench files")
	}
	var invs []string
	for _, b := range benches {
		raw, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		j, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(b)+".json")
		os.WriteFile(p, j, 0o644)
		invs = append(invs, p)
	}
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "run", "rail-topology", "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("rail-topology: exit %d: %s", code, errOut)
	}
	bundle := lastLine(out)
	validate := func(schema string, files ...string) {
		t.Helper()
		cmd := exec.Command(py, filepath.Join(docs, "examples", "validate.py"), filepath.Join(docs, "schemas", schema))
		cmd.Args = append(cmd.Args, files...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", schema, err, out)
		}
	}
	validate("inventory.schema.json", invs...)
	validate("manifest.schema.json", filepath.Join(bundle, "manifest.json"))
	validate("summary.schema.json", filepath.Join(bundle, "summary.json"))
	validate("datapackage.schema.json", filepath.Join(bundle, "datapackage.json"))

	// And they can fail: a device without its kind, a summary key with a space.
	bad := filepath.Join(dir, "bad-inventory.json")
	os.WriteFile(bad, []byte(`{"version": 1, "name": "x", "devices": {"voa1": {"driver": "keysight-n77xx", "address": "tcp://127.0.0.1:5025"}}}`), 0o644)
	badSum := filepath.Join(dir, "bad-summary.json")
	os.WriteFile(badSum, []byte(`{"cases": {"25G none 64B": {"jitter_ns": 1}}}`), 0o644)
	for schema, f := range map[string]string{"inventory.schema.json": bad, "summary.schema.json": badSum} {
		if out, err := exec.Command(py, filepath.Join(docs, "examples", "validate.py"), filepath.Join(docs, "schemas", schema), f).CombinedOutput(); err == nil {
			t.Errorf("%s accepted %s:\n%s", schema, f, out)
		}
	}
}

// The guide's pandas example is docs/examples/load_bundle.py, verbatim,
// and it loads a real bundle: every table typed, the summary's metrics.
func TestPandasExampleLoadsABundle(t *testing.T) {
	docs, _ := filepath.Abs(filepath.Join("..", "..", "docs"))
	example, err := os.ReadFile(filepath.Join(docs, "examples", "load_bundle.py"))
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(docs, "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guide), "```python\n"+string(example)+"```\n") {
		t.Errorf("docs/guide.md does not show docs/examples/load_bundle.py verbatim in a ```python block")
	}
	py := debianPython(t, "pandas")
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "run", "rail-topology", "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("rail-topology: exit %d: %s", code, errOut)
	}
	got, err := exec.Command(py, filepath.Join(docs, "examples", "load_bundle.py"), lastLine(out)).CombinedOutput()
	if err != nil {
		t.Fatalf("load_bundle.py: %v\n%s", err, got)
	}
	for _, want := range []string{"table links: 12 rows", "lper_ab [float64]", "table class-links: 36 rows", "kept [boolean]", "frames_ab [Int64]", "summary: 55 metrics", "tors = 4"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("load_bundle.py's output lacks %q:\n%s", want, got)
		}
	}
}

// The inventory schema's kinds are the inventory's: an editor checking
// against it must not call a kind the tool accepts an error (kind fabric
// was once added to the one and not the other; the schema test above
// needs Python and skips without it, this one does not).
func TestInventorySchemaKindsAreTheInventorys(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "schemas", "inventory.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs struct {
			Device struct {
				Properties struct {
					Kind struct {
						Enum []string `json:"enum"`
					} `json:"kind"`
				} `json:"properties"`
			} `json:"device"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	got, want := s.Defs.Device.Properties.Kind.Enum, inventory.Kinds()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("docs/schemas/inventory.schema.json: device kinds %v, the inventory's are %v", got, want)
	}
}
