package main

import (
	"encoding/json"
	"fmt"
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
// saying why, where it is missing.
func debianPython(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s missing (Debian: apt-get install python3)", py)
	}
	return py
}

// skipWithout skips the test, saying why, where py cannot import one of
// modules: asked only once an example failed (an import of pandas alone
// costs the interpreter the better part of a second of CPU).
func skipWithout(t *testing.T, py string, modules ...string) {
	t.Helper()
	for _, m := range modules {
		if out, err := exec.Command(py, "-c", "import "+m).CombinedOutput(); err != nil {
			t.Skipf("%s cannot import %s (Debian: apt-get install %s): %s", py, m, strings.Join(debs(modules), " "), out)
		}
	}
}

// runScripts runs each argument list (a script and its arguments) as
// python runs a script, one after the other in one interpreter, so that
// their imports load once, and returns each one's output and exit code.
// A script that fails to load (an import missing) fails the whole: err.
func runScripts(py string, argvs [][]string) (outs []string, codes []int, all []byte, err error) {
	const sep = "\x1eexit " // after each script's output: ASCII's record separator
	driver := `import json, runpy, sys
for argv in json.loads(sys.argv[1]):
    sys.argv = argv
    try:
        runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as e:
        code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write("` + sep + `%d\n" % code)
    sys.stdout.flush()
`
	j, err := json.Marshal(argvs)
	if err != nil {
		return nil, nil, nil, err
	}
	all, err = exec.Command(py, "-c", driver, string(j)).CombinedOutput()
	if err != nil {
		return nil, nil, all, err
	}
	rest := string(all)
	for range argvs {
		i := strings.Index(rest, sep)
		if i < 0 {
			return nil, nil, all, fmt.Errorf("%d of %d scripts ran", len(outs), len(argvs))
		}
		var code int
		if _, err := fmt.Sscanf(rest[i+len(sep):], "%d\n", &code); err != nil {
			return nil, nil, all, err
		}
		outs, codes = append(outs, rest[:i]), append(codes, code)
		rest = rest[i+len(sep):]
		rest = rest[strings.Index(rest, "\n")+1:]
	}
	return outs, codes, all, nil
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
	py := debianPython(t)
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
	// The checks run in one interpreter (jsonschema loads once), each as
	// python runs the script; the last two must fail: a device without
	// its kind, a summary key with a space.
	bad := filepath.Join(dir, "bad-inventory.json")
	os.WriteFile(bad, []byte(`{"version": 1, "name": "x", "devices": {"voa1": {"driver": "keysight-n77xx", "address": "tcp://127.0.0.1:5025"}}}`), 0o644)
	badSum := filepath.Join(dir, "bad-summary.json")
	os.WriteFile(badSum, []byte(`{"cases": {"25G none 64B": {"jitter_ns": 1}}}`), 0o644)
	validate := filepath.Join(docs, "examples", "validate.py")
	checks := []struct {
		schema string
		files  []string
		ok     bool
	}{
		{"inventory.schema.json", invs, true},
		{"manifest.schema.json", []string{filepath.Join(bundle, "manifest.json")}, true},
		{"summary.schema.json", []string{filepath.Join(bundle, "summary.json")}, true},
		{"datapackage.schema.json", []string{filepath.Join(bundle, "datapackage.json")}, true},
		{"inventory.schema.json", []string{bad}, false},
		{"summary.schema.json", []string{badSum}, false},
	}
	var argvs [][]string
	for _, c := range checks {
		argvs = append(argvs, append([]string{validate, filepath.Join(docs, "schemas", c.schema)}, c.files...))
	}
	outs, codes, all, err := runScripts(py, argvs)
	if err != nil {
		skipWithout(t, py, "jsonschema")
		t.Fatalf("validate.py: %v\n%s", err, all)
	}
	for i, c := range checks {
		switch {
		case c.ok && codes[i] != 0:
			t.Errorf("%s: exit %d\n%s", c.schema, codes[i], outs[i])
		case !c.ok && codes[i] == 0:
			t.Errorf("%s accepted %s:\n%s", c.schema, c.files[0], outs[i])
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
	py := debianPython(t)
	runs, state := dirs(t)
	code, out, errOut := testbedRun(t, "exp", "run", "rail-topology", "--runs-dir", runs, "--state-dir", state)
	if code != exitOK {
		t.Fatalf("rail-topology: exit %d: %s", code, errOut)
	}
	got, err := exec.Command(py, filepath.Join(docs, "examples", "load_bundle.py"), lastLine(out)).CombinedOutput()
	if err != nil {
		skipWithout(t, py, "pandas")
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
